#include "xema/planner/serving_planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <numeric>
#include <set>
#include <thread>

#include "core/cpu_affinity.h"
#include "core/elapsed.h"
#include "core/stats.h"
#include "kernels/gemm.h"
#include "xema/pipeline/layout_allocator.h"
#include "xema/pipeline/mitigation_planner.h"
#include "xema/pipeline/template_check.h"
#include "xema/pressure_intervals.h"
#include "xema/serve/planned_device.h"
#include "xema/serve/serve_device.h"
#include "xema/serve/server.h"
#include "xema/static_layout.h"

namespace tessera::xema {
namespace {

using Clock = std::chrono::steady_clock;

core::Status ValidatePlannerOptions(const ServingPlannerOptions& o) {
  if (o.mix.empty()) return core::InvalidArgument("mix: got no templates, need at least one");
  std::set<std::string> labels;
  for (size_t i = 0; i < o.mix.size(); ++i) {
    if (!labels.insert(o.mix[i].label).second) {
      return core::InvalidArgument(fmt::format(
          "mix[{}]: template {} is in the mix twice; give it once with the summed weight", i,
          o.mix[i].label));
    }
  }
  if (o.budget_bytes <= 0) {
    return core::InvalidArgument(fmt::format("budget: got {}, must be > 0 bytes", o.budget_bytes));
  }
  if (o.devices < 1 || o.devices > 64) {
    return core::InvalidArgument(fmt::format("devices: got {}, must be in [1, 64]", o.devices));
  }
  if (!(o.rate_rps > 0) || o.rate_rps > 1e4) {
    return core::InvalidArgument(
        fmt::format("rate: got {}, must be in (0, 1e4] per second", o.rate_rps));
  }
  if (!(o.slo_scale > 0) || o.slo_scale > 1e6) {
    return core::InvalidArgument(
        fmt::format("slo-scale: got {}, must be in (0, 1e6]", o.slo_scale));
  }
  if (o.max_concurrency < 1 || o.max_concurrency > kMaxPlanConcurrency) {
    return core::InvalidArgument(fmt::format("max-concurrency: got {}, must be in [1, {}]",
                                             o.max_concurrency, kMaxPlanConcurrency));
  }
  if (o.timing_runs < 1 || o.timing_runs > 100) {
    return core::InvalidArgument(
        fmt::format("timing-runs: got {}, must be in [1, 100]", o.timing_runs));
  }
  if (o.queue_capacity < 1 || o.max_configurations < 1 || !(o.overhead_s <= 1e3)) {
    return core::InvalidArgument(
        "planner: queue_capacity and max_configurations must be >= 1, "
        "overhead_s <= 1e3");
  }
  return core::Status::Ok();
}

void Progress(const ServingPlannerOptions& o, const std::string& stage, int done, int total) {
  if (o.progress) o.progress(stage, done, total);
}

// Seconds of `r` run from its own arena: the median of `runs` after one warm-up.
core::StatusOr<double> TimeFromArena(DiffusionPipeline& pipeline, const DiffusionRequest& r,
                                     const TemplatePlan& plan, int runs) {
  ASSIGN_OR_RETURN(std::unique_ptr<LayoutDeviceAllocator> arena,
                   LayoutDeviceAllocator::Create(plan.expanded, plan.layout));
  std::vector<float> out(static_cast<size_t>(OutputFloats(r)));
  std::vector<double> times;
  for (int i = 0; i <= runs; ++i) {
    if (i > 0) RETURN_IF_ERROR(arena->Rearm());
    const Clock::time_point t0 = Clock::now();
    RETURN_IF_ERROR(pipeline.Run(r, out, arena.get()));
    RETURN_IF_ERROR(arena->status());
    if (i > 0) times.push_back(core::SecondsSince(t0));
  }
  return core::Median(times);
}

// Aggregate speed-up of two requests looping at once on `cpu`, each from its own arena: the
// sum over the two of solo / median run time while both ran.
core::StatusOr<double> PairSpeedupHere(DiffusionPipeline& pa, const DiffusionRequest& ra,
                                       const TemplatePlan& la, double solo_a, DiffusionPipeline& pb,
                                       const DiffusionRequest& rb, const TemplatePlan& lb,
                                       double solo_b, int cpu) {
  struct Side {
    DiffusionPipeline* pipeline;
    const DiffusionRequest* request;
    const TemplatePlan* layout;
    double solo_s;
    std::unique_ptr<LayoutDeviceAllocator> arena;
    std::vector<double> runs_s;
    core::Status status;
  };
  Side sides[2] = {{&pa, &ra, &la, solo_a, nullptr, {}, {}},
                   {&pb, &rb, &lb, solo_b, nullptr, {}, {}}};
  for (Side& s : sides) {
    ASSIGN_OR_RETURN(s.arena, LayoutDeviceAllocator::Create(s.layout->expanded, s.layout->layout));
  }
  const double window_s = std::max(0.6, 2.5 * (solo_a + solo_b));
  std::atomic<bool> stop{false};
  std::barrier start(3);
  std::vector<std::thread> threads;
  for (Side& side : sides) {
    threads.emplace_back([&, s = &side] {
      if (cpu >= 0) (void)core::PinThisThreadToCpu(cpu);
      std::vector<float> out(static_cast<size_t>(OutputFloats(*s->request)));
      // A warm-up run first (the arena's pages touched), as the timed solo runs had.
      s->status = s->pipeline->Run(*s->request, out, s->arena.get());
      if (s->status.ok()) s->status = s->arena->status();
      start.arrive_and_wait();
      while (s->status.ok() && !stop.load()) {
        s->status = s->arena->Rearm();
        const Clock::time_point t0 = Clock::now();
        if (s->status.ok()) s->status = s->pipeline->Run(*s->request, out, s->arena.get());
        if (s->status.ok()) s->status = s->arena->status();
        if (!stop.load()) s->runs_s.push_back(core::SecondsSince(t0));
      }
    });
  }
  start.arrive_and_wait();
  std::this_thread::sleep_for(std::chrono::duration<double>(window_s));
  stop.store(true);
  for (std::thread& t : threads) t.join();
  double f = 0;
  for (const Side& s : sides) {
    RETURN_IF_ERROR(s.status);
    if (s.runs_s.empty())
      return core::Internal("pair speed-up: a request did not finish in its window");
    f += s.solo_s / core::Median(s.runs_s);
  }
  return f;
}

core::StatusOr<ServingProfile> ProfileHere(const ServingPlannerOptions& o, int cpu) {
  const Clock::time_point t0 = Clock::now();
  ServingProfile p;
  p.cpu = cpu;
  HeapDeviceAllocator heap;
  std::map<std::string, std::unique_ptr<DiffusionPipeline>> pipelines;
  int64_t weights = 0;
  for (const LoadTemplate& t : o.mix) {
    if (pipelines.contains(t.request.model)) continue;
    ASSIGN_OR_RETURN(const TinyModelSpec spec, TinyModel(t.request.model));
    ASSIGN_OR_RETURN(std::unique_ptr<DiffusionPipeline> pl, DiffusionPipeline::Load(spec, heap));
    p.weight_bytes[spec.name] = pl->WeightBytes();
    weights += pl->WeightBytes();
    pipelines[spec.name] = std::move(pl);
  }
  p.region_bytes = o.budget_bytes - weights;
  if (p.region_bytes <= 0) {
    return core::InvalidArgument(fmt::format(
        "budget: got {} bytes, the mix's models' weights alone take {}: no template fits",
        o.budget_bytes, weights));
  }
  const int total = static_cast<int>(o.mix.size());
  std::vector<std::vector<std::shared_ptr<TemplatePlan>>> laid_out;  // per template, per variant
  for (int ti = 0; ti < total; ++ti) {
    const LoadTemplate& lt = o.mix[static_cast<size_t>(ti)];
    Progress(o, "profile " + lt.label, ti, total);
    TemplateProfile tp;
    tp.label = lt.label;
    tp.request = lt.request;
    tp.request.prompt = "a planner profile";
    tp.request.seed = 1;
    ASSIGN_OR_RETURN(const TinyModelSpec spec, TinyModel(tp.request.model));
    DiffusionPipeline& pipeline = *pipelines.at(spec.name);
    // The unmitigated request first: when it fits max_concurrency times, no mitigation can
    // help (exactly: its arena is the recorded layout's) and the part-2 planner is skipped.
    // Otherwise the part-2 planner at the strictest per-request limit, then its MILP at each c.
    ASSIGN_OR_RETURN(std::shared_ptr<TemplatePlan> base,
                     RecordTemplatePlan(pipeline, tp.request, 0));
    std::vector<DiffusionRequest> variants = {tp.request};
    std::vector<std::shared_ptr<TemplatePlan>> plans = {base};
    if (base->layout.arena_bytes > p.region_bytes / o.max_concurrency) {
      // Activations only (the pipeline's weights stay loaded): limits are bytes of the region.
      MitigationPlanOptions mo;
      mo.budget_bytes = p.region_bytes / o.max_concurrency;
      mo.repeats = 1;
      mo.record = [&pipeline](const DiffusionRequest& r) {
        return RecordActivations(pipeline, r, 0);
      };
      // Only the actions that act where the pressure is: no DiT option when every pressure
      // interval lies outside the denoising steps, no VAE option when none reaches the VAE.
      ASSIGN_OR_RETURN(const PressureReport pressure,
                       FindPressureIntervals(base->trace, base->expanded, mo.budget_bytes));
      bool denoise = false, vae = false;
      for (const PressureInterval& in : pressure.intervals) {
        for (Phase ph : in.phases) {
          denoise = denoise || ph == Phase::kDenoise;
          vae = vae || ph == Phase::kVae;
        }
      }
      if (!denoise) {
        mo.candidates.ffn_chunks.clear();
        mo.candidates.attention_chunks.clear();
      }
      if (!vae) {
        mo.candidates.vae_slices.clear();
        mo.candidates.vae_tiles.clear();
      }
      ASSIGN_OR_RETURN(const MitigationPlan mp, PlanMitigations(spec, tp.request, mo));
      tp.mitigation_runs = mp.runs;
      std::set<std::vector<std::string>> seen = {MitigationLabels(tp.request)};
      for (int c = 1; c <= o.max_concurrency && !mp.problem.rows.empty(); ++c) {
        MitigationProblem problem = mp.problem;
        problem.limit_bytes = p.region_bytes / c;
        ASSIGN_OR_RETURN(const MitigationChoice choice, SolveMitigation(problem));
        if (choice.shortfall_bytes > 0) continue;
        ASSIGN_OR_RETURN(DiffusionRequest v, ApplyChoice(tp.request, problem, choice.option));
        if (!seen.insert(MitigationLabels(v)).second) continue;
        ASSIGN_OR_RETURN(std::shared_ptr<TemplatePlan> plan, RecordTemplatePlan(pipeline, v, 0));
        variants.push_back(v);
        plans.push_back(std::move(plan));
      }
    }
    for (size_t v = 0; v < variants.size(); ++v) {
      TemplateVariant tv;
      tv.request = variants[v];
      tv.labels = MitigationLabels(variants[v]);
      tv.arena_bytes = plans[v]->layout.arena_bytes;
      ASSIGN_OR_RETURN(tv.solo_s, TimeFromArena(pipeline, variants[v], *plans[v], o.timing_runs));
      tp.variants.push_back(std::move(tv));
    }
    laid_out.push_back(std::move(plans));
    tp.isolated_s = tp.variants[0].solo_s;
    p.templates.push_back(std::move(tp));
  }
  p.templates_s = core::SecondsSince(t0);
  const Clock::time_point t_pairs = Clock::now();
  // Processor sharing on one core, per pair of templates: each with its fastest variant that
  // fits twice in the region (else its smallest).
  const size_t k = p.templates.size();
  std::vector<size_t> rep(k, 0);
  std::vector<std::shared_ptr<TemplatePlan>> rep_plan(k);
  for (size_t t = 0; t < k; ++t) {
    const std::vector<TemplateVariant>& vs = p.templates[t].variants;
    int best = -1;
    for (size_t v = 0; v < vs.size(); ++v) {
      if (vs[v].arena_bytes <= p.region_bytes / 2 &&
          (best < 0 || vs[v].solo_s < vs[static_cast<size_t>(best)].solo_s)) {
        best = static_cast<int>(v);
      }
    }
    if (best < 0) {
      best = 0;
      for (size_t v = 1; v < vs.size(); ++v) {
        if (vs[v].arena_bytes < vs[static_cast<size_t>(best)].arena_bytes)
          best = static_cast<int>(v);
      }
    }
    rep[t] = static_cast<size_t>(best);
    rep_plan[t] = laid_out[t][rep[t]];
  }
  // Two copies of each template are measured; a mixed pair is modeled as the geometric mean
  // of the two same-template pairs (f_ab = sqrt(f_aa f_bb); checked against measured mixed
  // pairs in docs/xema.md: within 1-3.5%).
  p.pair_speedup.assign(k, std::vector<double>(k, 1.0));
  if (o.max_concurrency > 1) {
    for (size_t a = 0; a < k; ++a) {
      Progress(o, "processor sharing", static_cast<int>(a), static_cast<int>(k));
      const TemplateVariant& va = p.templates[a].variants[rep[a]];
      DiffusionPipeline& pl = *pipelines.at(va.request.model);
      ASSIGN_OR_RETURN(p.pair_speedup[a][a],
                       PairSpeedupHere(pl, va.request, *rep_plan[a], va.solo_s, pl, va.request,
                                       *rep_plan[a], va.solo_s, cpu));
    }
    for (size_t a = 0; a < k; ++a) {
      for (size_t b = a + 1; b < k; ++b) {
        p.pair_speedup[a][b] = p.pair_speedup[b][a] =
            std::sqrt(p.pair_speedup[a][a] * p.pair_speedup[b][b]);
      }
    }
  }
  p.pairs_s = core::SecondsSince(t_pairs);
  p.profile_s = core::SecondsSince(t0);
  return p;
}

// The server's own seconds per request: an in-process server with the first template's
// fastest fitting variant planned alone answers kOverheadRequests of them one at a time; the
// median latency less the variant's solo time.
core::StatusOr<double> MeasureOverhead(const ServingProfile& p, const ServingPlannerOptions& o) {
  constexpr int kOverheadRequests = 8;
  const TemplateProfile& t = p.templates[0];
  int v = -1;
  for (size_t i = 0; i < t.variants.size(); ++i) {
    if (t.variants[i].arena_bytes <= p.region_bytes &&
        (v < 0 || t.variants[i].solo_s < t.variants[static_cast<size_t>(v)].solo_s)) {
      v = static_cast<int>(i);
    }
  }
  if (v < 0) return 0.0;  // nothing of it fits: no overhead measured
  const double solo = t.variants[static_cast<size_t>(v)].solo_s;
  Configuration c;
  c.variant.assign(p.templates.size(), -1);
  c.concurrency.assign(p.templates.size(), 1);
  c.variant[0] = v;
  ServerOptions so;
  so.budget_bytes = o.budget_bytes;
  so.serving_plan =
      std::make_shared<const ServingPlan>(MakeServingPlan(p, o, c, ConfigurationScore{}));
  so.serving_plan_source = "overhead probe";
  ASSIGN_OR_RETURN(std::unique_ptr<DiffusionServer> server, DiffusionServer::Start(so));
  LoadgenOptions lo;
  lo.url = server->url();
  lo.mix = {o.mix[0]};
  for (int i = 0; i < kOverheadRequests; ++i) lo.trace.push_back({i * (2 * solo + 0.05), 0});
  auto report = RunLoadgen(lo);
  server->Stop();
  if (!report.ok()) return report.status().WithPrefix("overhead probe");
  std::vector<double> lat;
  for (const RequestOutcome& r : report->outcomes) {
    if (r.status == 200) lat.push_back(r.latency_s);
  }
  return std::max(0.0, core::Median(lat) - solo);
}

bool Better(const ConfigurationScore& a, const ConfigurationScore& b) {
  if (a.feasible != b.feasible) return a.feasible;
  if (a.attainment != b.attainment) return a.attainment > b.attainment;
  return a.mean_latency_s < b.mean_latency_s;
}

}  // namespace

core::StatusOr<double> MeasurePairSpeedup(DiffusionPipeline& pa, const DiffusionRequest& ra,
                                          const TemplatePlan& la, double solo_a,
                                          DiffusionPipeline& pb, const DiffusionRequest& rb,
                                          const TemplatePlan& lb, double solo_b, int cpu) {
  return PairSpeedupHere(pa, ra, la, solo_a, pb, rb, lb, solo_b, cpu);
}

LoadgenOptions PlannedLoad(const ServingPlannerOptions& o) {
  LoadgenOptions lo;
  lo.mix = o.mix;
  lo.rate_rps = o.rate_rps;
  lo.arrivals = o.arrivals;
  lo.cv = o.cv;
  lo.duration_s = o.duration_s;
  lo.seed = o.seed;
  lo.slo_scale = o.slo_scale;
  return lo;
}

core::StatusOr<ServingProfile> ProfileServing(const ServingPlannerOptions& o) {
  RETURN_IF_ERROR(ValidatePlannerOptions(o));
  const int cpu = core::AllowedCpu(core::OnlineCpus() - 1);
  core::StatusOr<ServingProfile> result = core::Internal("profile did not run");
  std::thread worker([&] {
    if (cpu >= 0) (void)core::PinThisThreadToCpu(cpu);
    (void)kernels::SetBlasNumThreads(1);
    result = ProfileHere(o, cpu);
  });
  worker.join();
  if (!result.ok()) return result;
  if (o.overhead_s >= 0) {
    result->overhead_s = o.overhead_s;
  } else {
    Progress(o, "server overhead", 0, 1);
    const Clock::time_point t0 = Clock::now();
    ASSIGN_OR_RETURN(result->overhead_s, MeasureOverhead(*result, o));
    result->overhead_probe_s = core::SecondsSince(t0);
    result->profile_s += result->overhead_probe_s;
  }
  return result;
}

std::vector<Configuration> EnumerateGrid(const ServingProfile& p, int max_concurrency) {
  std::vector<Configuration> out = {Configuration{}};
  for (const TemplateProfile& t : p.templates) {
    std::vector<Configuration> next;
    for (const Configuration& base : out) {
      for (size_t v = 0; v < t.variants.size(); ++v) {
        for (int c = 1; c <= max_concurrency; ++c) {
          Configuration x = base;
          x.variant.push_back(static_cast<int>(v));
          x.concurrency.push_back(c);
          next.push_back(std::move(x));
        }
      }
    }
    out = std::move(next);
  }
  return out;
}

bool Feasible(const ServingProfile& p, const Configuration& c) {
  for (size_t t = 0; t < p.templates.size(); ++t) {
    if (c.variant[t] < 0) continue;  // not planned: the fallback serves it
    const int64_t arena = p.templates[t].variants[static_cast<size_t>(c.variant[t])].arena_bytes;
    if (arena > p.region_bytes / c.concurrency[t]) return false;
  }
  return true;
}

std::string ConfigurationLabel(const ServingProfile& p, const Configuration& c) {
  std::string s;
  for (size_t t = 0; t < p.templates.size(); ++t) {
    if (!s.empty()) s += "; ";
    if (c.variant[t] < 0) {
      s += fmt::format("t{}: fallback", t);
      continue;
    }
    const std::vector<std::string>& l =
        p.templates[t].variants[static_cast<size_t>(c.variant[t])].labels;
    s += fmt::format("t{}: {} c={}", t, l.empty() ? "off" : fmt::format("{}", fmt::join(l, ",")),
                     c.concurrency[t]);
  }
  return s;
}

ServingPlan MakeServingPlan(const ServingProfile& p, const ServingPlannerOptions& o,
                            const Configuration& c, const ConfigurationScore& score) {
  ServingPlan plan;
  plan.budget_bytes = o.budget_bytes;
  plan.devices = o.devices;
  plan.rate_rps = o.rate_rps;
  plan.slo_scale = o.slo_scale;
  plan.model_weight_bytes = p.weight_bytes;
  for (size_t t = 0; t < p.templates.size(); ++t) {
    if (c.variant[t] < 0) continue;
    const TemplateProfile& tp = p.templates[t];
    const TemplateVariant& v = tp.variants[static_cast<size_t>(c.variant[t])];
    ServingPlanEntry e;
    e.request = v.request;
    e.key = TemplateKeyString(v.request);
    e.replicas = o.devices;
    e.concurrency = c.concurrency[t];
    e.arena_bytes = v.arena_bytes;
    e.solo_s = v.solo_s;
    e.slo_s = o.slo_scale * tp.isolated_s;
    if (score.template_p50_s.size() == p.templates.size()) {
      e.p50_s = score.template_p50_s[t];
      e.p99_s = score.template_p99_s[t];
      e.attainment = score.template_attainment[t];
    }
    plan.entries.push_back(std::move(e));
  }
  return plan;
}

core::StatusOr<ConfigurationScore> ScoreConfiguration(const ServingProfile& p,
                                                      const ServingPlannerOptions& o,
                                                      const std::vector<PlannedArrival>& arrivals,
                                                      const Configuration& c) {
  ConfigurationScore score;
  const size_t nt = p.templates.size();
  score.template_p50_s.assign(nt, 0);
  score.template_p99_s.assign(nt, 0);
  score.template_attainment.assign(nt, 0);
  score.feasible = Feasible(p, c);
  if (!score.feasible) return score;
  const ServingPlan plan = MakeServingPlan(p, o, c, ConfigurationScore{});
  std::vector<int> entry_of(nt, -1);
  for (size_t t = 0, e = 0; t < nt; ++t) {
    if (c.variant[t] >= 0) entry_of[t] = static_cast<int>(e++);
  }
  std::vector<SimArrival> sim;
  std::vector<int> sim_template;
  for (const PlannedArrival& a : arrivals) {
    const auto t = static_cast<size_t>(a.template_index);
    if (entry_of[t] < 0) continue;  // unplanned: counted as a miss below
    SimArrival s;
    s.at_s = a.at_s;
    s.route = Route{RouteKind::kExact, entry_of[t]};
    s.template_index = a.template_index;
    s.work_s = p.templates[t].variants[static_cast<size_t>(c.variant[t])].solo_s;
    sim.push_back(s);
  }
  ServingSimOptions so;
  so.devices = o.devices;
  so.region_bytes = p.region_bytes;
  so.queue_capacity = o.queue_capacity;
  so.pair_speedup = p.pair_speedup;
  so.overhead_s = p.overhead_s;
  ASSIGN_OR_RETURN(const std::vector<SimRequest> out, SimulateServing(plan, so, sim));
  std::vector<std::vector<double>> lat(nt);
  std::vector<int64_t> met(nt, 0), arrived(nt, 0);
  for (const PlannedArrival& a : arrivals) ++arrived[static_cast<size_t>(a.template_index)];
  std::vector<double> all;
  int64_t met_all = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const auto t = static_cast<size_t>(sim[i].template_index);
    if (out[i].rejected) ++score.rejected;
    if (!out[i].served) {
      if (!out[i].rejected) ++score.unserved;
      continue;
    }
    lat[t].push_back(out[i].latency_s);
    all.push_back(out[i].latency_s);
    if (out[i].latency_s <= o.slo_scale * p.templates[t].isolated_s) {
      ++met[t];
      ++met_all;
    }
  }
  for (size_t t = 0; t < nt; ++t) {
    score.template_p50_s[t] = core::Percentile(lat[t], 50);
    score.template_p99_s[t] = core::Percentile(lat[t], 99);
    score.template_attainment[t] =
        arrived[t] > 0 ? static_cast<double>(met[t]) / static_cast<double>(arrived[t]) : 0;
  }
  score.attainment =
      arrivals.empty() ? 0 : static_cast<double>(met_all) / static_cast<double>(arrivals.size());
  score.p50_s = core::Percentile(all, 50);
  score.p99_s = core::Percentile(all, 99);
  score.mean_latency_s = core::Mean(all);
  return score;
}

