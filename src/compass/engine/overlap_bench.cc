#include "compass/engine/overlap_bench.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "comm/futex.h"
#include "compass/engine/link_runtime.h"
#include "compass/engine/overlap_strategy.h"
#include "compass/engine/run_timing.h"
#include "compass/plan.h"
#include "core/stats.h"

namespace tessera::compass {

namespace {

constexpr double kCheckTolerance = 1e-5;
constexpr int kMaxSweepDegree = 16;

runtime::GemmShape WholeGemm(const TpOpShape& s) {
  return s.kind == TpOpKind::kAllGatherWgrad ? runtime::GemmShape{true, s.k, s.n, s.m}
                                             : runtime::GemmShape{false, s.m, s.n, s.k};
}

// The choices run on one configuration: the named strategies, then the degree sweep.
core::StatusOr<std::vector<StrategyChoice>> ChoicesFor(const TpOpShape& s,
                                                       const OverlapBenchConfig& config) {
  std::vector<StrategyChoice> out;
  auto has = [&](const StrategyName& id) {
    for (const StrategyChoice& c : out)
      if (c.id == id) return true;
    return false;
  };
  for (const StrategyName& id : config.strategies) {
    const StrategyChoice c = ChoiceOf(id);
    if (TakesDegree(c.id.family)) {
      core::Status st = ValidateDegree(s, c.degree());
      if (!st.ok()) return core::InvalidArgument(s.label + ": " + st.message());
    }
    if (!has(c.id)) out.push_back(c);
  }
  for (int d : config.degrees) {
    if (d > kMaxSweepDegree || !ValidateDegree(s, d).ok()) continue;
    const StrategyName id = StrategyName::Decomp(d);
    if (has(id)) continue;
    out.push_back(ChoiceOf(id));
  }
  return out;
}

// What a bench runs: each configuration's strategy choices, the runs in all (for progress)
// and the largest collective window.
struct BenchPlan {
  std::vector<std::vector<StrategyChoice>> choices;
  int64_t window = 1;
  int total = 0;
};

core::StatusOr<BenchPlan> PlanBench(const OverlapBenchConfig& config, int n) {
  if (config.shapes.empty()) return core::InvalidArgument("overlap bench: no configurations");
  if (config.repeats < 0 || config.repeats > 1000) {
    return core::InvalidArgument("repeats: got " + std::to_string(config.repeats) +
                                 ", must be in [0, 1000]");
  }
  if (config.repeats == 0 && !config.check) {
    return core::InvalidArgument("overlap bench: repeats 0 without check measures nothing");
  }
  if (config.compute == runtime::ComputeMode::kRecord) {
    return core::InvalidArgument("overlap bench: compute must be real or modeled");
  }
  BenchPlan plan;
  for (const TpOpShape& s : config.shapes) {
    RETURN_IF_ERROR(ValidateTpOp(s));
    if (s.tp != n) {
      return core::InvalidArgument(s.label + ": tp " + std::to_string(s.tp) + " on " +
                                   std::to_string(n) + " ranks");
    }
    ASSIGN_OR_RETURN(std::vector<StrategyChoice> c, ChoicesFor(s, config));
    if (c.empty()) return core::InvalidArgument(s.label + ": no strategy to run");
    int timed = 0;
    for (const StrategyChoice& x : c) timed += x.entry->timed ? 1 : 0;
    plan.total += static_cast<int>(c.size()) * (config.check ? 2 : 1) + timed * config.repeats;
    plan.choices.push_back(std::move(c));
    plan.window = std::max(plan.window, OverlapWindowBytes(s));
  }
  return plan;
}

// The state the phases of every configuration share on this rank.
class BenchRunner {
 public:
  BenchRunner(comm::Communicator& world, LinkRuntime& rt, const OverlapBenchConfig& config,
              int total)
      : world_(world),
        rt_(rt),
        ctx_(world, rt.single.get(), rt.dual.get()),
        config_(config),
        total_(total) {}

  comm::Communicator& world() { return world_; }
  LinkRuntime& rt() { return rt_; }
  OverlapContext& ctx() { return ctx_; }

  void Tick() {
    ++done_;
    if (world_.rank() == 0 && config_.progress) config_.progress(done_, total_);
  }
  // Every rank starts a run at one instant (untimed runs too, so no rank races ahead).
  core::StatusOr<int64_t> StartTogether(int64_t delay_ns) {
    ASSIGN_OR_RETURN(int64_t start, rt_.barrier->Arrive(delay_ns, 600.0));
    comm::SleepUntilNs(start);
    return start;
  }

