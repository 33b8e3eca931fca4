#include "models/llama_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <numbers>

#include "core/input_file.h"
#include "core/json_util.h"

namespace tessera::models {
namespace {

// Bounds that keep every weight matrix's sides and the token ids inside int32.
constexpr int64_t kMaxWidth = int64_t{1} << 20;
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxContext = int64_t{1} << 24;

// Field labels: LlamaConfig members, or the config.json keys they come from.
struct LlamaFieldNames {
  bool hf = false;
  std::string prefix;
  std::string operator()(const char* member, const char* hf_key) const {
    return prefix + (hf ? hf_key : member);
  }
};

core::Status CheckSize(const LlamaFieldNames& n, const char* member, const char* key, int64_t value,
                       int64_t hi) {
  if (value < 1 || value > hi) {
    return core::InvalidArgument(
        fmt::format("{}: got {}, must be in [1, {}]", n(member, key), value, hi));
  }
  return core::Status::Ok();
}

core::Status CheckPositiveFinite(const LlamaFieldNames& n, const char* member, const char* key,
                                 double value) {
  if (!(value > 0.0) || !std::isfinite(value)) {
    return core::InvalidArgument(
        fmt::format("{}: got {}, must be finite and > 0", n(member, key), value));
  }
  return core::Status::Ok();
}

core::Status ValidateRope(const LlamaConfig& c, const LlamaFieldNames& n) {
  RETURN_IF_ERROR(CheckPositiveFinite(n, "rope_theta", "rope_theta", c.rope_theta));
  if (!c.rope_scaling) return core::Status::Ok();
  const LlamaRopeScaling& s = *c.rope_scaling;
  if (!(s.factor >= 1.0) || !std::isfinite(s.factor)) {
    return core::InvalidArgument(fmt::format("{}: got {}, must be finite and >= 1",
                                             n("rope_scaling.factor", "rope_scaling.factor"),
                                             s.factor));
  }
  RETURN_IF_ERROR(CheckPositiveFinite(n, "rope_scaling.low_freq_factor",
                                      "rope_scaling.low_freq_factor", s.low_freq_factor));
  if (!(s.high_freq_factor > s.low_freq_factor) || !std::isfinite(s.high_freq_factor)) {
    return core::InvalidArgument(
        fmt::format("{}: got {}, must be finite and > low_freq_factor {}",
                    n("rope_scaling.high_freq_factor", "rope_scaling.high_freq_factor"),
                    s.high_freq_factor, s.low_freq_factor));
  }
  return CheckSize(n, "rope_scaling.original_max_position_embeddings",
                   "rope_scaling.original_max_position_embeddings",
                   s.original_max_position_embeddings, kMaxContext);
}

core::Status ValidateNamed(const LlamaConfig& c, const LlamaFieldNames& n) {
  RETURN_IF_ERROR(CheckSize(n, "vocab", "vocab_size", c.vocab, kMaxVocab));
  RETURN_IF_ERROR(CheckSize(n, "hidden", "hidden_size", c.hidden, kMaxWidth));
  RETURN_IF_ERROR(CheckSize(n, "num_layers", "num_hidden_layers", c.num_layers, kMaxLayers));
  RETURN_IF_ERROR(CheckSize(n, "num_heads", "num_attention_heads", c.num_heads, 4096));
  RETURN_IF_ERROR(CheckSize(n, "num_kv_heads", "num_key_value_heads", c.num_kv_heads, 4096));
  if (c.num_heads % c.num_kv_heads != 0) {
    return core::InvalidArgument(
        fmt::format("{}: got {}, must divide {} {}", n("num_kv_heads", "num_key_value_heads"),
                    c.num_kv_heads, n.hf ? "num_attention_heads" : "num_heads", c.num_heads));
  }
  RETURN_IF_ERROR(CheckSize(n, "head_dim", "head_dim", c.head_dim, 1024));
  if (c.head_dim % 2 != 0) {
    return core::InvalidArgument(fmt::format("{}: got {}, must be even (RoPE rotates pairs)",
                                             n("head_dim", "head_dim"), c.head_dim));
  }
  if (c.num_heads * c.head_dim > kMaxWidth) {
    return core::InvalidArgument(fmt::format("{}: got {} x head_dim {}, must be <= {} in all",
                                             n("num_heads", "num_attention_heads"), c.num_heads,
                                             c.head_dim, kMaxWidth));
  }
  RETURN_IF_ERROR(CheckSize(n, "ffn_hidden", "intermediate_size", c.ffn_hidden, kMaxWidth));
  RETURN_IF_ERROR(
      CheckSize(n, "max_context", "max_position_embeddings", c.max_context, kMaxContext));
  RETURN_IF_ERROR(CheckPositiveFinite(n, "rms_eps", "rms_norm_eps", c.rms_eps));
  RETURN_IF_ERROR(ValidateRope(c, n));
  if (c.bos_id < 0 || c.bos_id >= c.vocab) {
    return core::InvalidArgument(fmt::format("{}: got {}, must be in [0, {})",
                                             n("bos_id", "bos_token_id"), c.bos_id, c.vocab));
  }
  if (c.eos_id < 0 || c.eos_id >= c.vocab) {
    return core::InvalidArgument(fmt::format("{}: got {}, must be in [0, {})",
                                             n("eos_id", "eos_token_id"), c.eos_id, c.vocab));
  }
  return core::Status::Ok();
}

// An optional positive integer member (absent or null: `fallback`).
core::StatusOr<int64_t> OptionalPositiveInt(const core::Json& j, const char* key,
                                            int64_t fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return core::GetPositiveInt(j, "", key);
}

core::StatusOr<double> OptionalPositiveDouble(const core::Json& j, const char* key,
                                              double fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return core::GetPositiveDouble(j, "", key);
}

// bos_token_id / eos_token_id: an int or a non-empty list of ints (the first is taken).
core::StatusOr<int32_t> TokenId(const core::Json& j, const char* key, int32_t fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  const core::Json* v = &*it;
  if (v->is_array() && !v->empty()) v = &(*v)[0];
  if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > INT32_MAX) {
    return core::InvalidArgument(
        fmt::format("{}: got {}, must be a token id or a list of them", key, core::ShowJson(*it)));
  }
  return static_cast<int32_t>(v->get<int64_t>());
}

core::StatusOr<std::optional<LlamaRopeScaling>> ParseRopeScaling(const core::Json& j) {
  auto it = j.find("rope_scaling");
  if (it == j.end() || it->is_null()) return std::optional<LlamaRopeScaling>();
  const core::Json& r = *it;
  if (!r.is_object()) {
    return core::InvalidArgument(
        fmt::format("rope_scaling: got {}, must be an object or null", core::ShowJson(r)));
  }
  std::string type;
  for (const char* key : {"rope_type", "type"}) {
    auto t = r.find(key);
    if (t != r.end() && t->is_string()) type = t->get<std::string>();
  }
  if (type == "default") return std::optional<LlamaRopeScaling>();
  if (type != "llama3") {
    return core::InvalidArgument(fmt::format(
        "rope_scaling.rope_type: got '{}', must be llama3 or default (others are not supported)",
        core::Utf8Prefix(type, 40)));
  }
  LlamaRopeScaling s;
  ASSIGN_OR_RETURN(s.factor, core::GetPositiveDouble(r, "rope_scaling", "factor"));
  ASSIGN_OR_RETURN(s.low_freq_factor,
                   core::GetPositiveDouble(r, "rope_scaling", "low_freq_factor"));
  ASSIGN_OR_RETURN(s.high_freq_factor,
                   core::GetPositiveDouble(r, "rope_scaling", "high_freq_factor"));
  ASSIGN_OR_RETURN(s.original_max_position_embeddings,
                   core::GetPositiveInt(r, "rope_scaling", "original_max_position_embeddings"));
  return std::optional<LlamaRopeScaling>(s);
}

// Architecture switches we do not implement must be off.
core::Status CheckUnsupportedKeys(const core::Json& j) {
  auto act = j.find("hidden_act");
  if (act != j.end() && !(act->is_string() && act->get<std::string>() == "silu")) {
    return core::InvalidArgument(
        fmt::format("hidden_act: got {}, must be \"silu\"", core::ShowJson(*act)));
  }
  for (const char* key : {"attention_bias", "mlp_bias"}) {
    auto b = j.find(key);
    if (b != j.end() && !(b->is_boolean() && !b->get<bool>())) {
      return core::InvalidArgument(
          fmt::format("{}: got {}, must be false (no biases)", key, core::ShowJson(*b)));
    }
  }
  return core::Status::Ok();
}

core::StatusOr<LlamaConfig> ParseHf(const core::Json& j) {
  if (!j.is_object()) {
    return core::InvalidArgument(fmt::format("got {}, must be an object", core::ShowJson(j)));
  }
  RETURN_IF_ERROR(CheckUnsupportedKeys(j));
  LlamaConfig c;
  auto name = j.find("_name_or_path");
  if (name != j.end() && name->is_string())
    c.name = core::Utf8Prefix(name->get<std::string>(), 200);
  ASSIGN_OR_RETURN(c.hidden, core::GetPositiveInt(j, "", "hidden_size"));
  ASSIGN_OR_RETURN(c.ffn_hidden, core::GetPositiveInt(j, "", "intermediate_size"));
  ASSIGN_OR_RETURN(c.num_heads, core::GetPositiveInt(j, "", "num_attention_heads"));
  ASSIGN_OR_RETURN(c.num_kv_heads, OptionalPositiveInt(j, "num_key_value_heads", c.num_heads));
  ASSIGN_OR_RETURN(c.num_layers, core::GetPositiveInt(j, "", "num_hidden_layers"));
  ASSIGN_OR_RETURN(c.vocab, core::GetPositiveInt(j, "", "vocab_size"));
  ASSIGN_OR_RETURN(c.max_context, OptionalPositiveInt(j, "max_position_embeddings", 2048));
  ASSIGN_OR_RETURN(c.rms_eps, OptionalPositiveDouble(j, "rms_norm_eps", 1e-6));
  ASSIGN_OR_RETURN(c.rope_theta, OptionalPositiveDouble(j, "rope_theta", 10000.0));
  auto tie = j.find("tie_word_embeddings");
  if (tie != j.end() && !tie->is_null()) {
    if (!tie->is_boolean()) {
      return core::InvalidArgument(
          fmt::format("tie_word_embeddings: got {}, must be true or false", core::ShowJson(*tie)));
    }
    c.tie_embeddings = tie->get<bool>();
  }
  if (c.hidden % c.num_heads != 0 && (j.find("head_dim") == j.end() || j["head_dim"].is_null())) {
    return core::InvalidArgument(
        fmt::format("num_attention_heads: got {}, must divide hidden_size {} (or set head_dim)",
                    c.num_heads, c.hidden));
  }
  ASSIGN_OR_RETURN(c.head_dim, OptionalPositiveInt(j, "head_dim", c.hidden / c.num_heads));
  ASSIGN_OR_RETURN(c.rope_scaling, ParseRopeScaling(j));
  ASSIGN_OR_RETURN(c.bos_id, TokenId(j, "bos_token_id", 1));
  ASSIGN_OR_RETURN(c.eos_id, TokenId(j, "eos_token_id", 2));
  RETURN_IF_ERROR(ValidateNamed(c, LlamaFieldNames{.hf = true, .prefix = ""}));
  return c;
}

LlamaConfig TinyPreset(const char* name, int64_t kv_heads) {
  LlamaConfig c;
  c.name = name;
  c.vocab = 259;
  c.hidden = 512;
  c.num_layers = 8;
  c.num_heads = 8;
  c.num_kv_heads = kv_heads;
  c.head_dim = 64;
  c.ffn_hidden = 1536;
  c.max_context = 65536;
  c.rope_theta = 500000.0;
  c.rms_eps = 1e-5;
  c.bos_id = 256;
  c.eos_id = 257;
  return c;
}

LlamaConfig Llama31Preset(const char* name, int64_t layers, int64_t hidden, int64_t heads,
                          int64_t ffn) {
  LlamaConfig c;
  c.name = name;
  c.vocab = 128256;
  c.hidden = hidden;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = 8;
  c.head_dim = 128;
  c.ffn_hidden = ffn;
  c.max_context = 131072;
  c.rope_theta = 500000.0;
  c.rope_scaling = LlamaRopeScaling{};
  c.rms_eps = 1e-5;
  c.bos_id = 128000;
  c.eos_id = 128001;
  c.shape_only = true;
  return c;
}

}  // namespace

