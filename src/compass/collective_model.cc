#include "compass/collective_model.h"

#include <algorithm>

#include "comm/link_chunks.h"
#include "comm/paced_links.h"
#include "hw/ring_order.h"
#include "sim/flow_sim.h"

namespace tessera::compass {

core::Status CheckTpOnTopology(const hw::Topology& t, int tp) {
  if (tp < 2 || tp > t.num_devices()) {
    return core::InvalidArgument("tp: got " + std::to_string(tp) + ", must be in [2, " +
                                 std::to_string(t.num_devices()) + "] for " + t.name());
  }
  return core::Status::Ok();
}

const char* CollectiveKindName(CollectiveKind k) {
  return k == CollectiveKind::kAllGather ? "allgather" : "reducescatter";
}

namespace {

// The time of one step: its slowest flow.
double StepS(const hw::Topology& t, const std::vector<hw::Flow>& flows) {
  const std::vector<double> done = hw::ConcurrentFlowTimesS(t, flows);
  return done.empty() ? 0 : *std::max_element(done.begin(), done.end());
}

void CheckArguments(std::span<const int> order, double block_wire_bytes) {
  CHECK(block_wire_bytes >= 0) << "block_wire_bytes " << block_wire_bytes;
  std::vector<int> sorted(order.begin(), order.end());
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end())
      << "a collective's order names a device twice";
}

}  // namespace

int ModelChunkCount(const hw::Topology& t, std::span<const int> order, CollectiveAlgo algo,
                    double block_wire_bytes) {
  auto hop = [&](int from, int to) {
    const hw::Route& r = t.route(order[from], order[to]);
    return std::pair<double, double>(r.bw_bytes_per_s, r.latency_s);
  };
  return comm::CollectiveChunkCount(algo, static_cast<int>(order.size()), block_wire_bytes, hop,
                                    comm::PacedLinks::kDefaultPacketBytes);
}

CollectiveModel ModelCollective(const hw::Topology& t, std::span<const int> order,
                                CollectiveKind kind, CollectiveAlgo algo, double block_wire_bytes) {
  (void)kind;  // AllGather and ReduceScatter send the same messages in the same order
  CheckArguments(order, block_wire_bytes);
  CollectiveModel m;
  const int n = static_cast<int>(order.size());
  if (n < 2) return m;
  auto mod = [n](int a) { return ((a % n) + n) % n; };
  std::vector<double> bw;
  for (const hw::Resource& r : t.resources()) bw.push_back(r.bw_bytes_per_s);
  std::vector<sim::FlowSpec> flows;
  std::vector<int> receiver;  // ring position receiving each flow
  // The copy engine sends a rank's messages to one peer in order (a stream): each waits for
  // the previous one to that peer to leave. Messages are added in each rank's send order.
  std::vector<int> last_to(static_cast<size_t>(n) * n, -1);
  auto add = [&](int from, int to, double bytes) {
    const hw::Route& route = t.route(order[from], order[to]);
    sim::FlowSpec f;
    f.resources = route.resources;
    f.bytes = bytes;
    f.latency_s = route.latency_s;
    int& last = last_to[static_cast<size_t>(from) * n + to];
    if (last >= 0) f.tx_after = {last};
    flows.push_back(std::move(f));
    receiver.push_back(to);
    last = static_cast<int>(flows.size()) - 1;
    return last;
  };
  const int steps = n - 1;
  const int k = ModelChunkCount(t, order, algo, block_wire_bytes);
  if (algo == CollectiveAlgo::kDirect) {
    // id[s][p][j]: chunk j of the message position p sends at step s (to p - s); step s+1
    // waits for the last chunk received at step s.
    std::vector<std::vector<std::vector<int>>> id(
        n, std::vector<std::vector<int>>(n, std::vector<int>(k, -1)));
    for (int s = 1; s <= steps; ++s) {
      for (int p = 0; p < n; ++p) {
        for (int j = 0; j < k; ++j) id[s][p][j] = add(p, mod(p - s), block_wire_bytes / k);
      }
    }
    for (int s = 2; s <= steps; ++s) {
      for (int p = 0; p < n; ++p) {
        for (int j = 0; j < k; ++j) flows[id[s][p][j]].deps = {id[s - 1][mod(p + s - 1)][k - 1]};
      }
    }
  } else {
    // Rings: chunk j is sent once its input chunk arrived; each direction on its own. For
    // n = 2 the double ring's halves share the one directed edge, one after the other.
    const bool two = algo == CollectiveAlgo::kRing2;
    const double bytes = (two ? block_wire_bytes / 2 : block_wire_bytes) / k;
    // id[dir][s][p][j]
    auto index = [&](int dir, int s, int p, int j) {
      return ((static_cast<size_t>(dir) * n + s) * n + p) * k + j;
    };
    std::vector<int> id(2 * static_cast<size_t>(n) * n * k, -1);
    for (int s = 0; s < steps; ++s) {
      for (int p = 0; p < n; ++p) {
        for (int j = 0; j < k; ++j) id[index(0, s, p, j)] = add(p, mod(p + 1), bytes);
        if (two) {
          for (int j = 0; j < k; ++j) id[index(1, s, p, j)] = add(p, mod(p - 1), bytes);
        }
      }
    }
    for (int s = 1; s < steps; ++s) {
      for (int p = 0; p < n; ++p) {
        for (int j = 0; j < k; ++j) {
          flows[id[index(0, s, p, j)]].deps = {id[index(0, s - 1, mod(p - 1), j)]};
          if (two) flows[id[index(1, s, p, j)]].deps = {id[index(1, s - 1, mod(p + 1), j)]};
        }
      }
    }
  }
  auto times = sim::SimulateFlows(bw, flows);
  CHECK(times.ok()) << times.status().ToString();
  m.position_s.assign(n, 0);
  for (size_t f = 0; f < flows.size(); ++f) {
    m.position_s[receiver[f]] = std::max(m.position_s[receiver[f]], times->arrival_s[f]);
    m.total_s = std::max(m.total_s, times->arrival_s[f]);
  }
  return m;
}

CollectiveModel ModelCollectiveLockstep(const hw::Topology& t, std::span<const int> order,
                                        CollectiveKind kind, CollectiveAlgo algo,
                                        double block_wire_bytes) {
  (void)kind;  // AllGather and ReduceScatter move the same flows
  CheckArguments(order, block_wire_bytes);
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
