// `tessera compass links`: measures the link emulator on this machine against a topology's
// numbers and every emulated collective next to its model (compass/links_report.h).
//
//   tessera compass links [--ranks 4] [--topology a6000x8|FILE] [--sizes-kib 256,1024,4096]
//       [--repeats 7] [--time-scale S] [--json F]
//
// Typed at a shell it re-runs itself under mpiexec with --ranks ranks (cli/mpi_launch.h).
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/compass/compass_options.h"
#include "cli/mpi_launch.h"
#include "cli/options.h"
#include "cli/rank_progress.h"
#include "compass/engine/links_report.h"
#include "core/json_util.h"
#include "core/table.h"
#include "core/units.h"
#include "hw/topology.h"

namespace tessera::cli {

using core::Status;

namespace {

struct LinksArgs {
  int ranks = 4;
  std::string topology = "a6000x8";
  std::vector<int64_t> sizes_kib = {256, 1024, 4096};
  int repeats = 7;
  int64_t probe_bytes = 64 * 1024;
  int probe_repeats = 9;
  double time_scale = 0;  // 0: measure
  std::string json_path;
  double op_timeout_s = 600;
};

std::string Pct(double x) { return (x >= 0 ? "+" : "") + core::Fixed(100 * x, 1) + "%"; }

void Print(const compass::LinksReport& r) {
  const compass::CollectiveBench& b = r.bench;
  std::printf("topology %s (%s), %d ranks on devices 0..%d\n", r.topology.c_str(),
              r.provenance.c_str(), b.ranks, b.ranks - 1);
  std::printf("time scale s = %.1f (%s); emulated bandwidth = bandwidth / s, latency x s\n",
              r.scale.scale, r.scale.source.c_str());
  core::Table lt({"probe (measured, emulated)", "lead us", "expected ms", "single ms", "error",
                  "duplex fwd", "duplex rev", "shared flows", "copy CPU"});
  for (const compass::LinkProbe& p : r.probes) {
    for (const compass::LinkAccuracy* acc : {&p.raw, &p.calibrated}) {
      const compass::LinkAccuracy& a = *acc;
      lt.AddRow({p.label, core::Fixed(static_cast<double>(a.wake_lead_ns) / 1e3, 0),
                 core::Fixed(a.single.expected_s * 1e3, 3), core::Fixed(a.single.median_s * 1e3, 3),
                 Pct(a.single.error()), Pct(a.duplex_forward.error()),
                 Pct(a.duplex_reverse.error()),
                 a.has_shared
                     ? core::Fixed(a.shared_share_a, 3) + " / " + core::Fixed(a.shared_share_b, 3)
                     : "-",
                 core::Fixed(100 * a.engine_cpu_fraction, 1) + "%"});
    }
  }
  std::printf("%s", lt.Render().c_str());
  std::printf(
      "(each pair: first with the copy engines' start-up wake-up lead, then with the "
      "lead calibrated on empty messages, %.0f us, used below)\n",
      static_cast<double>(r.calibrated_lead_ns) / 1e3);
  std::printf("ring1 order %s, ring2 order %s\n", core::Json(b.ring1_order).dump().c_str(),
              core::Json(b.ring2_order).dump().c_str());
  core::Table ct({"collective", "block", "algo", "measured ms (min-max)", "modeled ms", "error",
                  "bound ms", "x bound", "GB/s per rank"});
  for (const compass::CollectiveRow& row : b.rows) {
    ct.AddRow({compass::CollectiveKindName(row.kind),
               core::Fixed(static_cast<double>(row.block_wire_bytes) / core::kKiB, 0) + " KiB",
               comm::LinkAlgoName(row.algo),
               core::Fixed(row.median_s * 1e3, 3) + " (" + core::Fixed(row.min_s * 1e3, 3) + "-" +
                   core::Fixed(row.max_s * 1e3, 3) + ")",
               core::Fixed(row.modeled_s * 1e3, 3), Pct(row.error()),
               core::Fixed(row.bound.bound_s * 1e3, 3), core::Fixed(row.over_bound(), 3),
               core::Fixed(row.bandwidth_bytes_per_s(b.ranks) / core::kGB, 2)});
  }
  std::printf("%s", ct.Render().c_str());
  std::printf(
      "device times: measured = emulated wall time / s (median of the runs); modeled = "
      "the message model on the topology; bound = max(T_bw, T_chain, T_port) from the topology "
      "alone "
      "(docs/compass.md)\n");
  for (compass::CollectiveKind k :
       {compass::CollectiveKind::kAllGather, compass::CollectiveKind::kReduceScatter}) {
    std::string line;
    for (const compass::CollectiveRow& row : b.rows) {
      if (row.kind != k || row.algo != comm::LinkAlgo::kRing1) continue;
      const double x = compass::Ring2Speedup(b, k, row.block_wire_bytes);
      if (x > 0) {
        line += " " + core::Fixed(static_cast<double>(row.block_wire_bytes) / core::kKiB, 0) +
                " KiB " + core::Fixed(x, 2) + "x";
      }
    }
    if (!line.empty()) {
      std::printf("ring2 / ring1 speed-up, %s:%s\n", compass::CollectiveKindName(k), line.c_str());
    }
  }
  std::printf("copy threads: at most %.1f%% of a core; wake-up lead %.0f us\n",
              100 * b.engine_cpu_fraction, static_cast<double>(b.wake_lead_ns) / 1e3);
}

Status LinksOnWorld(const LinksArgs& a, comm::Communicator& world) {
  ASSIGN_OR_RETURN(hw::Topology topology, hw::LoadTopology(a.topology));
  compass::LinksOptions o;
  if (a.time_scale > 0) o.time_scale = a.time_scale;
  o.probe_bytes = a.probe_bytes;
  o.probe_repeats = a.probe_repeats;
  o.bench.repeats = a.repeats;
  o.bench.block_wire_bytes.clear();
  for (int64_t k : a.sizes_kib) o.bench.block_wire_bytes.push_back(k * 1024);
  RankZeroProgress progress(world, "collectives");
  o.bench.progress = std::ref(progress);
  ASSIGN_OR_RETURN(compass::LinksReport report,
                   NameFlags(compass::RunLinksCheck(world, topology, o), {{"ranks", "--ranks"}}));
  progress.Done();
  if (world.rank() != 0) return Status::Ok();
  if (!a.json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, ToJson(report)));
  Print(report);
  std::fflush(stdout);
  // A row below its physical bound means the emulator delivered early: the run fails.
  return compass::CheckAgainstBound(report.bench);
}

Status RunLinks(const LinksArgs& a) {
  // Checked before MPI starts, so a bad topology is one line, not n.
  ASSIGN_OR_RETURN(hw::Topology topology, hw::LoadTopology(a.topology));
  RETURN_IF_ERROR(NameFlags(compass::CheckLinksRanks(topology, a.ranks), {{"ranks", "--ranks"}}));
  return RunMpiJob(a.ranks, a.op_timeout_s,
                   [&](comm::Communicator& world) { return LinksOnWorld(a, world); });
}

}  // namespace

