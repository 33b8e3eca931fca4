// `tessera compass topo`: a machine topology (preset or file) as the cost models see it: its
// links and capacity vertices, the best single and double rings over the first --tp devices,
// and the modeled AllGather time of a 16 MiB block with ring1, ring2 and direct. Parses, calls
// hw/topology, hw/ring_order and compass/collective_model, renders; no arithmetic here.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "cli/options.h"
#include "compass/collective_model.h"
#include "core/json_util.h"
#include "core/table.h"
#include "core/units.h"
#include "hw/ring_order.h"
#include "hw/topology.h"

namespace tessera::cli {

using core::Json;
using core::Status;

namespace {

// The block each rank contributes to the modeled AllGather.
constexpr double kBlockBytes = 16 * core::kMiB;

struct TopoArgs {
  std::string topology;
  int tp = 0;  // 0: every device
  std::string json_path;
};

std::string Us(double s) { return core::Fixed(s * 1e6, 1); }
std::string GBps(double bytes_per_s) { return core::Fixed(bytes_per_s / core::kGB, 2); }

std::string OrderNames(const hw::Topology& t, const std::vector<int>& order) {
  std::string out;
  for (int d : order) out += (out.empty() ? "" : " ") + t.device_name(d);
  return out;
}

Json RingJson(const hw::Topology& t, const hw::RingAnalysis& r) {
  Json names = Json::array();
  for (int d : r.order) names.push_back(t.device_name(d));
  return {{"order", r.order},
          {"order_names", names},
          {"bottleneck_bytes_per_s", r.bottleneck_bytes_per_s},
          {"step_latency_s", r.step_latency_s},
          {"double_ring_bytes_per_s", r.double_ring_bytes_per_s},
          {"double_ring_step_latency_s", r.double_ring_step_latency_s}};
}

void PrintLinks(const hw::Topology& t) {
  const auto& vs = t.vertices();
  const auto& ls = t.links();
  std::map<std::pair<int, int>, size_t> index;
  for (size_t l = 0; l < ls.size(); ++l) index[{ls[l].src, ls[l].dst}] = l;
  // A link whose reverse has the same kind and numbers is shown once, as duplex.
  auto twin = [&](size_t l) -> long {
    auto it = index.find({ls[l].dst, ls[l].src});
    if (it == index.end()) return -1;
    const hw::TopoLink& r = ls[it->second];
    const bool same = r.kind == ls[l].kind && r.bw_bytes_per_s == ls[l].bw_bytes_per_s &&
                      r.latency_s == ls[l].latency_s;
    return same ? static_cast<long>(it->second) : -1;
  };
  core::Table table({"src", "dst", "kind", "GB/s per dir", "latency us", "duplex"});
  for (size_t l = 0; l < ls.size(); ++l) {
    const long other = twin(l);
    if (other >= 0 && static_cast<size_t>(other) < l) continue;
    table.AddRow({vs[ls[l].src].name, vs[ls[l].dst].name, ls[l].kind, GBps(ls[l].bw_bytes_per_s),
                  Us(ls[l].latency_s), other >= 0 ? "yes" : "no"});
  }
  std::printf("links (%zu directed):\n%s", ls.size(), table.Render().c_str());
}

void PrintVertices(const hw::Topology& t) {
  core::Table table({"vertex", "kind", "GB/s (all traffic through it)", "latency us"});
  int rows = 0;
  for (const hw::TopoVertex& v : t.vertices()) {
    if (v.kind == hw::VertexKind::kDevice || (v.bw_bytes_per_s == 0 && v.latency_s == 0)) continue;
    table.AddRow({v.name, hw::VertexKindName(v.kind),
                  v.bw_bytes_per_s > 0 ? GBps(v.bw_bytes_per_s) : "non-blocking", Us(v.latency_s)});
    ++rows;
  }
  if (rows == 0) {
    std::printf("capacity vertices: none (every switch and host is non-blocking)\n");
  } else {
    std::printf("capacity vertices:\n%s", table.Render().c_str());
  }
}

Status RunTopo(const TopoArgs& a) {
  ASSIGN_OR_RETURN(hw::Topology t, hw::LoadTopology(a.topology));
  const int n = t.num_devices();
  if (a.tp > 0 && n < 2) {
    return core::InvalidArgument("--tp: got " + std::to_string(a.tp) + ", " + t.name() +
                                 " has one device (no ring)");
  }
  if (a.tp > 0) RETURN_IF_ERROR(NameFlags(compass::CheckTpOnTopology(t, a.tp), {{"tp", "--tp"}}));
  const int tp = a.tp > 0 ? a.tp : n;
  std::printf("topology %s: %d x %s, %s\n", t.name().c_str(), n, t.device().name.c_str(),
              t.provenance().c_str());
  if (!t.source().empty()) std::printf("source: %s\n", t.source().c_str());
  PrintLinks(t);
  PrintVertices(t);
  Json out = {{"topology", hw::ToJson(t)}, {"label", "modeled"}};
  if (tp < 2) {
    std::printf("one device: no ring\n");
  } else {
    std::vector<int> devices(tp);
    for (int d = 0; d < tp; ++d) devices[d] = d;
    ASSIGN_OR_RETURN(hw::RingAnalysis single, hw::BestRing(t, devices, hw::RingKind::kSingle));
    ASSIGN_OR_RETURN(hw::RingAnalysis twice, hw::BestRing(t, devices, hw::RingKind::kDouble));
    std::printf("best single ring over devices 0..%d: %s\n", tp - 1,
                OrderNames(t, single.order).c_str());
    std::printf("  bottleneck %s GB/s per direction, step latency %s us\n",
                GBps(single.bottleneck_bytes_per_s).c_str(), Us(single.step_latency_s).c_str());
    std::printf("best double ring: %s\n", OrderNames(t, twice.order).c_str());
    std::printf("  effective %s GB/s (half each way round), step latency %s us\n",
                GBps(twice.double_ring_bytes_per_s).c_str(),
                Us(twice.double_ring_step_latency_s).c_str());
    core::Table table({"algo", "ring order", "time ms", "lock-step ms", "steps"});
    Json algos = Json::array();
    for (compass::CollectiveAlgo algo : compass::AllCollectiveAlgos()) {
      const bool use_double = algo == compass::CollectiveAlgo::kRing2;
      const std::vector<int>& order = use_double ? twice.order : single.order;
      const compass::CollectiveModel m = compass::ModelCollective(
          t, order, compass::CollectiveKind::kAllGather, algo, kBlockBytes);
      const compass::CollectiveModel lock = compass::ModelCollectiveLockstep(
          t, order, compass::CollectiveKind::kAllGather, algo, kBlockBytes);
      table.AddRow({compass::CollectiveAlgoName(algo), use_double ? "double" : "single",
                    core::Fixed(m.total_s * 1e3, 3), core::Fixed(lock.total_s * 1e3, 3),
                    std::to_string(lock.step_s.size())});
      algos.push_back({{"algo", compass::CollectiveAlgoName(algo)},
                       {"order", order},
                       {"total_s", m.total_s},
                       {"lockstep_total_s", lock.total_s},
                       {"lockstep_step_s", lock.step_s}});
    }
    std::printf("AllGather of a 16 MiB block per rank over %d ranks:\n%s", tp,
                table.Render().c_str());
    std::printf(
        "(modeled, not measured; time: the runtime's chunked messages with max-min "
        "sharing; lock-step: n-1 barrier-separated steps; topology numbers: %s)\n",
        t.provenance().c_str());
    out["devices"] = devices;
    out["single_ring"] = RingJson(t, single);
    out["double_ring"] = RingJson(t, twice);
    out["allgather"] = {{"block_bytes", kBlockBytes}, {"ranks", tp}, {"algos", algos}};
  }
  if (!a.json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, out));
  return Status::Ok();
}

}  // namespace

void AddCompassTopo(CLI::App* compass, Action* action) {
  auto a = std::make_shared<TopoArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = compass->add_subcommand(
      "topo", "Show a machine topology: links, capacity vertices, best rings, modeled AllGather");
  c->add_option("--topology", a->topology, "a topology preset (a6000x8, h100x8, ...) or JSON file")
      ->required();
  paths->RecordInput("--topology", &a->topology);
  c->add_option("--tp", a->tp, "ring over devices 0..N-1 (default: every device)")
      ->transform(Integer(2, hw::kMaxTopologyDevices));
  paths->Output(c, "--json", &a->json_path, "write the topology and its analysis as JSON");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunTopo(*a); }); });
}

}  // namespace tessera::cli
