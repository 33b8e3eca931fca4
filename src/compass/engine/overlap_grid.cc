#include "compass/engine/overlap_grid.h"

#include <algorithm>

#include "compass/engine/overlap_strategy.h"
#include "core/check.h"
#include "hw/topology.h"
#include "models/tp_layer_ops.h"

namespace tessera::compass {

namespace {

const char* const kOps[] = {"qkv", "proj", "fc1", "fc2", "qkv-wgrad"};

core::StatusOr<std::vector<int64_t>> IntList(const core::Json& j, const std::string& where,
                                             const std::string& key, int64_t lo, int64_t hi) {
  ASSIGN_OR_RETURN(const core::Json* a, core::Member(j, where, key));
  const std::string path = core::JoinPath(where, key);
  if (!a->is_array() || a->empty() || a->size() > 64) {
    return core::InvalidArgument(path + ": got " + core::ShowJson(*a) +
                                 ", must be a list of 1 to 64 integers");
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < a->size(); ++i) {
    const core::Json& v = (*a)[i];
    const std::string at = path + "[" + std::to_string(i) + "]";
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
      return core::InvalidArgument(at + ": got " + core::ShowJson(v) + ", must be an integer in [" +
                                   std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    out.push_back(v.get<int64_t>());
  }
  return out;
}

core::StatusOr<std::vector<std::string>> StringList(const core::Json& j, const std::string& where,
                                                    const std::string& key) {
  ASSIGN_OR_RETURN(const core::Json* a, core::Member(j, where, key));
  const std::string path = core::JoinPath(where, key);
  if (!a->is_array() || a->empty() || a->size() > 64) {
    return core::InvalidArgument(path + ": got " + core::ShowJson(*a) +
                                 ", must be a list of 1 to 64 names");
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < a->size(); ++i) {
    if (!(*a)[i].is_string()) {
      return core::InvalidArgument(path + "[" + std::to_string(i) + "]: got " +
                                   core::ShowJson((*a)[i]) + ", must be a name");
    }
    out.push_back((*a)[i].get<std::string>());
  }
  return out;
}

}  // namespace

OverlapGrid QuickGrid() {
  OverlapGrid g;
  g.ops = {"qkv", "proj", "fc1", "fc2"};
  g.hidden = {512, 1024, 1536};
  g.tokens = {256, 512, 1024, 2048};
  g.ffn_multiple = 4;
  for (StrategyFamily f :
       {StrategyFamily::kNone, StrategyFamily::kFusedRing1, StrategyFamily::kFusedRing2,
        StrategyFamily::kFusedDirect, StrategyFamily::kTe}) {
    g.strategies.push_back(StrategyName::Of(f));
  }
  g.degrees = {1, 2, 4, 8, 16};
  return g;
}

core::StatusOr<OverlapGrid> GridFromJson(const core::Json& j, const std::string& where) {
  RETURN_IF_ERROR(core::CheckKnownKeys(j, where,
                                       {"kind", "version", "provenance", "ops", "hidden",
                                        "ffn_multiple", "tokens", "strategies", "degrees"}));
  if (j.contains("kind")) {
    ASSIGN_OR_RETURN(std::string kind, core::GetString(j, where, "kind"));
    if (kind != "compass-grid") {
      return core::InvalidArgument(core::JoinPath(where, "kind") + ": got '" + kind +
                                   "', must be compass-grid");
    }
  }
  if (j.contains("version")) {
    ASSIGN_OR_RETURN(int64_t v, core::GetIntInRange(j, where, "version", 1, 1));
    (void)v;
  }
  OverlapGrid g;
  ASSIGN_OR_RETURN(g.ops, StringList(j, where, "ops"));
  for (size_t i = 0; i < g.ops.size(); ++i) {
    bool known = false;
    for (const char* op : kOps) known = known || g.ops[i] == op;
    if (!known) {
      return core::InvalidArgument(core::JoinPath(where, "ops") + "[" + std::to_string(i) +
                                   "]: got '" + g.ops[i] +
                                   "', must be one of qkv, proj, fc1, fc2, qkv-wgrad");
    }
  }
  ASSIGN_OR_RETURN(g.hidden, IntList(j, where, "hidden", 8, 65536));
  ASSIGN_OR_RETURN(g.tokens, IntList(j, where, "tokens", 1, 1 << 20));
  if (j.contains("ffn_multiple")) {
    ASSIGN_OR_RETURN(int64_t f, core::GetIntInRange(j, where, "ffn_multiple", 1, 16));
    g.ffn_multiple = static_cast<int>(f);
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> strategies, StringList(j, where, "strategies"));
  for (size_t i = 0; i < strategies.size(); ++i) {
    auto c = StrategyName::Parse(strategies[i]);
    if (!c.ok()) {
      return core::InvalidArgument(core::JoinPath(where, "strategies") + "[" + std::to_string(i) +
                                   "]: " + c.status().message());
    }
    g.strategies.push_back(*c);
  }
  if (j.contains("degrees")) {
    ASSIGN_OR_RETURN(std::vector<int64_t> d, IntList(j, where, "degrees", 1, 64));
    for (int64_t x : d) g.degrees.push_back(static_cast<int>(x));
  }
  return g;
}

core::StatusOr<OverlapGrid> LoadGrid(const std::string& name_or_path) {
  if (name_or_path == "quick") return QuickGrid();
  ASSIGN_OR_RETURN(core::Json j, core::ReadJsonFile(name_or_path));
  return GridFromJson(j, name_or_path);
}

core::StatusOr<TpOpShape> LayerOpShape(const std::string& op, int64_t hidden, int ffn_multiple,
                                       int64_t tokens, int tp) {
  const int64_t h = hidden, f = ffn_multiple * hidden;
  // The divisibility each operator needs (its per-rank dimension); the dimensions themselves
  // come from the layer table.
  int64_t total = 0;
  const char* what = "";
  if (op == "qkv" || op == "qkv-wgrad") {
    total = 3 * h, what = "3h";
  } else if (op == "fc1" || op == "fc2") {
    total = f, what = "f";
  } else if (op == "proj") {
    total = h, what = "h";
  } else {
    return core::InvalidArgument("op: got '" + op +
                                 "', must be one of qkv, proj, fc1, fc2, qkv-wgrad");
  }
  if (tp < 1 || total % tp != 0) {
    return core::InvalidArgument(op + ": " + what + " " + std::to_string(total) +
                                 " not divisible by tp " + std::to_string(tp));
  }
  // A grid point is a sweep value, not a model: one attention head with K and V not shared
  // (qkv N = 3h / t) and an ungated MLP of f = ffn_multiple x h.
  const models::TpLayerShape layer{h,  f,     /*heads=*/1, /*kv_heads=*/1, /*gated_mlp=*/false,
                                   tp, tokens};
  const std::vector<models::TpLayerOp> table = models::MegatronTpLayerOps(layer);
  const auto it = std::find_if(table.begin(), table.end(),
                               [&](const models::TpLayerOp& o) { return o.name == op; });
  CHECK(it != table.end()) << "no operator " << op << " in the layer table";
  TpOpShape s{it->kind,   it->dims.m,
              it->dims.n, it->dims.k,
              tp,         op + " h" + std::to_string(hidden) + " M" + std::to_string(tokens)};
  core::Status st = ValidateTpOp(s);
  if (!st.ok()) return core::InvalidArgument(s.label + ": " + st.message());
  return s;
}

core::StatusOr<std::vector<TpOpShape>> GridShapes(const OverlapGrid& g, int tp) {
  std::vector<TpOpShape> out;
  for (const std::string& op : g.ops) {
    for (int64_t h : g.hidden) {
      for (int64_t m : g.tokens) {
        ASSIGN_OR_RETURN(TpOpShape s, LayerOpShape(op, h, g.ffn_multiple, m, tp));
        out.push_back(s);
      }
    }
  }
  return out;
}

core::Status CheckGridJob(const std::string& topology, const std::string& grid, int ranks,
                          int min_ranks) {
  ASSIGN_OR_RETURN(hw::Topology t, hw::LoadTopology(topology));
  if (ranks < min_ranks || ranks > t.num_devices()) {
    return core::InvalidArgument("ranks: got " + std::to_string(ranks) + ", must be in [" +
                                 std::to_string(min_ranks) + ", " +
                                 std::to_string(t.num_devices()) + "] for " + t.name());
  }
  ASSIGN_OR_RETURN(OverlapGrid g, LoadGrid(grid));
  return GridShapes(g, ranks).status();
}

}  // namespace tessera::compass