core::Status LlamaConfig::Validate() const {
  return ValidateNamed(*this, LlamaFieldNames{.hf = false, .prefix = "LlamaConfig."});
}

int64_t LlamaConfig::KvBytesPerToken(int64_t dtype_bytes) const {
  return 2 * num_layers * num_kv_heads * head_dim * dtype_bytes;
}

int64_t LlamaConfig::ParamCount() const {
  const int64_t q = num_heads * head_dim, kv = num_kv_heads * head_dim;
  const int64_t per_layer =
      2 * hidden + hidden * (q + 2 * kv) + q * hidden + 3 * hidden * ffn_hidden;
  return vocab * hidden * (tie_embeddings ? 1 : 2) + num_layers * per_layer + hidden;
}

std::vector<double> LlamaConfig::RopeInvFreq() const {
  const int64_t half = head_dim / 2;
  std::vector<double> inv(half);
  for (int64_t i = 0; i < half; ++i) {
    inv[i] = std::pow(rope_theta, -static_cast<double>(2 * i) / static_cast<double>(head_dim));
  }
  if (!rope_scaling) return inv;
  const LlamaRopeScaling& s = *rope_scaling;
  const double old_len = static_cast<double>(s.original_max_position_embeddings);
  const double low_freq_wavelen = old_len / s.low_freq_factor;
  const double high_freq_wavelen = old_len / s.high_freq_factor;
  for (double& f : inv) {
    const double wavelen = 2.0 * std::numbers::pi / f;
    if (wavelen < high_freq_wavelen) continue;  // high frequencies are kept
    if (wavelen > low_freq_wavelen) {
      f /= s.factor;  // low frequencies are interpolated
      continue;
    }
    const double smooth =
        (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    f = (1.0 - smooth) * f / s.factor + smooth * f;
  }
  return inv;
}

core::StatusOr<LlamaConfig> LlamaConfig::FromHfConfigJson(const std::string& text,
                                                          const std::string& source) {
  auto j = core::ParseJson(text, source);
  if (!j.ok()) return j.status();
  auto c = ParseHf(*j);
  if (!c.ok()) return c.status().WithPrefix(source);
  return c;
}

core::StatusOr<LlamaConfig> LlamaConfig::FromHfConfigFile(const std::string& path) {
  auto j = core::ReadJsonFile(path);
  if (!j.ok()) return j.status();
  auto c = ParseHf(*j);
  if (!c.ok()) return c.status().WithPrefix(path);
  return c;
}

std::string LlamaConfig::ToHfConfigJson() const {
  core::Json j = {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"_name_or_path", name},
      {"hidden_size", hidden},
      {"intermediate_size", ffn_hidden},
      {"num_attention_heads", num_heads},
      {"num_key_value_heads", num_kv_heads},
      {"num_hidden_layers", num_layers},
      {"head_dim", head_dim},
      {"vocab_size", vocab},
      {"max_position_embeddings", max_context},
      {"rms_norm_eps", rms_eps},
      {"rope_theta", rope_theta},
      {"tie_word_embeddings", tie_embeddings},
      {"bos_token_id", bos_id},
      {"eos_token_id", eos_id},
      {"hidden_act", "silu"},
      {"attention_bias", false},
      {"mlp_bias", false},
      {"torch_dtype", "float32"},
  };
  if (rope_scaling) {
    j["rope_scaling"] = {
        {"rope_type", "llama3"},
        {"factor", rope_scaling->factor},
        {"low_freq_factor", rope_scaling->low_freq_factor},
        {"high_freq_factor", rope_scaling->high_freq_factor},
        {"original_max_position_embeddings", rope_scaling->original_max_position_embeddings}};
  } else {
    j["rope_scaling"] = nullptr;
  }
  return j.dump(2) + "\n";
}

