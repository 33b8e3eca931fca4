#include "models/llama.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <type_traits>
#include <utility>

#include "core/fnv64.h"
#include "core/input_file.h"
#include "core/json_util.h"
#include "core/output_file.h"
#include "core/rng.h"
#include "models/llama_ops.h"

namespace tessera::models {
namespace {

// One weight tensor: its Hugging Face name, shape, and where it lives in LlamaWeights (W is
// LlamaWeights or const LlamaWeights).
template <typename W>
struct LlamaWeightSlot {
  using Vec = std::conditional_t<std::is_const_v<W>, const std::vector<float>, std::vector<float>>;
  std::string name;
  std::vector<int64_t> shape;
  Vec* data;
  bool is_norm;
};

// Every weight in file order. A non-const `w` gets L layers first.
template <typename W>
std::vector<LlamaWeightSlot<W>> LlamaSlots(const LlamaConfig& c, W& w) {
  const int64_t d = c.hidden, q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  const int64_t f = c.ffn_hidden;
  std::vector<LlamaWeightSlot<W>> s;
  s.push_back({"model.embed_tokens.weight", {c.vocab, d}, &w.embed, false});
  if constexpr (!std::is_const_v<W>) w.layers.resize(c.num_layers);
  CHECK_EQ(static_cast<int64_t>(w.layers.size()), c.num_layers);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    auto& lw = w.layers[l];
    auto name = [l](const char* suffix) { return LlamaLayerTensorName(l, suffix); };
    s.push_back({name("input_layernorm.weight"), {d}, &lw.attn_norm, true});
    s.push_back({name("self_attn.q_proj.weight"), {q, d}, &lw.wq, false});
    s.push_back({name("self_attn.k_proj.weight"), {kv, d}, &lw.wk, false});
    s.push_back({name("self_attn.v_proj.weight"), {kv, d}, &lw.wv, false});
    s.push_back({name("self_attn.o_proj.weight"), {d, q}, &lw.wo, false});
    s.push_back({name("post_attention_layernorm.weight"), {d}, &lw.ffn_norm, true});
    s.push_back({name("mlp.gate_proj.weight"), {f, d}, &lw.w_gate, false});
    s.push_back({name("mlp.up_proj.weight"), {f, d}, &lw.w_up, false});
    s.push_back({name("mlp.down_proj.weight"), {d, f}, &lw.w_down, false});
  }
  s.push_back({"model.norm.weight", {d}, &w.final_norm, true});
  if (!c.tie_embeddings) s.push_back({"lm_head.weight", {c.vocab, d}, &w.lm_head, false});
  return s;
}

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t x : shape) n *= x;
  return n;
}

core::Status CheckTokens(const LlamaConfig& c, std::span<const int32_t> tokens, int64_t pos0) {
  if (tokens.empty()) return core::InvalidArgument("tokens: got 0, must hold at least 1 token");
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= c.vocab) {
      return core::InvalidArgument(fmt::format("tokens[{}]: got {}, must be in [0, {}) ({})", i,
                                               tokens[i], c.vocab, c.name));
    }
  }
  const int64_t t = static_cast<int64_t>(tokens.size());
  if (pos0 < 0 || pos0 + t > c.max_context) {
    return core::InvalidArgument(
        fmt::format("positions: got [{}, {}), must lie in [0, max_context {}) of {}", pos0,
                    pos0 + t, c.max_context, c.name));
  }
  return core::Status::Ok();
}

// The tensors of a directory: model.safetensors, else the shards of the index. `origin` maps
// each tensor to its file for messages.
core::StatusOr<TensorMap> ReadModelTensors(const std::string& dir,
                                           std::map<std::string, std::string>& origin) {
  const std::string single = dir + "/model.safetensors";
  const std::string index = dir + "/model.safetensors.index.json";
  if (core::PathExists(single)) {
    ASSIGN_OR_RETURN(TensorMap m, ReadSafetensors(single));
    for (const auto& [name, t] : m) origin[name] = single;
    return m;
  }
  if (!core::PathExists(index)) {
    return core::NotFound(fmt::format("{}: no model.safetensors or model.safetensors.index.json",
                                      core::QuotedPath(dir)));
  }
  ASSIGN_OR_RETURN(core::Json j, core::ReadJsonFile(index));
  auto map_it = j.is_object() ? j.find("weight_map") : j.end();
  if (map_it == j.end() || !map_it->is_object()) {
    return core::InvalidArgument(fmt::format("{}: weight_map: missing or not an object", index));
  }
  std::set<std::string> files;
  for (auto it = map_it->begin(); it != map_it->end(); ++it) {
    const std::string file = it->is_string() ? it->get<std::string>() : "";
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..") {
      return core::InvalidArgument(
          fmt::format("{}: weight_map.{}: got {}, must be a file name in the model directory",
                      index, it.key(), core::ShowJson(*it)));
    }
    files.insert(file);
  }
  TensorMap all;
  for (const std::string& file : files) {
    const std::string path = dir + "/" + file;
    ASSIGN_OR_RETURN(TensorMap part, ReadSafetensors(path));
    for (auto& [name, t] : part) {
      origin[name] = path;
      all[name] = std::move(t);
    }
  }
  return all;
}

}  // namespace

