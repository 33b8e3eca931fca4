// The collective algorithms over emulated links (link_collectives.h implements them,
// compass/collective_model.h models them): their names and the constants both sides share.
// Header-only, so a cost model can name them without linking the runtime. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::comm {

// ring1: single ring (Flux/NCCL); ring2: double ring, half each way (Compass); direct: pull
// from rank+s at step s (PyTorch async TP).
enum class LinkAlgo { kRing1, kRing2, kDirect };

inline const char* LinkAlgoName(LinkAlgo a) {
  switch (a) {
    case LinkAlgo::kRing1:
      return "ring1";
    case LinkAlgo::kRing2:
      return "ring2";
    case LinkAlgo::kDirect:
      return "direct";
  }
  return "?";
}

// Every algorithm, in the order above.
inline std::vector<LinkAlgo> AllLinkAlgos() {
  return {LinkAlgo::kRing1, LinkAlgo::kRing2, LinkAlgo::kDirect};
}

// InvalidArgument "algo: got 'x', must be one of ring1, ring2, direct".
inline core::StatusOr<LinkAlgo> ParseLinkAlgo(const std::string& name) {
  std::string all;
  for (LinkAlgo a : AllLinkAlgos()) {
    if (name == LinkAlgoName(a)) return a;
    all += (all.empty() ? "" : ", ") + std::string(LinkAlgoName(a));
  }
  return core::InvalidArgument("algo: got '" + name + "', must be one of " + all);
}

}  // namespace tessera::comm
