#include "xema/planner/deployed_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "core/parse_number.h"
#include "xema/analytic_trace.h"
#include "xema/caching_allocator.h"

namespace tessera::xema {
namespace {

constexpr int64_t kTilePixels = 512;  // diffusers' AutoencoderKL tile_sample_min_size

struct Named {
  const char* name;
  DeployedKind kind;
  bool takes_degree;
};

constexpr Named kNames[] = {
    {"diffusers-model-offload", DeployedKind::kModelOffload, false},
    {"diffusers-sequential-offload", DeployedKind::kSequentialOffload, false},
    {"vae-slicing-tiling", DeployedKind::kVaeSlicingTiling, false},
    {"xdit-fixed-sp", DeployedKind::kXditFixedSp, true},
    {"fsdp-sharded-weights", DeployedKind::kFsdpShardedWeights, true},
};

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool UsesSp(const DeployedConfig& c) {
  return c.kind == DeployedKind::kXditFixedSp || c.kind == DeployedKind::kFsdpShardedWeights;
}

// Template op index of each op name (prologue, body, epilogue in order).
std::map<std::string, int> OpIndex(const MemoryTrace& t) {
  std::map<std::string, int> at;
  int i = 0;
  for (const auto* ops : {&t.prologue, &t.body, &t.epilogue}) {
    for (const TraceOp& op : *ops) at.emplace(op.name, i++);
  }
  return at;
}

TraceOp& OpAt(MemoryTrace& t, int i) {
  const int p = static_cast<int>(t.prologue.size()), s = static_cast<int>(t.body.size());
  if (i < p) return t.prologue[static_cast<size_t>(i)];
  if (i < p + s) return t.body[static_cast<size_t>(i - p)];
  return t.epilogue[static_cast<size_t>(i - p - s)];
}

// The op a weight tensor serves: "<op>.w" names its op, the embeddings serve dit.embed; -1 for
// the VAE decoder (every epilogue op).
int UseOp(const std::map<std::string, int>& at, const TraceTensor& w) {
  if (w.name == "dit.embeddings.w") return at.at("dit.embed");
  const std::string op = w.name.substr(0, w.name.size() - 2);
  const auto it = at.find(op);
  return it == at.end() ? -1 : it->second;
}

// A weight turned into a transient copy live over ops [alloc, free] (template indices).
void Transient(TraceTensor& x, int alloc, int free) {
  x.kind = TensorKind::kWorkspace;
  x.alloc_op = alloc;
  x.free_op = free;
  x.free_step = -1;
}

// enable_model_cpu_offload: each phase's component on the device for its phase only; the moves
// (H2D of the next, D2H of the previous) at the phase boundaries.
void ModelOffload(MemoryTrace& t, double host_bps) {
  const int p = static_cast<int>(t.prologue.size()), s = static_cast<int>(t.body.size());
  const int e = static_cast<int>(t.epilogue.size());
  int last_text = 0;
  for (int i = 0; i < p; ++i)
    if (t.prologue[static_cast<size_t>(i)].phase == Phase::kText) last_text = i;
  double bytes[3] = {0, 0, 0};  // text, denoise, vae
  for (TraceTensor& x : t.tensors) {
    if (x.kind != TensorKind::kWeight) continue;
    bytes[static_cast<int>(x.phase)] += static_cast<double>(x.bytes);
    switch (x.phase) {
      case Phase::kText:
        Transient(x, 0, last_text);
        break;
      case Phase::kDenoise:
        Transient(x, last_text + 1, p + s - 1);
        break;
      case Phase::kVae:
        Transient(x, p + s, p + s + e - 1);
        break;
    }
  }
  OpAt(t, 0).time_s += bytes[0] / host_bps;
  OpAt(t, last_text + 1).time_s += (bytes[0] + bytes[1]) / host_bps;
  OpAt(t, p + s).time_s += (bytes[1] + bytes[2]) / host_bps;
  OpAt(t, p + s + e - 1).time_s += bytes[2] / host_bps;
}

// enable_sequential_cpu_offload: a layer's weights copied in when it runs, dropped after.
void SequentialOffload(MemoryTrace& t, double host_bps) {
  const auto at = OpIndex(t);
  const int first_vae = static_cast<int>(t.prologue.size() + t.body.size());
  const int last_vae = first_vae + static_cast<int>(t.epilogue.size()) - 1;
  for (TraceTensor& x : t.tensors) {
    if (x.kind != TensorKind::kWeight) continue;
    const int op = UseOp(at, x);
    if (op < 0) {
      Transient(x, first_vae, last_vae);
      OpAt(t, first_vae).time_s += static_cast<double>(x.bytes) / host_bps;
    } else {
      Transient(x, op, op);
      OpAt(t, op).time_s += static_cast<double>(x.bytes) / host_bps;
    }
  }
}

// FSDP FULL_SHARD over d: a resident shard of every weight, the gathered layer live from the op
// before its own (prefetch) through its own; an op takes max(compute, its gather).
void FsdpSharded(MemoryTrace& t, int d, double link_bps) {
  const auto at = OpIndex(t);
  const int p = static_cast<int>(t.prologue.size());
  const int first_vae = p + static_cast<int>(t.body.size());
  const int last_vae = first_vae + static_cast<int>(t.epilogue.size()) - 1;
  std::vector<TraceTensor> shards;
  for (TraceTensor& x : t.tensors) {
    if (x.kind != TensorKind::kWeight) continue;
    TraceTensor shard = x;
    shard.name += ".shard";
    shard.bytes = AlignBytes(CeilDiv(x.bytes, d));
    shards.push_back(shard);
    const double gather_s = static_cast<double>(x.bytes) * (d - 1) / d / link_bps;
    const int op = UseOp(at, x);
    if (op < 0) {
      Transient(x, first_vae, last_vae);
      OpAt(t, first_vae).time_s = std::max(OpAt(t, first_vae).time_s, gather_s);
      continue;
    }
    // A body op's prefetch stays in its step (body tensors cannot start in another phase).
    const bool first_of_phase = op == 0 || op == p;
    Transient(x, first_of_phase ? op : op - 1, op);
    OpAt(t, op).time_s = std::max(OpAt(t, op).time_s, gather_s);
  }
  for (TraceTensor& s : shards) {
    s.id = static_cast<int64_t>(t.tensors.size());
    t.tensors.push_back(std::move(s));
  }
}

}  // namespace

std::vector<std::string> DeployedConfigNames() {
  std::vector<std::string> names;
  for (const Named& n : kNames)
    names.push_back(n.takes_degree ? fmt::format("{}[:D]", n.name) : n.name);
  return names;
}

std::string DeployedConfigName(const DeployedConfig& c) {
  for (const Named& n : kNames) {
    if (n.kind != c.kind) continue;
    return n.takes_degree ? fmt::format("{}:{}", n.name, c.degree) : n.name;
  }
  return "?";
}

core::StatusOr<DeployedConfig> ParseDeployedConfig(const std::string& text, int devices) {
  const size_t colon = text.find(':');
  const std::string base = text.substr(0, colon);
  for (const Named& n : kNames) {
    if (base != n.name) continue;
    DeployedConfig c;
    c.kind = n.kind;
    c.degree = n.takes_degree ? devices : 1;
    if (colon != std::string::npos) {
      if (!n.takes_degree) break;
      auto d = core::ParseInteger(text.substr(colon + 1), 1, 64);
      if (!d.ok()) {
        return core::InvalidArgument(
            fmt::format("policy {}: the degree {}", text, d.status().message()));
      }
      c.degree = static_cast<int>(*d);
    }
    if (devices < 1 || devices % c.degree != 0) {
      return core::InvalidArgument(
          fmt::format("policy {}: the degree must divide the {} devices", text, devices));
    }
    return c;
  }
  return core::InvalidArgument(fmt::format("policy: got '{}', must be one of {}", text,
                                           fmt::join(DeployedConfigNames(), ", ")));
}

std::vector<DeployedConfig> AllDeployedConfigs(int devices) {
  std::vector<DeployedConfig> out = {{DeployedKind::kModelOffload, 1},
                                     {DeployedKind::kSequentialOffload, 1},
                                     {DeployedKind::kVaeSlicingTiling, 1},
                                     {DeployedKind::kXditFixedSp, devices}};
  if (devices >= 2) out.push_back({DeployedKind::kFsdpShardedWeights, devices});
  return out;
}

core::StatusOr<MemoryTrace> DeployedTrace(const DeployedConfig& c, const DiffusionRequest& request,
                                          const ModeledDevice& device) {
  DiffusionRequest plain = request;
  plain.offload = OffloadSet{};
  plain.ffn_chunks = 1;
  plain.vae_tiles = 1;
  if (c.kind == DeployedKind::kVaeSlicingTiling) {
    plain.vae_tiles =
        std::clamp<int64_t>(CeilDiv(std::max(plain.width, plain.height), kTilePixels), 1, 64);
  }
  ASSIGN_OR_RETURN(MemoryTrace t,
                   AnalyticTrace(ToAnalyticRequest(plain, UsesSp(c) ? c.degree : 1, device)));
  const double host_bps = c.host_bytes_per_s > 0 ? c.host_bytes_per_s : device.host_bytes_per_s;
  switch (c.kind) {
    case DeployedKind::kModelOffload:
      ModelOffload(t, host_bps);
      break;
    case DeployedKind::kSequentialOffload:
      SequentialOffload(t, host_bps);
      break;
    case DeployedKind::kFsdpShardedWeights:
      if (c.degree > 1) FsdpSharded(t, c.degree, device.link_bytes_per_s);
      break;
    case DeployedKind::kVaeSlicingTiling:
    case DeployedKind::kXditFixedSp:
      break;
  }
  RETURN_IF_ERROR(Validate(t).WithPrefix(DeployedConfigName(c)));
  return t;
}

core::StatusOr<DeployedTemplate> ModelDeployedTemplate(const DeployedConfig& c,
                                                       const DiffusionRequest& request,
                                                       const ModeledDevice& device) {
  ASSIGN_OR_RETURN(const MemoryTrace t, DeployedTrace(c, request, device));
  DeployedTemplate d;
  d.sp_degree = UsesSp(c) ? c.degree : 1;
  ASSIGN_OR_RETURN(const ExpandedTrace x, Expand(t));
  const ReplayReport replay = ReplayTrace(x, AllocatorPolicy{});
  d.device_bytes = replay.stats.peak_reserved_bytes;
  d.live_peak_bytes = LowerBoundBytes(x);
  d.fits = d.device_bytes <= device.memory_bytes;
  d.solo_s = RequestSeconds(t);
  if (c.kind != DeployedKind::kVaeSlicingTiling && c.kind != DeployedKind::kXditFixedSp) {
    // The same request with every weight resident and no mitigation: what the moves add.
    ASSIGN_OR_RETURN(const MemoryTrace base,
                     DeployedTrace({DeployedKind::kXditFixedSp, d.sp_degree}, request, device));
    d.weight_transfer_s = std::max(0.0, d.solo_s - RequestSeconds(base));
  }
  return d;
}

}  // namespace tessera::xema
