// Small clusters and models for tests: numbers chosen so that costs can be worked by hand.
#pragma once

#include <cstdint>
#include <vector>

#include "core/units.h"
#include "hw/cluster.h"
#include "models/dit_spec.h"
#include "workload/batch.h"

namespace tessera::zellige::testing {

// `nodes` x `per_node` ranks; 1 GFLOP/s at efficiency 1; intra 1 GB/s, inter 0.1 GB/s,
// no latency; 4 GiB memory, all usable.
inline hw::Cluster TinyCluster(int nodes, int per_node) {
  hw::Cluster c;
  c.name = "tiny";
  c.provenance = "test";
  c.device = {"toy", {.bf16 = 1e9}, 1e9, 4 * core::kGiB, 1.0, 1.0, 0, 0, {}};
  c.nodes = nodes;
  c.ranks_per_node = per_node;
  c.intra = {"intra", 1 * core::kGB, 0};
  c.inter = {"inter", 100 * core::kMB, 0};
  return c;
}

// d = 64, 4 heads, 1 layer, FFN 128, no text tokens, 2 bytes per element.
inline models::DitModel TinyModel(int layers = 1) {
  return models::DitModel{"tiny", 64, 4, layers, 128, 0, 2};
}

// A batch of sequences given by token count only (ids 0, 1, ...).
inline workload::Batch MakeBatch(const std::vector<int64_t>& tokens) {
  workload::Batch b;
  b.name.assign(1, 't');
  for (size_t i = 0; i < tokens.size(); ++i) {
    workload::Sequence s;
    s.id = static_cast<int>(i);
    s.tokens = tokens[i];
    b.sequences.push_back(s);
  }
  return b;
}

}  // namespace tessera::zellige::testing