core::StatusOr<ServingPlannerResult> PlanServing(const ServingProfile& p,
                                                 const ServingPlannerOptions& o) {
  RETURN_IF_ERROR(ValidatePlannerOptions(o));
  const Clock::time_point t0 = Clock::now();
  ServingPlannerResult result;
  ASSIGN_OR_RETURN(const std::vector<PlannedArrival> arrivals, PlanArrivals(PlannedLoad(o)));
  // Candidates per template: feasible, not dominated at the same concurrency.
  struct Candidate {
    int variant, concurrency;
  };
  std::vector<std::vector<Candidate>> cands(p.templates.size());
  for (size_t t = 0; t < p.templates.size(); ++t) {
    const std::vector<TemplateVariant>& vs = p.templates[t].variants;
    for (int c = 1; c <= o.max_concurrency; ++c) {
      for (size_t v = 0; v < vs.size(); ++v) {
        ++result.candidates;
        if (vs[v].arena_bytes > p.region_bytes / c) {
          ++result.infeasible;
          continue;
        }
        bool dominated = false;
        for (size_t w = 0; w < vs.size() && !dominated; ++w) {
          if (w == v || vs[w].arena_bytes > p.region_bytes / c) continue;
          const bool no_worse =
              vs[w].arena_bytes <= vs[v].arena_bytes && vs[w].solo_s <= vs[v].solo_s;
          const bool better = vs[w].arena_bytes < vs[v].arena_bytes || vs[w].solo_s < vs[v].solo_s;
          dominated = no_worse && (better || w < v);
        }
        if (dominated) {
          ++result.dominated;
          continue;
        }
        cands[t].push_back({static_cast<int>(v), c});
      }
    }
    if (cands[t].empty()) {
      result.unplanned.push_back(p.templates[t].label);
      cands[t].push_back({-1, 1});
    }
  }
  if (result.unplanned.size() == p.templates.size()) {
    int64_t least = 0;
    for (const TemplateProfile& t : p.templates) {
      for (const TemplateVariant& v : t.variants) {
        if (least == 0 || v.arena_bytes < least) least = v.arena_bytes;
      }
    }
    return core::InvalidArgument(fmt::format(
        "budget: got {} bytes, no template of the mix fits: {} bytes are left beside the weights, "
        "the smallest arena profiled (mitigations included) is {} bytes",
        o.budget_bytes, p.region_bytes, least));
  }
  auto score_of = [&](const Configuration& c) -> core::StatusOr<ConfigurationScore> {
    ++result.simulated;
    return ScoreConfiguration(p, o, arrivals, c);
  };
  double product = 1;
  for (const auto& c : cands) product *= static_cast<double>(c.size());
  Configuration best;
  ConfigurationScore best_score;
  bool have = false;
  auto consider = [&](const Configuration& c) -> core::Status {
    ASSIGN_OR_RETURN(const ConfigurationScore s, score_of(c));
    if (!have || Better(s, best_score)) {
      best = c;
      best_score = s;
      have = true;
    }
    return core::Status::Ok();
  };
  if (product <= static_cast<double>(o.max_configurations)) {
    std::vector<size_t> idx(cands.size(), 0);
    for (;;) {
      Configuration c;
      for (size_t t = 0; t < cands.size(); ++t) {
        c.variant.push_back(cands[t][idx[t]].variant);
        c.concurrency.push_back(cands[t][idx[t]].concurrency);
      }
      RETURN_IF_ERROR(consider(c));
      size_t t = 0;
      while (t < idx.size() && ++idx[t] == cands[t].size()) idx[t++] = 0;
      if (t == idx.size()) break;
    }
  } else {
    // Coordinate descent from each template's first candidate (its fastest at c = 1).
    Configuration c;
    for (const auto& ct : cands) {
      c.variant.push_back(ct[0].variant);
      c.concurrency.push_back(ct[0].concurrency);
    }
    RETURN_IF_ERROR(consider(c));
    for (int round = 0; round < 10; ++round) {
      const Configuration start = best;
      for (size_t t = 0; t < cands.size(); ++t) {
        for (const Candidate& k : cands[t]) {
          Configuration x = best;
          x.variant[t] = k.variant;
          x.concurrency[t] = k.concurrency;
          RETURN_IF_ERROR(consider(x));
        }
      }
      if (best.variant == start.variant && best.concurrency == start.concurrency) break;
    }
  }
  result.chosen = best;
  result.score = best_score;
  result.plan = MakeServingPlan(p, o, best, best_score);
  result.search_s = core::SecondsSince(t0);
  core::Json speedup = p.pair_speedup;
  core::Json unplanned = result.unplanned;
  result.plan.planner = {{"profile_s", p.profile_s},
                         {"search_s", result.search_s},
                         {"candidates", result.candidates},
                         {"infeasible", result.infeasible},
                         {"dominated", result.dominated},
                         {"simulated", result.simulated},
                         {"predicted_attainment", best_score.attainment},
                         {"predicted_p50_s", best_score.p50_s},
                         {"predicted_p99_s", best_score.p99_s},
                         {"pair_speedup", speedup},
                         {"overhead_s", p.overhead_s},
                         {"cpu", p.cpu},
                         {"duration_s", o.duration_s},
                         {"seed", o.seed},
                         {"unplanned", unplanned},
                         {"configuration", ConfigurationLabel(p, best)}};
  return result;
}

}  // namespace tessera::xema
