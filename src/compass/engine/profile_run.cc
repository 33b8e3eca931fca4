#include "compass/engine/profile_run.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <thread>

#include "comm/futex.h"
#include "compass/collective_model.h"
#include "compass/degree_model.h"
#include "compass/engine/collective_bench.h"
#include "compass/engine/link_runtime.h"
#include "compass/engine/overlap_context.h"
#include "compass/engine/overlap_summary.h"
#include "compass/engine/selector_eval.h"
#include "core/rng.h"
#include "core/stats.h"

namespace tessera::compass {

namespace {

constexpr int kMaxContentionCollectives = 1000;

// The operators' fits and the classes' models from the decomposition runs.
core::Status FitModels(const OverlapBench& b, CompassProfile* p) {
  std::map<std::string, std::vector<DegreeSample>> closed;
  std::map<std::string, std::vector<PipelineSample>> pipeline;
  for (const OverlapConfigResult& c : b.configs) {
    const std::map<int, double> t = DecompositionTimes(c);
    ProfiledOperator o;
    o.label = c.shape.label;
    o.op = TpOpKindName(c.shape.kind);
    o.m = c.shape.m;
    o.n = c.shape.n;
    o.k = c.shape.k;
    o.t_by_d = t;
    const char* cls = OperatorClassOf(c.shape.kind);
    const std::vector<DegreeSample> ds = DegreeSamplesOf(c);
    closed[cls].insert(closed[cls].end(), ds.begin(), ds.end());
    const std::vector<PipelineSample> ps = PipelineSamplesOf(c);
    pipeline[cls].insert(pipeline[cls].end(), ps.begin(), ps.end());
    auto choice = FitAndChooseDegree(t);
    if (choice.ok()) {
      o.fit = choice->fit;
      o.d_star = choice->d_star;
    } else {
      o.d_star = t.empty() ? 1 : t.begin()->first;
    }
    p->operators.push_back(std::move(o));
  }
  for (const auto& [cls, samples] : closed) {
    ASSIGN_OR_RETURN(DegreeClassModel cm, FitDegreeClass(samples));
    ASSIGN_OR_RETURN(PipelineModel pm, FitPipelineModel(pipeline[cls]));
    p->classes[cls] = ProfiledClass{cm, pm};
  }
  std::vector<const OverlapConfigResult*> all;
  for (const OverlapConfigResult& c : b.configs) all.push_back(&c);
  ASSIGN_OR_RETURN(p->overheads, FitOverheadTable(all));
  return core::Status::Ok();
}

// Step 4 of profile_run.h.
core::Status MeasureContention(comm::Communicator& world, const hw::Topology& topology,
                               const runtime::TimeScale& scale, const ProfileRunConfig& config,
                               ContentionFigure* out) {
  const int n = world.size();
  const int64_t count = config.contention_block_wire_bytes / 2;  // fp32 paced as bf16
  ASSIGN_OR_RETURN(LinkRuntime rt, StartLinkRuntime(world, topology, scale,
                                                    comm::LinkCollectives::AllGatherWindowBytes(
                                                        n, count, comm::DType::kF32),
                                                    config.wake_lead_ns));
  OverlapContext ctx(world, rt.single.get(), rt.dual.get());
  ctx.compute().set_mode(runtime::ComputeMode::kReal);
  const int64_t m = config.contention_m, nn = config.contention_n, k = config.contention_k;
  core::Rng rng(17 + world.rank());
  std::vector<float> a(m * k), w(k * nn), c(m * nn), send(count), recv(n * count);
  for (float& x : a) x = static_cast<float>(rng.Uniform(-1, 1));
  for (float& x : w) x = static_cast<float>(rng.Uniform(-1, 1));
  for (float& x : send) x = static_cast<float>(rng.Uniform(-1, 1));
  auto gemm = [&]() -> core::StatusOr<double> {
    const int64_t t0 = comm::NowNs();
    RETURN_IF_ERROR(ctx.Gemm(false, m, nn, k, a.data(), k, w.data(), nn, false, c.data(), nn));
    return static_cast<double>(comm::NowNs() - t0) * 1e-9;
  };
  auto start_together = [&]() -> core::Status {
    ASSIGN_OR_RETURN(int64_t start, rt.barrier->Arrive(2'000'000, 600.0));
    comm::SleepUntilNs(start);
    return core::Status::Ok();
  };
  // Warm-up and the collective count that covers twice the slowest rank's GEMM.
  RETURN_IF_ERROR(gemm().status());
  ASSIGN_OR_RETURN(double first, gemm());
  std::vector<double> firsts(n);
  RETURN_IF_ERROR(world.AllGather(std::span<const double>(&first, 1), std::span<double>(firsts)));
  const double slowest = *std::max_element(firsts.begin(), firsts.end());
  std::vector<int> ring1_devices;
  for (int r : rt.ring1.order) ring1_devices.push_back(rt.devices[r]);
  const double coll_wall_s =
      ModelCollective(topology, ring1_devices, CollectiveKind::kAllGather, comm::LinkAlgo::kRing1,
                      static_cast<double>(config.contention_block_wire_bytes))
          .total_s *
      scale.scale;
  const int collectives =
      std::clamp(static_cast<int>(std::ceil(2 * slowest / std::max(coll_wall_s, 1e-9))) + 1, 2,
                 kMaxContentionCollectives);

  std::vector<double> alone, overlapped;
  for (int rep = 0; rep < config.repeats; ++rep) {
    RETURN_IF_ERROR(start_together());
    ASSIGN_OR_RETURN(double t_alone, gemm());
    alone.push_back(t_alone);
    RETURN_IF_ERROR(start_together());
    core::Status comm_status = core::Status::Ok();
    std::thread comm_thread([&] {
      for (int i = 0; i < collectives && comm_status.ok(); ++i) {
        comm_status = rt.single->AllGather(
            comm::ConstBuffer{send.data(), count, comm::DType::kF32},
            comm::MutableBuffer{recv.data(), n * count, comm::DType::kF32}, comm::LinkAlgo::kRing1);
      }
    });
    auto t_over = gemm();
    comm_thread.join();
    RETURN_IF_ERROR(comm_status);
    if (!t_over.ok()) return t_over.status();
    overlapped.push_back(*t_over);
    if (world.rank() == 0 && config.progress) config.progress(rep + 1, config.repeats);
  }
  std::vector<double> all_alone(alone.size() * n), all_over(overlapped.size() * n);
  RETURN_IF_ERROR(world.AllGather(std::span<const double>(alone), std::span<double>(all_alone)));
  RETURN_IF_ERROR(
      world.AllGather(std::span<const double>(overlapped), std::span<double>(all_over)));
  out->m = m;
  out->n = nn;
  out->k = k;
  out->alone_s = core::Median(all_alone) / scale.scale;
  out->overlapped_s = core::Median(all_over) / scale.scale;
  return core::Status::Ok();
}

}  // namespace

core::StatusOr<CompassProfile> RunCompassProfile(comm::Communicator& world,
                                                 const hw::Topology& topology,
                                                 const runtime::TimeScale& scale,
                                                 const ProfileRunConfig& config) {
  if (world.size() < 2) {
    return core::InvalidArgument(
        "compass profile: needs at least 2 ranks (at TP 1 there is no communication to "
        "overlap)");
  }
  if (config.repeats < 1 || config.repeats > 1000) {
    return core::InvalidArgument("repeats: got " + std::to_string(config.repeats) +
                                 ", must be in [1, 1000]");
  }
  const bool lead = world.rank() == 0;
  auto stage = [&](const char* name) {
    if (lead && config.stage) config.stage(name);
  };
  CompassProfile p;
  p.topology = topology.name();
  p.ranks = world.size();
  p.time_scale = scale.scale;
  p.time_scale_source = scale.source;
  p.machine = config.machine;
  p.repeats = config.repeats;

  stage("strategies");
  OverlapBenchConfig o;
  o.shapes = config.shapes;
  for (StrategyFamily f : SelectorFixedFamilies()) o.strategies.push_back(StrategyName::Of(f));
  o.degrees = config.degrees;
  o.compute = runtime::ComputeMode::kReal;
  o.repeats = config.repeats;
  o.wake_lead_ns = config.wake_lead_ns;
  o.progress = config.progress;
  ASSIGN_OR_RETURN(OverlapBench b, RunOverlapBench(world, topology, scale, o, config.config_done));
  std::map<runtime::GemmShape, double> gemms;
  for (const OverlapConfigResult& c : b.configs)
    for (const auto& [g, s] : c.gemms) gemms[g] = s;
  for (const auto& [g, s] : gemms) p.gemms.push_back({g.trans_a, g.m, g.n, g.k, s});
  RETURN_IF_ERROR(FitModels(b, &p));

  stage("links");
  CollectiveBenchConfig lc;
  lc.block_wire_bytes = config.link_block_wire_bytes;
  lc.repeats = config.repeats;
  lc.wake_lead_ns = config.wake_lead_ns;
  lc.progress = config.progress;
  ASSIGN_OR_RETURN(CollectiveBench links, RunCollectiveBench(world, topology, scale, lc));
  for (const CollectiveRow& r : links.rows) {
    p.links.push_back({CollectiveKindName(r.kind), comm::LinkAlgoName(r.algo), r.block_wire_bytes,
                       r.median_s, r.modeled_s});
  }

  stage("contention");
  RETURN_IF_ERROR(MeasureContention(world, topology, scale, config, &p.contention));
  return p;
}

}  // namespace tessera::compass