core::StatusOr<LlamaConfig> LlamaPreset(const std::string& name) {
  if (name == "tiny-mha") return TinyPreset("tiny-mha", 8);
  if (name == "tiny-gqa") return TinyPreset("tiny-gqa", 2);
  if (name == "llama-3.1-8b") return Llama31Preset("llama-3.1-8b", 32, 4096, 32, 14336);
  if (name == "llama-3.1-70b") return Llama31Preset("llama-3.1-70b", 80, 8192, 64, 28672);
  return core::NotFound(fmt::format("llama preset: got '{}', must be one of {}",
                                    core::Utf8Prefix(name, 60),
                                    fmt::join(LlamaPresetNames(), ", ")));
}

std::vector<std::string> LlamaPresetNames() {
  return {"tiny-mha", "tiny-gqa", "llama-3.1-8b", "llama-3.1-70b"};
}

core::StatusOr<LlamaConfig> LoadLlamaConfig(const std::string& preset_or_dir) {
  auto preset = LlamaPreset(preset_or_dir);
  if (preset.ok()) return preset;
  if (core::PathExists(preset_or_dir)) {
    return LlamaConfig::FromHfConfigFile(preset_or_dir + "/config.json");
  }
  return core::NotFound(fmt::format("model: got '{}', must be a preset ({}) or a model directory",
                                    core::Utf8Prefix(preset_or_dir, 200),
                                    fmt::join(LlamaPresetNames(), ", ")));
}

}  // namespace tessera::models