std::string LlamaLayerTensorName(int64_t layer, const char* suffix) {
  return fmt::format("model.layers.{}.{}", layer, suffix);
}

core::StatusOr<LlamaModel> LlamaModel::FromSeed(const LlamaConfig& config, uint64_t seed,
                                                float init_std) {
  if (config.shape_only) {
    return core::InvalidArgument(fmt::format(
        "model: preset '{}' is shape-only (for the cost model), it has no weights to run; use "
        "tiny-mha, tiny-gqa or a model directory",
        config.name));
  }
  RETURN_IF_ERROR(config.Validate());
  LlamaModel m;
  m.config_ = config;
  const core::Rng root(seed);
  uint64_t stream = 0;
  for (auto& slot : LlamaSlots(m.config_, m.weights_)) {
    slot.data->resize(NumElements(slot.shape));
    if (slot.is_norm) {
      std::fill(slot.data->begin(), slot.data->end(), 1.0f);
    } else {
      core::Rng rng = root.Fork(stream);
      for (float& x : *slot.data) x = static_cast<float>(init_std * rng.Normal());
    }
    ++stream;
  }
  m.ComputeFingerprint();
  return m;
}

core::StatusOr<LlamaModel> LlamaModel::FromTensors(const LlamaConfig& config, TensorMap tensors,
                                                   const std::string& source) {
  RETURN_IF_ERROR(config.Validate().WithPrefix(source));
  LlamaModel m;
  m.config_ = config;
  m.config_.shape_only = false;
  for (auto& slot : LlamaSlots(m.config_, m.weights_)) {
    auto it = tensors.find(slot.name);
    if (it == tensors.end()) {
      return core::InvalidArgument(fmt::format("{}: tensor '{}': missing, expected shape [{}]",
                                               source, slot.name, fmt::join(slot.shape, ", ")));
    }
    if (it->second.shape != slot.shape) {
      return core::InvalidArgument(fmt::format("{}: tensor '{}': shape: got [{}], expected [{}]",
                                               source, slot.name, fmt::join(it->second.shape, ", "),
                                               fmt::join(slot.shape, ", ")));
    }
    if (static_cast<int64_t>(it->second.data.size()) != NumElements(slot.shape)) {
      return core::InvalidArgument(fmt::format(
          "{}: tensor '{}': got {} values, shape [{}] needs {}", source, slot.name,
          it->second.data.size(), fmt::join(slot.shape, ", "), NumElements(slot.shape)));
    }
    *slot.data = std::move(it->second.data);
  }
  m.ComputeFingerprint();
  return m;
}

core::StatusOr<LlamaModel> LlamaModel::Load(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return core::NotFound(fmt::format(
        "{}: not a directory, must hold config.json and *.safetensors", core::QuotedPath(dir)));
  }
  ASSIGN_OR_RETURN(LlamaConfig config, LlamaConfig::FromHfConfigFile(dir + "/config.json"));
  if (config.name.empty()) {
    config.name = std::filesystem::path(dir).lexically_normal().filename().string();
    if (config.name.empty())
      config.name = std::filesystem::path(dir).parent_path().filename().string();
  }
  std::map<std::string, std::string> origin;
  ASSIGN_OR_RETURN(TensorMap tensors, ReadModelTensors(dir, origin));
  // Name the file that holds (or should hold) a tensor: check shapes here with that file.
  LlamaWeights probe;
  for (const auto& slot : LlamaSlots(config, probe)) {
    auto it = tensors.find(slot.name);
    const std::string file = it == tensors.end() ? "" : origin[slot.name];
    if (it != tensors.end() && it->second.shape != slot.shape) {
      return core::InvalidArgument(fmt::format("{}: tensor '{}': shape: got [{}], expected [{}]",
                                               file, slot.name, fmt::join(it->second.shape, ", "),
                                               fmt::join(slot.shape, ", ")));
    }
  }
  const std::string source = core::PathExists(dir + "/model.safetensors")
                                 ? dir + "/model.safetensors"
                                 : dir + "/model.safetensors.index.json";
  return FromTensors(config, std::move(tensors), source);
}

core::StatusOr<LlamaModel> LlamaModel::Open(const std::string& preset_or_dir, uint64_t seed) {
  auto preset = LlamaPreset(preset_or_dir);
  if (preset.ok()) return FromSeed(*preset, seed);
  if (core::PathExists(preset_or_dir)) return Load(preset_or_dir);
  return LoadLlamaConfig(preset_or_dir).status();  // NotFound naming the presets
}

TensorMap LlamaModel::ToTensors() const {
  TensorMap out;
  for (const auto& slot : LlamaSlots(config_, weights_)) {
    out[slot.name] = Tensor{slot.shape, *slot.data};
  }
  return out;
}