 private:
  comm::Communicator& world_;
  LinkRuntime& rt_;
  OverlapContext ctx_;
  const OverlapBenchConfig& config_;
  int total_ = 0, done_ = 0;
};

// 1. Record every strategy's GEMM shapes (collectives run, GEMMs do not) into used[k]; rank 0
// times them (and the whole GEMM) alone while the others sleep in the futex barrier.
core::Status RecordAndProfileGemms(BenchRunner& run, const TpOpShape& s,
                                   const std::vector<StrategyChoice>& cs, const OpBuffers& io,
                                   std::vector<std::vector<runtime::GemmShape>>* used,
                                   runtime::GemmProfile* profile) {
  run.ctx().compute().set_mode(runtime::ComputeMode::kRecord);
  used->assign(cs.size(), {});  // each strategy's GEMMs, in order
  std::vector<runtime::GemmShape> shapes;
  for (size_t k = 0; k < cs.size(); ++k) {
    RETURN_IF_ERROR(run.StartTogether(0).status());
    RETURN_IF_ERROR(RunStrategy(run.ctx(), cs[k], s, io));
    (*used)[k] = run.ctx().compute().TakeRecorded();
    shapes.insert(shapes.end(), (*used)[k].begin(), (*used)[k].end());
    run.Tick();
  }
  shapes.push_back(WholeGemm(s));
  std::sort(shapes.begin(), shapes.end());
  shapes.erase(std::unique(shapes.begin(), shapes.end()), shapes.end());
  double count = static_cast<double>(shapes.size());
  RETURN_IF_ERROR(run.world().AllReduceSum(std::span<double>(&count, 1)));
  if (count != static_cast<double>(shapes.size()) * run.world().size()) {
    return core::Internal(s.label + ": the ranks ran different GEMM shapes");
  }
  return ProfileGemmsOnRankZero(run.world(), *run.rt().barrier, shapes, 1.0, profile);
}

// The modeled side of a configuration: GEMM times from `profile`, collective times from the
// topology's model, one run per strategy (not yet timed).
OverlapConfigResult ModeledResult(const hw::Topology& topology, const OverlapBench& out,
                                  const OverlapBenchConfig& config, const TpOpShape& s,
                                  const std::vector<StrategyChoice>& cs,
                                  const std::vector<std::vector<runtime::GemmShape>>& used,
                                  const runtime::GemmProfile& profile, double scale) {
  OverlapConfigResult result;
  result.shape = s;
  result.gemm_s = profile.at(WholeGemm(s)) / scale;
  for (const auto& [g, wall_s] : profile) result.gemms.push_back({g, wall_s / scale});
  const double block_wire = 2.0 * static_cast<double>(s.shard_rows()) *
                            (s.kind == TpOpKind::kGemmReduceScatter ? s.n : s.k);
  const CollectiveTimer model =
      OperatorCollectiveTimer(topology, out.ring1_order, out.ring2_order, s.kind);
  auto model_ring1 = [&](double wire_bytes) { return model(comm::LinkAlgo::kRing1, wire_bytes); };
  result.modeled_collective_s = model_ring1(block_wire);
  for (comm::LinkAlgo a :
       {comm::LinkAlgo::kRing1, comm::LinkAlgo::kRing2, comm::LinkAlgo::kDirect}) {
    result.modeled_collective_by_algo[a] = model(a, block_wire);
  }
  for (size_t k = 0; k < cs.size(); ++k) {
    OverlapRun r;
    r.strategy = cs[k].name();
    r.degree = cs[k].degree();
    r.timed = cs[k].entry->timed && config.repeats > 0;
    for (const runtime::GemmShape& g : used[k]) r.compute_s += profile.at(g) / scale;
    if (r.degree > 0) r.part_collective_s = model_ring1(block_wire / r.degree);
    result.runs.push_back(r);
  }
  return result;
}

// 2. --check: real compute, every strategy against the single-process reference `ref`; each
// run's worst relative error over the ranks, Internal above the tolerance.
core::Status CheckStrategies(BenchRunner& run, const TpOpShape& s,
                             const std::vector<StrategyChoice>& cs, const OpBuffers& io,
                             const std::vector<float>& ref, std::vector<float>* y,
                             OverlapConfigResult* result) {
  const int n = run.world().size();
  run.ctx().compute().set_mode(runtime::ComputeMode::kReal);
  std::vector<double> errors(cs.size());
  for (size_t k = 0; k < cs.size(); ++k) {
    std::fill(y->begin(), y->end(), std::numeric_limits<float>::quiet_NaN());
    RETURN_IF_ERROR(run.StartTogether(0).status());
    RETURN_IF_ERROR(RunStrategy(run.ctx(), cs[k], s, io));
    ASSIGN_OR_RETURN(errors[k], RelativeError(*y, ref));
    if (!std::isfinite(errors[k])) errors[k] = 1e30;
    run.Tick();
  }
  std::vector<double> all(errors.size() * n);
  RETURN_IF_ERROR(run.world().AllGather(std::span<const double>(errors), std::span<double>(all)));
  for (size_t k = 0; k < cs.size(); ++k) {
    double worst = 0;
    int worst_rank = 0;
    for (int r = 0; r < n; ++r) {
      if (all[r * cs.size() + k] > worst) {
        worst = all[r * cs.size() + k];
        worst_rank = r;
      }
    }
    result->runs[k].rel_error = worst;
    if (worst > kCheckTolerance) {
      return core::Internal(s.label + ": strategy " + cs[k].name() + " differs from the " +
                            "single-process GEMM on rank " + std::to_string(worst_rank) + " by " +
                            std::to_string(worst) + " (relative, tolerance 1e-5)");
    }
  }
  return core::Status::Ok();
}

// 3. Timed rounds, strategies interleaved: each timed run's median, spread, min and max.
core::Status TimeStrategies(BenchRunner& run, const OverlapBenchConfig& config, const TpOpShape& s,
                            const std::vector<StrategyChoice>& cs, const OpBuffers& io,
                            const runtime::GemmProfile& profile, double scale,
                            OverlapConfigResult* result) {
  run.ctx().compute().set_mode(config.compute);
  run.ctx().compute().set_profile(&profile);
  std::vector<size_t> timed;
  for (size_t k = 0; k < cs.size(); ++k)
    if (result->runs[k].timed) timed.push_back(k);
  if (config.compute == runtime::ComputeMode::kReal && !config.check) {
    for (size_t k : timed) {  // warm-up: the first real run touches every buffer
      RETURN_IF_ERROR(run.StartTogether(0).status());
      RETURN_IF_ERROR(RunStrategy(run.ctx(), cs[k], s, io));
    }
  }
  std::vector<double> begin_ns, end_ns;
  for (int rep = 0; rep < config.repeats; ++rep) {
    for (size_t k : timed) {
      ASSIGN_OR_RETURN(int64_t start, run.StartTogether(2'000'000));
      const int64_t b = comm::NowNs();
      RETURN_IF_ERROR(RunStrategy(run.ctx(), cs[k], s, io));
      end_ns.push_back(static_cast<double>(comm::NowNs() - start));
      begin_ns.push_back(static_cast<double>(b - start));
      run.Tick();
    }
  }
  ASSIGN_OR_RETURN(std::vector<double> t, GatherRunTimesS(run.world(), begin_ns, end_ns, scale));
  for (size_t j = 0; j < timed.size(); ++j) {
    std::vector<double> per;
    for (int rep = 0; rep < config.repeats; ++rep) per.push_back(t[rep * timed.size() + j]);
    OverlapRun& r = result->runs[timed[j]];
    r.median_s = core::Median(per);
    // The medians of the even and of the odd rounds: how far one median moves.
    std::vector<double> even, odd;
    for (size_t i = 0; i < per.size(); ++i) (i % 2 == 0 ? even : odd).push_back(per[i]);
    r.cv = core::Mean(per) > 0 ? core::StdDev(per) / core::Mean(per) : 0;
    if (!even.empty() && !odd.empty() && r.median_s > 0) {
      r.half_spread = std::fabs(core::Median(even) - core::Median(odd)) / r.median_s;
    }
    r.min_s = *std::min_element(per.begin(), per.end());
    r.max_s = *std::max_element(per.begin(), per.end());
  }
  return core::Status::Ok();
}

}  // namespace

std::optional<StrategyName> StrategyOf(const OverlapRun& r) {
  auto id = StrategyName::Parse(r.strategy);
  if (!id.ok()) return std::nullopt;
  return *id;
}

const OverlapRun* OverlapConfigResult::Find(const std::string& strategy) const {
  for (const OverlapRun& r : runs)
    if (r.strategy == strategy) return &r;
  return nullptr;
}

core::StatusOr<OverlapBench> RunOverlapBench(comm::Communicator& world,
                                             const hw::Topology& topology,
                                             const runtime::TimeScale& scale,
                                             const OverlapBenchConfig& config,
                                             const OverlapConfigDone& config_done) {
  const int n = world.size(), me = world.rank();
  ASSIGN_OR_RETURN(const BenchPlan plan, PlanBench(config, n));
  ASSIGN_OR_RETURN(LinkRuntime rt,
                   StartLinkRuntime(world, topology, scale, plan.window, config.wake_lead_ns));
  BenchRunner run(world, rt, config, plan.total);

  OverlapBench out;
  out.topology = topology.name();
  out.ranks = n;
  out.scale = scale;
  out.compute = config.compute;
  out.checked = config.check;
  out.repeats = config.repeats;
  for (int r : rt.ring1.order) out.ring1_order.push_back(rt.devices[r]);
  for (int r : rt.ring2.order) out.ring2_order.push_back(rt.devices[r]);

  std::vector<float> x, w, y, ref;
  for (size_t ci = 0; ci < config.shapes.size(); ++ci) {
    const TpOpShape& s = config.shapes[ci];
    const std::vector<StrategyChoice>& cs = plan.choices[ci];
    TpOpInputs(s, config.seed + ci, me, &x, &w);
    y.assign(static_cast<size_t>(s.y_count()), 0.0f);
    const OpBuffers io{x.data(), w.data(), y.data()};

    std::vector<std::vector<runtime::GemmShape>> used;
    runtime::GemmProfile profile;
    RETURN_IF_ERROR(RecordAndProfileGemms(run, s, cs, io, &used, &profile));
    OverlapConfigResult result =
        ModeledResult(topology, out, config, s, cs, used, profile, scale.scale);
    if (config.check) {
      ASSIGN_OR_RETURN(ref, TpOpReference(s, config.seed + ci, me));
      RETURN_IF_ERROR(CheckStrategies(run, s, cs, io, ref, &y, &result));
    }
    if (config.repeats > 0) {
      RETURN_IF_ERROR(TimeStrategies(run, config, s, cs, io, profile, scale.scale, &result));
    }
    out.configs.push_back(std::move(result));
    if (me == 0 && config_done) {
      config_done(static_cast<int>(ci), static_cast<int>(config.shapes.size()), out.configs.back());
    }
  }
  return out;
}

core::Json ToJson(const OverlapBench& b) {
  core::Json configs = core::Json::array();
  for (const OverlapConfigResult& c : b.configs) {
    core::Json runs = core::Json::array();
    for (const OverlapRun& r : c.runs) {
      core::Json j = {{"strategy", r.strategy}, {"timed", r.timed}};
      if (r.degree > 0) j["degree"] = r.degree;
      j["profiled_compute_s"] = r.compute_s;
      if (r.degree > 0) j["modeled_part_collective_s"] = r.part_collective_s;
      if (r.timed) {
        j["measured_median_s"] = r.median_s;
        j["measured_min_s"] = r.min_s;
        j["measured_max_s"] = r.max_s;
        j["half_spread"] = r.half_spread;
        j["cv"] = r.cv;
      }
      if (r.rel_error >= 0) j["rel_error"] = r.rel_error;
      runs.push_back(j);
    }
    core::Json by_algo = core::Json::object();
    for (const auto& [a, t] : c.modeled_collective_by_algo) by_algo[comm::LinkAlgoName(a)] = t;
    configs.push_back({{"label", c.shape.label},
                       {"op", TpOpKindName(c.shape.kind)},
                       {"m", c.shape.m},
                       {"n", c.shape.n},
                       {"k", c.shape.k},
                       {"tp", c.shape.tp},
                       {"gemm_s", c.gemm_s},
                       {"modeled_collective_s", c.modeled_collective_s},
                       {"modeled_collective_by_algo", by_algo},
                       {"runs", runs}});
  }
  return {{"topology", b.topology},
          {"ranks", b.ranks},
          {"time_scale", b.scale.scale},
          {"time_scale_source", b.scale.source},
          {"compute", runtime::ComputeModeName(b.compute)},
          {"compute_note", b.compute == runtime::ComputeMode::kModeled
                               ? "emulated compute: each GEMM sleeps for its profiled time"
                               : "real GEMMs, one thread per rank"},
          {"checked", b.checked},
          {"repeats", b.repeats},
          {"ring1_order", b.ring1_order},
          {"ring2_order", b.ring2_order},
          {"times", "device seconds: measured = emulated wall time / time_scale"},
          {"configs", configs}};
}

}  // namespace tessera::compass
