#include "zellige/profile.h"

#include <algorithm>
#include <cmath>

#include "core/parse_number.h"
#include "workload/batch.h"
#include "zellige/planner_configs.h"

namespace tessera::zellige {

using core::Json;
using core::Status;
using core::StatusOr;

namespace {

constexpr const char* kKind = "tessera-zellige-profile";
constexpr int kVersion = 1;
constexpr int kMaxRanks = hw::kMaxClusterRanks;
// Plausible per-step and per-message times: beyond them the machine is not one a profile
// describes, and sums of such prices head for infinity.
constexpr double kMaxStepOverheadS = 3600;
constexpr double kMaxCommAlphaS = 60;
constexpr double kMaxCommBetaSPerByte = 1e-3;  // >= 1 kB/s, hw::kMinLinkBwBytesPerS

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

StatusOr<const Json*> GetArray(const Json& obj, const std::string& path, const std::string& key) {
  ASSIGN_OR_RETURN(const Json* v, core::Member(obj, path, key));
  if (!v->is_array()) {
    return core::InvalidArgument(core::JoinPath(path, key) + ": got " +
                                 std::string(v->type_name()) + ", must be an array");
  }
  return v;
}

// An int in [1, max].
StatusOr<int> GetBoundedInt(const Json& obj, const std::string& path, const std::string& key,
                            int64_t max) {
  ASSIGN_OR_RETURN(int64_t v, core::GetPositiveInt(obj, path, key));
  if (v > max) {
    return core::InvalidArgument(core::JoinPath(path, key) + ": got " + std::to_string(v) +
                                 ", must be <= " + std::to_string(max));
  }
  return static_cast<int>(v);
}

// An array of exactly N finite numbers (a fit's coefficients).
template <size_t N>
StatusOr<std::array<double, N>> GetFit(const Json& obj, const std::string& path,
                                       const std::string& key) {
  ASSIGN_OR_RETURN(const Json* a, GetArray(obj, path, key));
  const std::string field = core::JoinPath(path, key);
  if (a->size() != N) {
    return core::InvalidArgument(field + ": got " + std::to_string(a->size()) +
                                 " coefficients, must be " + std::to_string(N));
  }
  std::array<double, N> f{};
  for (size_t i = 0; i < N; ++i) {
    const Json& v = (*a)[i];
    if (!v.is_number() || !std::isfinite(v.get<double>())) {
      return core::InvalidArgument(Index(field, i) + ": got " + core::ShowJson(v) +
                                   ", must be a finite number");
    }
    f[i] = v.get<double>();
  }
  return f;
}

StatusOr<ProfileModel> ModelFromJson(const Json& j) {
  const std::string path = "model";
  RETURN_IF_ERROR(core::CheckKnownKeys(
      j, path, {"in_channels", "hidden", "heads", "head_dim", "layers", "ffn"}));
  ProfileModel m;
  // Every size is bounded (models::DitModel's ranges) before heads * head_dim is formed.
  ASSIGN_OR_RETURN(m.in_channels,
                   core::GetIntInRange(j, path, "in_channels", 1, models::kMaxModelHidden));
  ASSIGN_OR_RETURN(m.hidden, core::GetIntInRange(j, path, "hidden", 1, models::kMaxModelHidden));
  ASSIGN_OR_RETURN(m.heads, core::GetIntInRange(j, path, "heads", 1, models::kMaxModelHeads));
  ASSIGN_OR_RETURN(m.head_dim,
                   core::GetIntInRange(j, path, "head_dim", 1, models::kMaxModelHidden));
  ASSIGN_OR_RETURN(m.layers, core::GetIntInRange(j, path, "layers", 1, models::kMaxModelLayers));
  ASSIGN_OR_RETURN(m.ffn, core::GetIntInRange(j, path, "ffn", 1, models::kMaxModelFfn));
  if (m.hidden != m.heads * m.head_dim) {
    return core::InvalidArgument("model.hidden: got " + std::to_string(m.hidden) +
                                 ", must equal heads * head_dim (" +
                                 std::to_string(m.heads * m.head_dim) + ")");
  }
  return m;
}

// The fitted time a + b L + c L^2 must be >= 0 for every length from 1 token to `hi` (twice the
// longest measured) and finite up to `finite_hi` (the longest sequence a batch may hold): a
// negative fit, clamped at 0, would price sequences as free.
Status CheckTimeFit(const std::array<double, 3>& f, double hi, double finite_hi,
                    const std::string& field) {
  std::vector<double> at = {1.0, hi};
  if (f[2] > 0) {
    const double vertex = -f[1] / (2 * f[2]);
    if (vertex > 1 && vertex < hi) at.push_back(vertex);
  }
  const std::string shown = "got [" + core::ShowNumber(f[0]) + ", " + core::ShowNumber(f[1]) +
                            ", " + core::ShowNumber(f[2]) + "], prices ";
  for (double L : at) {
    const double t = core::EvalPolynomial(f, L);
    if (!(t >= 0)) {
      return core::InvalidArgument(field + ": " + shown + core::ShowNumber(std::round(L)) +
                                   " tokens at " + core::ShowNumber(t) +
                                   " s, must be >= 0 for every length in [1, " +
                                   core::ShowNumber(hi) + "] tokens (the profile's range)");
    }
  }
  const double far = core::EvalPolynomial(f, finite_hi);
  if (!std::isfinite(far)) {
    return core::InvalidArgument(field + ": " + shown + core::ShowNumber(finite_hi) +
                                 " tokens at " + core::ShowNumber(far) +
                                 " s, must be finite up to the longest sequence");
  }
  return Status::Ok();
}

// The fitted memory m0 + m1 L: m1 >= 0 (memory does not shrink as a sequence grows, so no
// long sequence is priced at no memory) and > 0 at `hi`. A negative m0 is accepted: measured
// memory grows slightly faster than linearly, so the least-squares line of real profiles
// crosses 0 below the shortest lengths, where EvalLine clamps it at 0.
Status CheckMemFit(const std::array<double, 2>& f, double hi, double finite_hi,
                   const std::string& field) {
  if (f[1] < 0) {
    return core::InvalidArgument(field + "[1]: got " + core::ShowNumber(f[1]) +
                                 ", must be >= 0 (bytes per token; memory does not shrink as a "
                                 "sequence grows)");
  }
  const double top = core::EvalPolynomial(f, hi);
  if (!(top > 0)) {
    return core::InvalidArgument(field + ": got [" + core::ShowNumber(f[0]) + ", " +
                                 core::ShowNumber(f[1]) + "], prices " + core::ShowNumber(hi) +
                                 " tokens at " + core::ShowNumber(top) +
                                 " bytes, must be > 0 at twice the longest measured length");
  }
  const double far = core::EvalPolynomial(f, finite_hi);
  if (!std::isfinite(far)) {
    return core::InvalidArgument(
        field + ": got [" + core::ShowNumber(f[0]) + ", " + core::ShowNumber(f[1]) + "], prices " +
        core::ShowNumber(finite_hi) + " tokens at " + core::ShowNumber(far) +
        " bytes, must be finite up to the longest sequence");
  }
  return Status::Ok();
}

StatusOr<ConfigPrices> ConfigFromJson(const Json& j, const std::string& path, int heads,
                                      int ranks) {
  ConfigPrices c;
  RETURN_IF_ERROR(
      core::CheckKnownKeys(j, path, {"q", "h", "k", "points", "fwd_fit", "bwd_fit", "mem_fit"}));
  ASSIGN_OR_RETURN(c.config.q, GetBoundedInt(j, path, "q", kMaxRanks));
  ASSIGN_OR_RETURN(c.config.h, GetBoundedInt(j, path, "h", kMaxRanks));
  ASSIGN_OR_RETURN(c.config.k, GetBoundedInt(j, path, "k", kMaxRanks));
  const int64_t degree = int64_t{c.config.q} * c.config.h * c.config.k;
  if (degree > ranks) {
    return core::InvalidArgument(path + ": config " + c.config.ToString() + " has degree " +
                                 std::to_string(degree) + ", must be <= ranks (" +
                                 std::to_string(ranks) + ")");
  }
  Status legal = ValidateConfig(c.config, heads, c.config.degree());
  if (!legal.ok()) return legal.WithPrefix(path);
  ASSIGN_OR_RETURN(const Json* points, GetArray(j, path, "points"));
  if (points->empty()) {
    return core::InvalidArgument(path + ".points: got an empty array, must hold >= 1 point");
  }
  for (size_t i = 0; i < points->size(); ++i) {
    const std::string pp = Index(path + ".points", i);
    PricePoint p;
    RETURN_IF_ERROR(
        core::CheckKnownKeys((*points)[i], pp, {"tokens", "count", "fwd_s", "bwd_s", "mem_bytes"}));
    ASSIGN_OR_RETURN(
        p.tokens, core::GetIntInRange((*points)[i], pp, "tokens", 1, workload::kMaxSequenceTokens));
    ASSIGN_OR_RETURN(
        p.count, core::GetIntInRange((*points)[i], pp, "count", 1, workload::kMaxBatchSequences));
    ASSIGN_OR_RETURN(p.fwd_s, core::GetNonNegativeDouble((*points)[i], pp, "fwd_s"));
    ASSIGN_OR_RETURN(p.bwd_s, core::GetNonNegativeDouble((*points)[i], pp, "bwd_s"));
    ASSIGN_OR_RETURN(p.mem_bytes, core::GetNonNegativeDouble((*points)[i], pp, "mem_bytes"));
    if (!c.points.empty() && p.tokens <= c.points.back().tokens) {
      return core::InvalidArgument(pp + ".tokens: got " + std::to_string(p.tokens) +
                                   ", must be > the previous point's " +
                                   std::to_string(c.points.back().tokens) + " (ascending)");
    }
    c.points.push_back(p);
  }
  ASSIGN_OR_RETURN(c.fwd_fit, GetFit<3>(j, path, "fwd_fit"));
  ASSIGN_OR_RETURN(c.bwd_fit, GetFit<3>(j, path, "bwd_fit"));
  ASSIGN_OR_RETURN(c.mem_fit, GetFit<2>(j, path, "mem_fit"));
  const double hi = 2.0 * static_cast<double>(c.points.back().tokens);
  const double finite_hi = std::max(hi, static_cast<double>(workload::kMaxSequenceTokens));
  RETURN_IF_ERROR(CheckTimeFit(c.fwd_fit, hi, finite_hi, path + ".fwd_fit"));
  RETURN_IF_ERROR(CheckTimeFit(c.bwd_fit, hi, finite_hi, path + ".bwd_fit"));
  RETURN_IF_ERROR(CheckMemFit(c.mem_fit, hi, finite_hi, path + ".mem_fit"));
  return c;
}

StatusOr<CommFit> CommFromJson(const Json& j, const std::string& path) {
  CommFit f;
  RETURN_IF_ERROR(core::CheckKnownKeys(
      j, path, {"primitive", "ranks", "alpha_s", "beta_s_per_byte", "points"}));
  ASSIGN_OR_RETURN(f.primitive, core::GetString(j, path, "primitive"));
  if (f.primitive != "all_to_all" && f.primitive != "all_gather" && f.primitive != "p2p") {
    return core::InvalidArgument(path + ".primitive: got '" + f.primitive +
                                 "', must be all_to_all, all_gather or p2p");
  }
  ASSIGN_OR_RETURN(f.ranks, GetBoundedInt(j, path, "ranks", kMaxRanks));
  if (f.ranks < 2) {
    return core::InvalidArgument(path + ".ranks: got " + std::to_string(f.ranks) +
                                 ", must be >= 2");
  }
  ASSIGN_OR_RETURN(f.alpha_s, core::GetNonNegativeDouble(j, path, "alpha_s"));
  if (f.alpha_s > kMaxCommAlphaS) {
    return core::InvalidArgument(path + ".alpha_s: got " + core::ShowNumber(f.alpha_s) +
                                 ", must be <= " + core::ShowNumber(kMaxCommAlphaS) +
                                 " s per message");
  }
  ASSIGN_OR_RETURN(f.beta_s_per_byte, core::GetNonNegativeDouble(j, path, "beta_s_per_byte"));
  if (f.beta_s_per_byte > kMaxCommBetaSPerByte) {
    return core::InvalidArgument(
        path + ".beta_s_per_byte: got " + core::ShowNumber(f.beta_s_per_byte) +
        ", must be <= " + core::ShowNumber(kMaxCommBetaSPerByte) + " s per byte (>= 1 kB/s)");
  }
  ASSIGN_OR_RETURN(const Json* points, GetArray(j, path, "points"));
  for (size_t i = 0; i < points->size(); ++i) {
    const std::string pp = Index(path + ".points", i);
    CommPoint p;
    RETURN_IF_ERROR(core::CheckKnownKeys((*points)[i], pp, {"bytes", "time_s"}));
    ASSIGN_OR_RETURN(p.bytes, core::GetNonNegativeDouble((*points)[i], pp, "bytes"));
    ASSIGN_OR_RETURN(p.time_s, core::GetNonNegativeDouble((*points)[i], pp, "time_s"));
    f.points.push_back(p);
  }
  return f;
}

StatusOr<Profile> ParseProfile(const Json& j) {
  Profile p;
  // The keys ToJson writes: a misspelt optional one ("solo_speed_up") must not be ignored.
  RETURN_IF_ERROR(
      core::CheckKnownKeys(j, "",
                           {"kind", "version", "provenance", "machine", "date", "ranks", "repeats",
                            "model", "step_overhead_s", "base_bytes", "usable_bytes_per_rank",
                            "solo_speedup", "rank_time_factors", "configs", "comm"}));
  ASSIGN_OR_RETURN(std::string kind, core::GetString(j, "", "kind"));
  if (kind != kKind) {
    return core::InvalidArgument("kind: got '" + kind + "', must be '" + kKind + "'");
  }
  ASSIGN_OR_RETURN(const Json* version, core::Member(j, "", "version"));
  if (!version->is_number_integer() || version->get<int64_t>() != kVersion) {
    return core::InvalidArgument("version: got " + core::ShowJson(*version) + ", must be " +
                                 std::to_string(kVersion));
  }
  ASSIGN_OR_RETURN(p.provenance, core::GetString(j, "", "provenance"));
  if (p.provenance.empty()) return core::InvalidArgument("provenance: must be non-empty");
  ASSIGN_OR_RETURN(p.machine, core::GetString(j, "", "machine"));
  ASSIGN_OR_RETURN(p.date, core::GetString(j, "", "date"));
  ASSIGN_OR_RETURN(p.ranks, GetBoundedInt(j, "", "ranks", kMaxRanks));
  ASSIGN_OR_RETURN(p.repeats, GetBoundedInt(j, "", "repeats", 1000000));
  ASSIGN_OR_RETURN(const Json* model, core::Member(j, "", "model"));
  ASSIGN_OR_RETURN(p.model, ModelFromJson(*model));
  ASSIGN_OR_RETURN(p.step_overhead_s, core::GetNonNegativeDouble(j, "", "step_overhead_s"));
  if (p.step_overhead_s > kMaxStepOverheadS) {
    return core::InvalidArgument("step_overhead_s: got " + core::ShowNumber(p.step_overhead_s) +
                                 ", must be <= " + core::ShowNumber(kMaxStepOverheadS) +
                                 " s per step");
  }
  ASSIGN_OR_RETURN(p.base_bytes, core::GetNonNegativeDouble(j, "", "base_bytes"));
  ASSIGN_OR_RETURN(p.usable_bytes_per_rank,
                   core::GetPositiveDouble(j, "", "usable_bytes_per_rank"));
  // The profile's cluster (ProfileCluster) has this much memory per rank: a device's range.
  if (p.usable_bytes_per_rank < hw::kMinMemoryBytes ||
      p.usable_bytes_per_rank > hw::kMaxMemoryBytes) {
    return core::InvalidArgument("usable_bytes_per_rank: got " +
                                 core::ShowNumber(p.usable_bytes_per_rank) + ", must be in [" +
                                 core::ShowNumber(hw::kMinMemoryBytes) + ", " +
                                 core::ShowNumber(hw::kMaxMemoryBytes) + "] bytes");
  }
  if (j.contains("solo_speedup")) {
    ASSIGN_OR_RETURN(p.solo_speedup, core::GetPositiveDouble(j, "", "solo_speedup"));
    if (!InSpeedFactorRange(p.solo_speedup)) {
      return core::InvalidArgument("solo_speedup: got " + core::ShowNumber(p.solo_speedup) +
                                   ", must be in [0.25, 8]");
    }
  }
  if (j.contains("rank_time_factors")) {
    ASSIGN_OR_RETURN(const Json* factors, GetArray(j, "", "rank_time_factors"));
    if (static_cast<int>(factors->size()) != p.ranks) {
      return core::InvalidArgument("rank_time_factors: got " + std::to_string(factors->size()) +
                                   " values, must have one per rank (" + std::to_string(p.ranks) +
                                   ")");
    }
    for (size_t i = 0; i < factors->size(); ++i) {
      const Json& f = (*factors)[i];
      const std::string path = Index("rank_time_factors", i);
      if (!f.is_number() || !InSpeedFactorRange(f.get<double>())) {
        return core::InvalidArgument(path + ": got " + core::ShowJson(f) +
                                     ", must be a number in [0.25, 8]");
      }
      p.rank_time_factors.push_back(f.get<double>());
    }
  }
  if (p.usable_bytes_per_rank <= p.base_bytes) {
    return core::InvalidArgument("usable_bytes_per_rank: got " +
                                 core::ShowNumber(p.usable_bytes_per_rank) +
                                 ", must be > base_bytes (" + core::ShowNumber(p.base_bytes) + ")");
  }
  const int heads = static_cast<int>(p.model.heads);
  ASSIGN_OR_RETURN(const Json* configs, GetArray(j, "", "configs"));
  for (size_t i = 0; i < configs->size(); ++i) {
    const std::string path = Index("configs", i);
    ASSIGN_OR_RETURN(ConfigPrices c, ConfigFromJson((*configs)[i], path, heads, p.ranks));
    if (p.Find(c.config) != nullptr) {
      return core::InvalidArgument(path + ": config " + c.config.ToString() +
                                   " appears twice, must appear once");
    }
    p.configs.push_back(std::move(c));
  }
  // Every config a planner may place at this many ranks (planner_configs.h), so that no
  // planner meets an unpriced config later.
  for (const ParallelConfig& c : PlannerConfigs(p.ranks, heads)) {
    if (p.Find(c) == nullptr) {
      return core::InvalidArgument(
          "configs: missing " + c.ToString() + " (degree " + std::to_string(c.degree()) +
          ", needed by the planners for " + std::to_string(p.ranks) + " ranks with " +
          std::to_string(heads) + " heads); measure the profile again at " +
          std::to_string(p.ranks) + " ranks");
    }
  }
  ASSIGN_OR_RETURN(const Json* comm, GetArray(j, "", "comm"));
  for (size_t i = 0; i < comm->size(); ++i) {
    ASSIGN_OR_RETURN(CommFit f, CommFromJson((*comm)[i], Index("comm", i)));
    p.comm.push_back(std::move(f));
  }
  return p;
}

}  // namespace

const ConfigPrices* Profile::Find(const ParallelConfig& config) const {
  for (const ConfigPrices& c : configs)
    if (c.config == config) return &c;
  return nullptr;
}

StatusOr<CommFit> FitComm(const std::string& primitive, int ranks, std::vector<CommPoint> points) {
  ASSIGN_OR_RETURN(hw::AlphaBeta ab, hw::FitAlphaBeta(points));
  return CommFit{primitive, ranks, ab.alpha_s, ab.beta_s_per_byte, std::move(points)};
}

double EvalQuadratic(const std::array<double, 3>& f, double tokens) {
  return std::max(0.0, core::EvalPolynomial(f, tokens));
}

double EvalLine(const std::array<double, 2>& f, double tokens) {
  return std::max(0.0, core::EvalPolynomial(f, tokens));
}

Json ToJson(const Profile& p) {
  Json configs = Json::array();
  for (const ConfigPrices& c : p.configs) {
    Json points = Json::array();
    for (const PricePoint& q : c.points) {
      points.push_back({{"tokens", q.tokens},
                        {"count", q.count},
                        {"fwd_s", q.fwd_s},
                        {"bwd_s", q.bwd_s},
                        {"mem_bytes", q.mem_bytes}});
    }
    configs.push_back({{"q", c.config.q},
                       {"h", c.config.h},
                       {"k", c.config.k},
                       {"points", points},
                       {"fwd_fit", c.fwd_fit},
                       {"bwd_fit", c.bwd_fit},
                       {"mem_fit", c.mem_fit}});
  }
  Json comm = Json::array();
  for (const CommFit& f : p.comm) {
    Json points = Json::array();
    for (const CommPoint& q : f.points)
      points.push_back({{"bytes", q.bytes}, {"time_s", q.time_s}});
    comm.push_back({{"primitive", f.primitive},
                    {"ranks", f.ranks},
                    {"alpha_s", f.alpha_s},
                    {"beta_s_per_byte", f.beta_s_per_byte},
                    {"points", points}});
  }
  Json j = {{"kind", kKind},
            {"version", kVersion},
            {"provenance", p.provenance},
            {"machine", p.machine},
            {"date", p.date},
            {"ranks", p.ranks},
            {"repeats", p.repeats},
            {"model",
             {{"in_channels", p.model.in_channels},
              {"hidden", p.model.hidden},
              {"heads", p.model.heads},
              {"head_dim", p.model.head_dim},
              {"layers", p.model.layers},
              {"ffn", p.model.ffn}}},
            {"step_overhead_s", p.step_overhead_s},
            {"base_bytes", p.base_bytes},
            {"usable_bytes_per_rank", p.usable_bytes_per_rank},
            {"solo_speedup", p.solo_speedup},
            {"configs", configs},
            {"comm", comm}};
  if (!p.rank_time_factors.empty()) j["rank_time_factors"] = p.rank_time_factors;
  return j;
}

StatusOr<Profile> ProfileFromJson(const Json& j, const std::string& source) {
  auto p = ParseProfile(j);
  if (!p.ok()) return p.status().WithPrefix(source);
  return p;
}

StatusOr<Profile> LoadProfile(const std::string& path) {
  ASSIGN_OR_RETURN(Json j, core::ReadJsonFile(path));
  return ProfileFromJson(j, path);
}

Status CheckProfileModel(const Profile& p, const ProfileModel& want, const std::string& source) {
  const std::pair<const char*, std::pair<int64_t, int64_t>> fields[] = {
      {"in_channels", {p.model.in_channels, want.in_channels}},
      {"hidden", {p.model.hidden, want.hidden}},
      {"heads", {p.model.heads, want.heads}},
      {"head_dim", {p.model.head_dim, want.head_dim}},
      {"layers", {p.model.layers, want.layers}},
      {"ffn", {p.model.ffn, want.ffn}}};
  for (const auto& [name, v] : fields) {
    if (v.first != v.second) {
      return core::InvalidArgument(source + ": model." + name + ": measured for " +
                                   std::to_string(v.first) + ", asked for " +
                                   std::to_string(v.second));
    }
  }
  return Status::Ok();
}

}  // namespace tessera::zellige
