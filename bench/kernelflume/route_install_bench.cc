// route_install_bench: the cost of a KernelFlume route install -- build the delta (record a
// request's length, seal its tail, open a new tail on another node) and publish the new
// snapshot -- with many live requests in the table.
//
// Set-up: --nodes attention nodes and --requests live requests, each with a seeded random
// history of ranges (lengths up to --max-length, ranges of at most --range-tokens). Then
// --installs installs, each on a random request, each timed alone (steady_clock around
// RouteDelta + Build + RouteStore::Install); the table is validated in full before and after
// (exit 1 if broken). Reports p50 / p99 / max in microseconds, and the cost of a reader's
// snapshot load (RouteStore::Current) for scale. Measured on the machine it runs on.
//
// Usage: bench_route_install [--requests 1000] [--installs 10000] [--nodes 7] [--seed 1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/stats.h"
#include "kernelflume/route_delta.h"
#include "kernelflume/route_store.h"
#include "kernelflume/routing_table.h"

namespace tessera::kernelflume {
namespace {

struct Args {
  int64_t requests = 1000;
  int64_t installs = 10000;
  int32_t nodes = 7;
  int64_t max_length = 32768;
  int64_t range_tokens = 4096;
  uint64_t seed = 1;
};

bool ParseArgs(int argc, char** argv, Args& a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const long long v = std::atoll(argv[i + 1]);
    if (k == "--requests")
      a.requests = v;
    else if (k == "--installs")
      a.installs = v;
    else if (k == "--nodes")
      a.nodes = static_cast<int32_t>(v);
    else if (k == "--max-length")
      a.max_length = v;
    else if (k == "--range-tokens")
      a.range_tokens = v;
    else if (k == "--seed")
      a.seed = static_cast<uint64_t>(v);
    else
      return false;
  }
  return (argc % 2) == 1 && a.requests >= 1 && a.installs >= 1 && a.nodes >= 2 &&
         a.range_tokens >= 1 && a.max_length >= 1;
}

int Run(const Args& a) {
  core::Rng rng(a.seed);
  const int64_t capacity = a.requests * (a.max_length + a.range_tokens * 4) / a.nodes + 1;
  RouteStore store(a.range_tokens);
  {
    RouteDelta d(store.Current());
    for (int32_t n = 0; n < a.nodes; ++n) {
      if (!d.AddNode({n, "127.0.0.1:" + std::to_string(5000 + n), capacity}).ok()) return 1;
    }
    for (int64_t r = 0; r < a.requests; ++r) {
      const uint64_t id = static_cast<uint64_t>(r) * 7919 + 13;
      if (!d.AddRequest(id, static_cast<int32_t>(rng.Below(a.nodes))).ok()) return 1;
      const int64_t len = 1 + static_cast<int64_t>(rng.Below(a.max_length));
      for (int64_t at = a.range_tokens; at < len; at += a.range_tokens) {
        if (!d.SetLength(id, at).ok()) return 1;
        if (!d.Reroute(id, static_cast<int32_t>(rng.Below(a.nodes))).ok()) return 1;
      }
      if (!d.SetLength(id, len).ok()) return 1;
    }
    auto t = d.Build();
    if (!t.ok() || !store.Install(*t).ok()) {
      std::fprintf(stderr, "set-up failed: %s\n", t.status().ToString().c_str());
      return 1;
    }
  }
  if (core::Status st = Validate(*store.Current()); !st.ok()) {
    std::fprintf(stderr, "set-up table invalid: %s\n", st.ToString().c_str());
    return 1;
  }
  std::vector<int64_t> lengths(a.requests);
  for (int64_t r = 0; r < a.requests; ++r) {
    lengths[r] = store.Current()->Find(static_cast<uint64_t>(r) * 7919 + 13)->length;
  }
  using Clock = std::chrono::steady_clock;
  std::vector<double> install_us;
  install_us.reserve(a.installs);
  for (int64_t i = 0; i < a.installs; ++i) {
    const int64_t r = static_cast<int64_t>(rng.Below(a.requests));
    const uint64_t id = static_cast<uint64_t>(r) * 7919 + 13;
    const int32_t node = static_cast<int32_t>(rng.Below(a.nodes));
    lengths[r] += 1 + static_cast<int64_t>(rng.Below(8));
    const auto t0 = Clock::now();
    RouteDelta d(store.Current());
    core::Status st = d.SetLength(id, lengths[r]);
    if (st.ok()) st = d.Reroute(id, node);
    auto table = st.ok() ? d.Build() : core::StatusOr<std::shared_ptr<const RoutingTable>>(st);
    if (table.ok()) st = store.Install(*table);
    const auto t1 = Clock::now();
    if (!table.ok() || !st.ok()) {
      std::fprintf(stderr, "install %lld failed: %s\n", static_cast<long long>(i),
                   (table.ok() ? st : table.status()).ToString().c_str());
      return 1;
    }
    install_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  if (core::Status st = Validate(*store.Current()); !st.ok()) {
    std::fprintf(stderr, "table invalid after the installs: %s\n", st.ToString().c_str());
    return 1;
  }
  std::vector<double> read_ns;
  for (int i = 0; i < 10000; ++i) {
    const auto t0 = Clock::now();
    auto snap = store.Current();
    const RequestRoute* route = snap->Find(13);
    const auto t1 = Clock::now();
    if (route == nullptr) return 1;
    read_ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  int64_t ranges = 0;
  store.Current()->ForEachRequest([&](const RequestRoute& r) { ranges += r.ranges.size(); });
  std::printf(
      "Route install, measured on this machine (one thread): %lld installs on a table of "
      "%lld live requests, %lld ranges, %d attention nodes; final version %llu.\n\n",
      static_cast<long long>(a.installs), static_cast<long long>(a.requests),
      static_cast<long long>(ranges), a.nodes,
      static_cast<unsigned long long>(store.Current()->version()));
  std::printf("| what | p50 | p99 | max |\n|---|---:|---:|---:|\n");
  std::printf("| install: delta + build + publish (us) | %.2f | %.2f | %.2f |\n",
              core::Percentile(install_us, 50), core::Percentile(install_us, 99),
              *std::max_element(install_us.begin(), install_us.end()));
  std::printf("| reader: load snapshot + find route (ns) | %.0f | %.0f | %.0f |\n",
              core::Percentile(read_ns, 50), core::Percentile(read_ns, 99),
              *std::max_element(read_ns.begin(), read_ns.end()));
  return 0;
}

}  // namespace
}  // namespace tessera::kernelflume

int main(int argc, char** argv) {
  tessera::kernelflume::Args args;
  if (!tessera::kernelflume::ParseArgs(argc, argv, args)) {
    std::fprintf(stderr,
                 "usage: bench_route_install [--requests N>=1] [--installs N>=1] [--nodes N>=2] "
                 "[--max-length T] [--range-tokens T] [--seed S]\n");
    return 1;
  }
  return tessera::kernelflume::Run(args);
}
