#include "compass/collective_model.h"

#include <algorithm>

#include "hw/ring_order.h"

namespace tessera::compass {

const char* CollectiveKindName(CollectiveKind k) {
  return k == CollectiveKind::kAllGather ? "allgather" : "reducescatter";
}

const char* CollectiveAlgoName(CollectiveAlgo a) {
  switch (a) {
    case CollectiveAlgo::kRing1:
      return "ring1";
    case CollectiveAlgo::kRing2:
      return "ring2";
    case CollectiveAlgo::kDirect:
      return "direct";
  }
  return "ring1";
}

std::vector<CollectiveAlgo> AllCollectiveAlgos() {
  return {CollectiveAlgo::kRing1, CollectiveAlgo::kRing2, CollectiveAlgo::kDirect};
}

core::StatusOr<CollectiveAlgo> ParseCollectiveAlgo(const std::string& name) {
  std::string all;
  for (CollectiveAlgo a : AllCollectiveAlgos()) {
    if (name == CollectiveAlgoName(a)) return a;
    all += (all.empty() ? "" : ", ") + std::string(CollectiveAlgoName(a));
  }
  return core::InvalidArgument("algo: got '" + name + "', must be one of " + all);
}

namespace {

// The time of one step: its slowest flow.
double StepS(const hw::Topology& t, const std::vector<hw::Flow>& flows) {
  const std::vector<double> done = hw::ConcurrentFlowTimesS(t, flows);
  return done.empty() ? 0 : *std::max_element(done.begin(), done.end());
}

}  // namespace

CollectiveModel ModelCollective(const hw::Topology& t, std::span<const int> order,
                                CollectiveKind kind, CollectiveAlgo algo, double block_wire_bytes) {
  (void)kind;  // AllGather and ReduceScatter move the same flows
  CHECK(block_wire_bytes >= 0) << "block_wire_bytes " << block_wire_bytes;
  std::vector<int> sorted(order.begin(), order.end());
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end())
      << "a collective's order names a device twice";
  CollectiveModel m;
  const int n = static_cast<int>(order.size());
  if (n < 2) return m;
  std::vector<hw::Flow> flows;
  if (algo == CollectiveAlgo::kDirect) {
    for (int s = 1; s < n; ++s) {
      flows.clear();
      for (int p = 0; p < n; ++p) flows.push_back({order[(p + s) % n], order[p], block_wire_bytes});
      m.step_s.push_back(StepS(t, flows));
    }
  } else {
    for (int p = 0; p < n; ++p) {
      if (algo == CollectiveAlgo::kRing1) {
        flows.push_back({order[p], order[(p + 1) % n], block_wire_bytes});
      } else {
        flows.push_back({order[p], order[(p + 1) % n], block_wire_bytes / 2});
        flows.push_back({order[p], order[(p + n - 1) % n], block_wire_bytes / 2});
      }
    }
    m.step_s.assign(n - 1, StepS(t, flows));  // every ring step moves the same flows
  }
  for (double s : m.step_s) m.total_s += s;
  return m;
}

}  // namespace tessera::compass
