// The grid of a `tessera compass bench` run: which TP operators (tp_op.h) at which shapes,
// which strategies (overlap_strategy.h) and which decomposition degrees to sweep.
//
// Grid file (JSON; every field validated, an unknown one refused, messages name field and
// value):
//   {"kind": "compass-grid", "version": 1,
//    "ops": ["qkv", "proj", "fc1", "fc2", "qkv-wgrad"],   // layer operators (below)
//    "hidden": [512, 1024, 1536],                           // h
//    "ffn_multiple": 4,                                     // f = ffn_multiple x h
//    "tokens": [256, 512, 1024, 2048],                      // M, all ranks' tokens
//    "strategies": ["none", "fused-ring1", "fused-ring2", "fused-direct", "te"],
//    "degrees": [1, 2, 4, 8, 16]}                           // decomp:D swept where feasible
// Operators: five of one Megatron layer's (models/tp_layer_ops.h, the one table of their
// dimensions), at hidden h, an ungated MLP of f = ffn_multiple x h and one attention head
// without shared K/V: qkv (AG, K = h, N = 3h/t), fc1 (AG, K = h, N = f/t), proj (RS, K = h/t,
// N = h), fc2 (RS, K = f/t, N = h), qkv-wgrad (wgrad, K = h, N = 3h/t). Configurations are
// the cross product ops x hidden x tokens in that order.
// The hidden sizes and token counts are sweep values, deliberately no model's (the LLMs of
// data/models/*.json have 4096 hidden and up): the paper grid's axes scaled down so that one
// CPU core per emulated rank runs every strategy of a configuration in seconds.
// The built-in "quick" grid is examples/compass/quick-grid.json's content: 4 ops x 3 hidden x
// 4 tokens = 48 configurations.
#pragma once

#include <string>
#include <vector>

#include "compass/strategy_name.h"
#include "compass/tp_op.h"
#include "core/json_util.h"
#include "core/status.h"

namespace tessera::compass {

struct OverlapGrid {
  std::vector<std::string> ops;
  std::vector<int64_t> hidden, tokens;
  int ffn_multiple = 4;
  std::vector<StrategyName> strategies;
  std::vector<int> degrees;
};

// The built-in quick grid.
OverlapGrid QuickGrid();
// From a grid file's JSON; `where` prefixes messages (the file name).
core::StatusOr<OverlapGrid> GridFromJson(const core::Json& j, const std::string& where);
// "quick" or a file path.
core::StatusOr<OverlapGrid> LoadGrid(const std::string& name_or_path);

// The operator shape of layer op `op` (a name above): InvalidArgument naming the op, or a
// dimension not divisible by tp ("proj: h 1000 not divisible by tp 8").
core::StatusOr<TpOpShape> LayerOpShape(const std::string& op, int64_t hidden, int ffn_multiple,
                                       int64_t tokens, int tp);

// Every configuration of the grid at TP `tp`, in order; the first invalid one's error.
core::StatusOr<std::vector<TpOpShape>> GridShapes(const OverlapGrid& g, int tp);

// What a job over a grid checks before MPI starts (so bad input is one line, not one per
// rank): the topology loads, `ranks` is in [min_ranks, its devices], the grid loads and its
// shapes are valid at TP = ranks.
core::Status CheckGridJob(const std::string& topology, const std::string& grid, int ranks,
                          int min_ranks);

}  // namespace tessera::compass
