// The link emulator's wall-clock behaviour on this machine, which tests cannot assert (a
// loaded machine delays any thread): how late paced copies finish past their modeled times,
// and whether a later flow shares a resource instead of queueing behind an earlier one.
// Each scenario runs --repeats times; a row gives the min / median / max over the repeats.
//   bench_link_timing [--repeats 7]
//   overlap:   4 copies with 30 ms latency each, submitted together: done after ~30 ms
//              (latencies overlap), never 120 ms (latency holding the resource).
//   bandwidth: 8 MiB at 200 MB/s: done after ~41.9 ms.
//   ready:     a 20 KB packet on a 1 MB/s link (21 ms) whose data were ready 30 ms before its
//              submission: delivered at once (~0 ms), not 21 ms after submission.
//   share:     a 100 KB flow starting 10 ms after a 400 KB one on a shared 5 MB/s resource
//              behind 10x faster private links: the later flow is done first (~50 ms vs ~100).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "comm/copy_engine.h"
#include "comm/futex.h"
#include "comm/in_process_communicator.h"
#include "comm/link_fabric.h"
#include "comm/paced_copier.h"
#include "comm/paced_links.h"
#include "comm/symmetric_memory.h"

namespace tc = tessera::comm;

namespace {

double Ms(int64_t ns) { return static_cast<double>(ns) * 1e-6; }

void Row(const std::string& name, std::vector<double> ms, const std::string& model) {
  std::sort(ms.begin(), ms.end());
  std::printf("| %-9s | %8.2f | %8.2f | %8.2f | %s |\n", name.c_str(), ms.front(),
              ms[ms.size() / 2], ms.back(), model.c_str());
}

double OverlapMs() {
  auto copier = tc::PacedCopier::Create(1e12, 30'000'000);
  if (!copier.ok()) return -1;
  uint8_t src[4] = {1, 2, 3, 4}, dst[4][4] = {};
  const int64_t t0 = tc::NowNs();
  tc::PacedCopier::Ticket last = 0;
  for (auto& d : dst) last = (*copier)->Submit(d, src, 4);
  (*copier)->Wait(last);
  return Ms(tc::NowNs() - t0);
}

double BandwidthMs() {
  auto copier = tc::PacedCopier::Create(200e6);
  if (!copier.ok()) return -1;
  std::vector<uint8_t> src(size_t{8} << 20, 7), dst(src.size());
  const int64_t t0 = tc::NowNs();
  (*copier)->Wait((*copier)->Submit(dst.data(), src.data(), static_cast<int64_t>(src.size())));
  return Ms(tc::NowNs() - t0);
}

void WithEngines(
    int n, const tc::PacedLinks& links, int64_t window_bytes,
    const std::function<void(tc::Communicator&, tc::SymmetricMemory&, tc::CopyEngine&)>& fn) {
  tc::RunInProcessRanks(n, [&](tc::Communicator& base) {
    auto fabric = tc::LinkFabric::Create(base, links);
    auto mem = tc::SymmetricMemory::Create(base, window_bytes);
    if (!fabric.ok() || !mem.ok()) {
      std::fprintf(stderr, "bench_link_timing: cannot set up the links\n");
      std::exit(1);
    }
    tc::CopyEngine engine(fabric->get(), base.rank());
    (void)base.Barrier();
    fn(base, **mem, engine);
    (void)base.Barrier();
  });
}

double ReadyMs() {
  tc::PacedLinks links = tc::FullMeshLinks(2, 1e6, 1'000'000);
  links.packet_bytes = 20'000;
  std::atomic<int64_t> took_ns{0};
  WithEngines(2, links, 1 << 16,
              [&](tc::Communicator& base, tc::SymmetricMemory& mem, tc::CopyEngine& engine) {
                if (base.rank() != 0) return;
                std::vector<std::byte> src(20'000, std::byte{7});
                std::atomic<uint32_t> signal{0};
                tc::CopyEngine::Put put;
                put.dst_endpoint = 1;
                put.dst = mem.segment(1);
                put.src = src.data();
                put.bytes = put.wire_bytes = 20'000;
                put.signal = &signal;
                const int64_t submitted = tc::NowNs();
                put.ready_ns = submitted - 30'000'000;
                engine.Submit(put);
                tc::WaitAtLeast(&signal, 1, tc::NowNs() + 20'000'000'000);
                took_ns = tc::NowNs() - submitted;
              });
  return Ms(took_ns.load());
}

// Returns {earlier flow's done, later flow's done} in ms after the earlier one's submission.
std::pair<double, double> ShareMs() {
  tc::PacedLinks links;
  links.num_endpoints = 3;
  links.resources = {{"a0", 50e6}, {"a1", 50e6}, {"s", 5e6}, {"x", 1e9}};
  links.routes.resize(9, tc::PacedRoute{{3}, 0});
  links.routes[0 * 3 + 2] = {{0, 2}, 0};
  links.routes[1 * 3 + 2] = {{1, 2}, 0};
  links.packet_bytes = 10'000;
  std::atomic<int64_t> start_ns{0};
  std::vector<std::atomic<int64_t>> done_ns(2);
  WithEngines(3, links, 1 << 20,
              [&](tc::Communicator& base, tc::SymmetricMemory& mem, tc::CopyEngine& engine) {
                if (base.rank() >= 2) return;
                std::vector<std::byte> src(400'000, std::byte{1});
                if (base.rank() == 0) start_ns = tc::NowNs();
                if (base.rank() == 1) tc::SleepUntilNs(tc::NowNs() + 10'000'000);
                tc::CopyEngine::Put put;
                put.dst_endpoint = 2;
                put.dst = mem.segment(2) + base.rank() * 400'000;
                put.src = src.data();
                put.bytes = put.wire_bytes = base.rank() == 0 ? 400'000 : 100'000;
                engine.Submit(put);
                engine.WaitAllDone(tc::NowNs() + 20'000'000'000);
                done_ns[base.rank()] = tc::NowNs();
              });
  return {Ms(done_ns[0] - start_ns), Ms(done_ns[1] - start_ns)};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The link emulator's wall-clock timing on this machine"};
  int repeats = 7;
  app.add_option("--repeats", repeats, "runs of each scenario")->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  std::vector<double> overlap, bandwidth, ready, earlier, later;
  int later_first = 0;
  for (int r = 0; r < repeats; ++r) {
    overlap.push_back(OverlapMs());
    bandwidth.push_back(BandwidthMs());
    ready.push_back(ReadyMs());
    const auto [e, l] = ShareMs();
    earlier.push_back(e);
    later.push_back(l);
    later_first += l < e;
  }
  std::printf("Measured on this machine, %d repeats (ms after submission)\n\n", repeats);
  std::printf("| scenario  |      min |   median |      max | modeled |\n");
  std::printf("|-----------|---------:|---------:|---------:|---------|\n");
  Row("overlap", overlap, "30 (120 if latency held the resource)");
  Row("bandwidth", bandwidth, "41.94");
  Row("ready", ready, "0 (21 if started at submission)");
  Row("share-1st", earlier, "~100");
  Row("share-2nd", later, "~50 (~100 if queued behind the first)");
  std::printf("\nthe later flow finished first in %d of %d runs\n", later_first, repeats);
  return 0;
}