void AddCompassLinks(CLI::App* compass, Action* action) {
  auto a = std::make_shared<LinksArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = compass->add_subcommand(
      "links",
      "Measure the link emulator (paced transfers, duplex, sharing, copy-thread CPU) and the "
      "ring1/ring2/direct AllGather and ReduceScatter on a topology, next to their models");
  c->add_option("--ranks", a->ranks, "MPI ranks = devices 0..N-1 (relaunches under mpiexec)")
      ->transform(Integer(2, 64))
      ->capture_default_str();
  AddTopologyOption(c, &a->topology, paths.get());
  ListOption(c, "--sizes-kib", &a->sizes_kib, "block sizes per rank, KiB on the wire",
             Integer(1, 1 << 20));
  c->add_option("--repeats", a->repeats, "runs per (collective, size, algorithm), interleaved")
      ->transform(Integer(1, 1000))
      ->capture_default_str();
  c->add_option("--probe-bytes", a->probe_bytes, "wire bytes of the single-transfer probes")
      ->transform(Integer(512, 1 << 30))
      ->capture_default_str();
  c->add_option("--probe-repeats", a->probe_repeats, "repeats of each probe")
      ->transform(Integer(1, 1000))
      ->capture_default_str();
  AddEmulatorOptions(c, &a->time_scale, &a->op_timeout_s);
  paths->Output(c, "--json", &a->json_path, "write the report as JSON");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunLinks(*a); }); });
}

}  // namespace tessera::cli