core::Status LlamaModel::Save(const std::string& dir, TensorDtype dtype) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return core::InvalidArgument(
        fmt::format("{}: cannot create the directory: {}", core::QuotedPath(dir), ec.message()));
  }
  RETURN_IF_ERROR(core::WriteFileAtomically(dir + "/config.json", config_.ToHfConfigJson()));
  return WriteSafetensors(dir + "/model.safetensors", ToTensors(), dtype);
}

void LlamaModel::ComputeFingerprint() {
  core::Fnv64 h;
  h.Str("llama");
  for (int64_t v :
       {config_.vocab, config_.hidden, config_.num_layers, config_.num_heads, config_.num_kv_heads,
        config_.head_dim, config_.ffn_hidden, config_.max_context, int64_t{config_.bos_id},
        int64_t{config_.eos_id}, int64_t{config_.tie_embeddings}}) {
    h.I64(v);
  }
  for (double v : {config_.rope_theta, config_.rms_eps}) h.I64(std::bit_cast<int64_t>(v));
  if (config_.rope_scaling) {
    const LlamaRopeScaling& s = *config_.rope_scaling;
    for (double v : {s.factor, s.low_freq_factor, s.high_freq_factor}) {
      h.I64(std::bit_cast<int64_t>(v));
    }
    h.I64(s.original_max_position_embeddings);
  }
  for (const auto& slot : LlamaSlots(config_, std::as_const(weights_))) {
    h.Str(slot.name);
    for (int64_t d : slot.shape) h.I64(d);
    h.Floats(*slot.data);
  }
  fingerprint_ = fmt::format("{:016x}", h.value());
}

core::Status LlamaModel::Forward(std::span<const int32_t> tokens, int64_t pos0, CoreAttention& attn,
                                 float* logits, bool last_only) const {
  const LlamaConfig& c = config_;
  RETURN_IF_ERROR(CheckTokens(c, tokens, pos0));
  CHECK(logits != nullptr) << "LlamaModel::Forward: logits is null";
  const int64_t t = static_cast<int64_t>(tokens.size());
  const int64_t d = c.hidden, hd = c.head_dim, half = hd / 2, f = c.ffn_hidden;
  const int64_t qw = c.num_heads * hd, kvw = c.num_kv_heads * hd;

  // Scratch for the whole call.
  std::vector<float> scratch(t * (2 * d + 2 * qw + 2 * kvw + 2 * f + 2 * half));
  float* x = scratch.data();
  float* xn = x + t * d;
  float* q = xn + t * d;
  float* o = q + t * qw;
  float* k = o + t * qw;
  float* v = k + t * kvw;
  float* gate = v + t * kvw;
  float* up = gate + t * f;
  float* cos_t = up + t * f;
  float* sin_t = cos_t + t * half;

  std::vector<int64_t> positions(t);
  for (int64_t i = 0; i < t; ++i) positions[i] = pos0 + i;
  RopeTables(positions, c.RopeInvFreq(), cos_t, sin_t);
  for (int64_t i = 0; i < t; ++i) {
    const float* row = weights_.embed.data() + static_cast<int64_t>(tokens[i]) * d;
    std::copy(row, row + d, x + i * d);
  }

  for (int64_t l = 0; l < c.num_layers; ++l) {
    const LlamaLayerWeights& w = weights_.layers[l];
    RmsNormRows(x, t, d, w.attn_norm.data(), c.rms_eps, xn);
    RETURN_IF_ERROR(LlamaLinear(xn, t, d, w.wq, qw, 0.0f, q));
    ApplyRope(q, t, c.num_heads, hd, cos_t, sin_t);
    RETURN_IF_ERROR(attn.BeginLayer(l, pos0, t, q));
    RETURN_IF_ERROR(LlamaLinear(xn, t, d, w.wk, kvw, 0.0f, k));
    ApplyRope(k, t, c.num_kv_heads, hd, cos_t, sin_t);
    RETURN_IF_ERROR(LlamaLinear(xn, t, d, w.wv, kvw, 0.0f, v));
    RETURN_IF_ERROR(attn.FinishLayer(l, k, v, o));
    RETURN_IF_ERROR(LlamaLinear(o, t, qw, w.wo, d, 1.0f, x));

    RmsNormRows(x, t, d, w.ffn_norm.data(), c.rms_eps, xn);
    RETURN_IF_ERROR(LlamaLinear(xn, t, d, w.w_gate, f, 0.0f, gate));
    RETURN_IF_ERROR(LlamaLinear(xn, t, d, w.w_up, f, 0.0f, up));
    SwiGluInPlace(gate, up, t * f);
    RETURN_IF_ERROR(LlamaLinear(gate, t, f, w.w_down, d, 1.0f, x));
  }

  const int64_t first = last_only ? t - 1 : 0;
  const int64_t rows = t - first;
  RmsNormRows(x + first * d, rows, d, weights_.final_norm.data(), c.rms_eps, xn);
  const std::vector<float>& head = c.tie_embeddings ? weights_.embed : weights_.lm_head;
  return LlamaLinear(xn, rows, d, head, c.vocab, 0.0f, logits);
}

}  // namespace tessera::models
