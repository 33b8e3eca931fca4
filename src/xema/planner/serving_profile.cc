#include "xema/planner/serving_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <set>
#include <thread>

#include "comm/in_process_communicator.h"
#include "core/cpu_affinity.h"
#include "core/elapsed.h"
#include "core/stats.h"
#include "kernels/gemm.h"
#include "xema/pipeline/layout_allocator.h"
#include "xema/pipeline/mitigation_planner.h"
#include "xema/pipeline/template_check.h"
#include "xema/planner/serving_planner.h"
#include "xema/pressure_intervals.h"
#include "xema/serve/planned_device.h"
#include "xema/serve/server.h"

namespace tessera::xema {
namespace {

using Clock = std::chrono::steady_clock;

void Progress(const ServingPlannerOptions& o, const std::string& stage, int done, int total) {
  if (o.progress) o.progress(stage, done, total);
}

// Seconds of `r` run over the d = pipelines.size() members (d = 1: on one device; else
// sequence-parallel), one thread each, pinned to the core device m of the server uses, each
// member from its own arena of plans[m]: member 0's median of `runs` after one warm-up (it
// decodes last).
core::StatusOr<double> TimeFromArenas(const std::vector<DiffusionPipeline*>& pipelines,
                                      const DiffusionRequest& r,
                                      const std::vector<std::shared_ptr<TemplatePlan>>& plans,
                                      int runs, const std::vector<int>& device_cpus) {
  const int d = static_cast<int>(pipelines.size());
  std::vector<core::Status> status(static_cast<size_t>(d));
  std::vector<double> times;
  comm::RunInProcessRanks(d, [&](comm::Communicator& world) {
    const int m = world.rank();
    core::Status& st = status[static_cast<size_t>(m)];
    (void)kernels::SetBlasNumThreads(1);
    if (m < static_cast<int>(device_cpus.size()) && device_cpus[static_cast<size_t>(m)] >= 0) {
      (void)core::PinThisThreadToCpu(device_cpus[static_cast<size_t>(m)]);
    }
    const SpMember sp{&world, m};
    auto arena = LayoutDeviceAllocator::Create(plans[static_cast<size_t>(m)]->expanded,
                                               plans[static_cast<size_t>(m)]->layout);
    if (!arena.ok()) {
      st = arena.status();
      return;
    }
    std::vector<float> out(m == 0 ? static_cast<size_t>(OutputFloats(r)) : 0);
    for (int i = 0; i <= runs && st.ok(); ++i) {
      if (i > 0) st = (*arena)->Rearm();
      const Clock::time_point t0 = Clock::now();
      if (st.ok()) st = pipelines[static_cast<size_t>(m)]->Run(r, out, arena->get(), &sp);
      if (st.ok()) st = (*arena)->status();
      if (m == 0 && i > 0) times.push_back(core::SecondsSince(t0));
    }
  });
  for (int m = 0; m < d; ++m) {
    if (!status[static_cast<size_t>(m)].ok()) {
      return status[static_cast<size_t>(m)].WithPrefix(fmt::format("sp member {} of {}", m, d));
    }
  }
  return core::Median(times);
}

// The SP degrees tried on this host: powers of two from 2 up to max_sp_degree that divide the
// devices and the model's heads, at most one device (core) each.
std::vector<int> SpDegrees(const ServingPlannerOptions& o, const TinyModelSpec& spec,
                           const std::vector<int>& device_cpus) {
  std::vector<int> out;
  const int most = std::min({o.devices, o.max_sp_degree, static_cast<int>(device_cpus.size())});
  for (int d = 2; d <= most; d *= 2) {
    if (o.devices % d == 0 && spec.dit.num_heads % d == 0) out.push_back(d);
  }
  return out;
}

// The mix's models, each loaded once from one heap, plus the replicas the other SP members
// run on (replicas[name][m - 1] is member m's).
struct LoadedModels {
  std::map<std::string, std::unique_ptr<DiffusionPipeline>> pipelines;
  std::map<std::string, std::vector<std::unique_ptr<DiffusionPipeline>>> replicas;
};

// Loads every model of the mix (and its SP replicas) from `heap`, records each model's weight
// bytes in p->weight_bytes and returns the weights' total bytes.
core::StatusOr<int64_t> LoadMixModels(const ServingPlannerOptions& o,
                                      const std::vector<int>& device_cpus,
                                      runtime::HeapDeviceAllocator& heap, LoadedModels* models,
                                      ServingProfile* p) {
  int64_t weights = 0;
  for (const LoadTemplate& t : o.mix) {
    if (models->pipelines.contains(t.request.model)) continue;
    ASSIGN_OR_RETURN(const TinyModelSpec spec, TinyModel(t.request.model));
    ASSIGN_OR_RETURN(std::unique_ptr<DiffusionPipeline> pl, DiffusionPipeline::Load(spec, heap));
    p->weight_bytes[spec.name] = pl->WeightBytes();
    weights += pl->WeightBytes();
    models->pipelines[spec.name] = std::move(pl);
    const std::vector<int> sp = SpDegrees(o, spec, device_cpus);
    for (int m = 1; m < (sp.empty() ? 1 : sp.back()); ++m) {
      ASSIGN_OR_RETURN(std::unique_ptr<DiffusionPipeline> r, DiffusionPipeline::Load(spec, heap));
      models->replicas[spec.name].push_back(std::move(r));
    }
  }
  return weights;
}

// One template's variants as they are found: the requests (the first `plain` of them
// unbatched, single-device) and, per variant of the profile, its recorded plan.
struct VariantPlans {
  std::vector<DiffusionRequest> variants;
  std::vector<std::shared_ptr<TemplatePlan>> plans;
};

// The unmitigated request does not fit max_concurrency times: the part-2 planner at the
// strictest per-request limit, then its MILP at each concurrency c; appends each distinct
// mitigated request that fits (and its recorded plan) to *vp.
core::Status AddMitigatedVariants(const ServingPlannerOptions& o, const TinyModelSpec& spec,
                                  DiffusionPipeline& pipeline, const TemplatePlan& base,
                                  int64_t region_bytes, TemplateProfile* tp, VariantPlans* vp) {
  // Activations only (the pipeline's weights stay loaded): limits are bytes of the region.
  MitigationPlanOptions mo;
  mo.budget_bytes = region_bytes / o.max_concurrency;
  mo.repeats = 1;
  mo.record = [&pipeline](const DiffusionRequest& r) { return RecordActivations(pipeline, r, 0); };
  // Only the actions that act where the pressure is: no DiT option when every pressure
  // interval lies outside the denoising steps, no VAE option when none reaches the VAE.
  ASSIGN_OR_RETURN(const PressureReport pressure,
                   FindPressureIntervals(base.trace, base.expanded, mo.budget_bytes));
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
  ASSIGN_OR_RETURN(const MitigationPlan mp, PlanMitigations(spec, tp->request, mo));
  tp->mitigation_runs = mp.runs;
  std::set<std::vector<std::string>> seen = {MitigationLabels(tp->request)};
  for (int c = 1; c <= o.max_concurrency && !mp.problem.rows.empty(); ++c) {
    MitigationProblem problem = mp.problem;
    problem.limit_bytes = region_bytes / c;
    ASSIGN_OR_RETURN(const MitigationChoice choice, SolveMitigation(problem));
    if (choice.shortfall_bytes > 0) continue;
    ASSIGN_OR_RETURN(DiffusionRequest v, ApplyChoice(tp->request, problem, choice.option));
    if (!seen.insert(MitigationLabels(v)).second) continue;
    ASSIGN_OR_RETURN(std::shared_ptr<TemplatePlan> plan, RecordTemplatePlan(pipeline, v, 0));
    vp->variants.push_back(v);
    vp->plans.push_back(std::move(plan));
  }
  return core::Status::Ok();
}

// Batches of the unmitigated request (see the header): batch k = 2, 3, ... while its arena
// (the largest so far) fits the region; each appended to tp->variants and its plan to *plans.
core::Status AddBatchVariants(const ServingPlannerOptions& o, const std::vector<int>& device_cpus,
                              DiffusionPipeline& pipeline, const DiffusionRequest& unmitigated,
                              int64_t region_bytes, TemplateProfile* tp,
                              std::vector<std::shared_ptr<TemplatePlan>>* plans) {
  int64_t arena = tp->variants[0].arena_bytes;
  std::vector<double> batch_s = tp->variants[0].batch_s;
  for (int k = 2; k <= o.max_batch; ++k) {
    const DiffusionRequest rk = BatchTemplate(unmitigated, k);
    auto plan = RecordTemplatePlan(pipeline, rk, region_bytes);
    if (!plan.ok() && plan.status().code() == core::StatusCode::kInfeasible) break;
    if (!plan.ok()) return plan.status().WithPrefix(fmt::format("batch of {}", k));
    arena = std::max(arena, (*plan)->layout.arena_bytes);
    if (arena > region_bytes) break;
    ASSIGN_OR_RETURN(const double run_s,
                     TimeFromArenas({&pipeline}, rk, {*plan}, o.timing_runs, device_cpus));
    batch_s.push_back(run_s);
    TemplateVariant tv = tp->variants[0];
    tv.batch = k;
    tv.labels.insert(tv.labels.begin(), fmt::format("batch={}", k));
    tv.arena_bytes = arena;
    tv.batch_s = batch_s;
    tp->variants.push_back(std::move(tv));
    plans->push_back(std::move(*plan));
  }
  return core::Status::Ok();
}

// Sequence parallelism: the first `plain` variants again over d devices (one core each),
// recorded per member (the table's arena: the largest member's) and timed as the server
// runs it. Offload is not taken with SP (the pipeline refuses it).
core::Status AddSpVariants(const ServingPlannerOptions& o, const std::vector<int>& device_cpus,
                           const TinyModelSpec& spec, const LoadedModels& models, size_t plain,
                           TemplateProfile* tp, VariantPlans* vp) {
  DiffusionPipeline& pipeline = *models.pipelines.at(spec.name);
  for (const int d : SpDegrees(o, spec, device_cpus)) {
    std::vector<DiffusionPipeline*> members = {&pipeline};
    for (int m = 1; m < d; ++m)
      members.push_back(models.replicas.at(spec.name)[static_cast<size_t>(m - 1)].get());
    for (size_t v = 0; v < plain; ++v) {
      const DiffusionRequest& request = vp->variants[v];
      if (request.offload.any()) continue;
      ASSIGN_OR_RETURN(std::vector<std::shared_ptr<TemplatePlan>> sp_plans,
                       RecordSpTemplatePlans(members, request, 0));
      TemplateVariant tv;
      tv.request = request;
      tv.sp_degree = d;
      tv.labels = MitigationLabels(request);
      tv.labels.insert(tv.labels.begin(), fmt::format("sp={}", d));
      tv.arena_bytes = SpArenaBytes(sp_plans);
      ASSIGN_OR_RETURN(tv.solo_s,
                       TimeFromArenas(members, request, sp_plans, o.timing_runs, device_cpus));
      tv.batch_s = {tv.solo_s};
      tp->variants.push_back(std::move(tv));
      vp->plans.push_back(sp_plans[0]);  // member 0's, for the pair measurement (not used: SP)
    }
  }
  return core::Status::Ok();
}

// One template of the mix: its variants (plain, mitigated, batched, SP), each recorded and
// timed; *plans receives each variant's plan, in tp's variant order.
core::StatusOr<TemplateProfile> ProfileTemplate(const ServingPlannerOptions& o,
                                                const std::vector<int>& device_cpus,
                                                const LoadedModels& models, int64_t region_bytes,
                                                const LoadTemplate& lt,
                                                std::vector<std::shared_ptr<TemplatePlan>>* plans) {
  TemplateProfile tp;
  tp.label = lt.label;
  tp.request = lt.request;
  tp.request.prompt = "a planner profile";
  tp.request.seed = 1;
  ASSIGN_OR_RETURN(const TinyModelSpec spec, TinyModel(tp.request.model));
  DiffusionPipeline& pipeline = *models.pipelines.at(spec.name);
  // The unmitigated request first: when it fits max_concurrency times, no mitigation can
  // help (exactly: its arena is the recorded layout's) and the part-2 planner is skipped.
  // Otherwise the part-2 planner at the strictest per-request limit, then its MILP at each c.
  ASSIGN_OR_RETURN(std::shared_ptr<TemplatePlan> base, RecordTemplatePlan(pipeline, tp.request, 0));
  VariantPlans vp;
  vp.variants = {tp.request};
  vp.plans = {base};
  if (base->layout.arena_bytes > region_bytes / o.max_concurrency) {
    RETURN_IF_ERROR(AddMitigatedVariants(o, spec, pipeline, *base, region_bytes, &tp, &vp));
  }
  const size_t plain = vp.variants.size();
  for (size_t v = 0; v < plain; ++v) {
    TemplateVariant tv;
    tv.request = vp.variants[v];
    tv.labels = MitigationLabels(vp.variants[v]);
    tv.arena_bytes = vp.plans[v]->layout.arena_bytes;
    ASSIGN_OR_RETURN(tv.solo_s, TimeFromArenas({&pipeline}, vp.variants[v], {vp.plans[v]},
                                               o.timing_runs, device_cpus));
    tv.batch_s = {tv.solo_s};
    tp.variants.push_back(std::move(tv));
  }
  if (!vp.variants[0].offload.any()) {
    RETURN_IF_ERROR(
        AddBatchVariants(o, device_cpus, pipeline, vp.variants[0], region_bytes, &tp, &vp.plans));
  }
  RETURN_IF_ERROR(AddSpVariants(o, device_cpus, spec, models, plain, &tp, &vp));
  *plans = std::move(vp.plans);
  tp.isolated_s = tp.variants[0].solo_s;
  return tp;
}

// Per template, the variant whose plan the pair measurement runs: the fastest single-device,
// unbatched variant that fits twice in the region (else the smallest such).
std::vector<size_t> PairRepresentatives(const ServingProfile& p) {
  const size_t k = p.templates.size();
  std::vector<size_t> rep(k, 0);
  for (size_t t = 0; t < k; ++t) {
    const std::vector<TemplateVariant>& vs = p.templates[t].variants;
    int best = -1;
    for (size_t v = 0; v < vs.size(); ++v) {
      if (vs[v].sp_degree == 1 && vs[v].batch == 1 && vs[v].arena_bytes <= p.region_bytes / 2 &&
          (best < 0 || vs[v].solo_s < vs[static_cast<size_t>(best)].solo_s)) {
        best = static_cast<int>(v);
      }
    }
    if (best < 0) {
      best = 0;
      for (size_t v = 1; v < vs.size(); ++v) {
        if (vs[v].sp_degree == 1 && vs[v].batch == 1 &&
            vs[v].arena_bytes < vs[static_cast<size_t>(best)].arena_bytes)
          best = static_cast<int>(v);
      }
    }
    rep[t] = static_cast<size_t>(best);
  }
  return rep;
}

// Processor sharing on one core, per pair of templates (p->pair_speedup): two copies of each
// template's representative are measured; a mixed pair is modeled as the geometric mean of
// the two same-template pairs (f_ab = sqrt(f_aa f_bb); checked against measured mixed pairs in
// docs/xema.md: within 1-3.5%). All 1 when max_concurrency is 1.
core::Status MeasurePairs(const ServingPlannerOptions& o, const LoadedModels& models,
                          const std::vector<std::vector<std::shared_ptr<TemplatePlan>>>& laid_out,
                          int cpu, ServingProfile* p) {
  const size_t k = p->templates.size();
  const std::vector<size_t> rep = PairRepresentatives(*p);
  std::vector<std::shared_ptr<TemplatePlan>> rep_plan(k);
  for (size_t t = 0; t < k; ++t) rep_plan[t] = laid_out[t][rep[t]];
  p->pair_speedup.assign(k, std::vector<double>(k, 1.0));
  if (o.max_concurrency > 1) {
    for (size_t a = 0; a < k; ++a) {
      Progress(o, "processor sharing", static_cast<int>(a), static_cast<int>(k));
      const TemplateVariant& va = p->templates[a].variants[rep[a]];
      DiffusionPipeline& pl = *models.pipelines.at(va.request.model);
      ASSIGN_OR_RETURN(p->pair_speedup[a][a],
                       MeasurePairSpeedup(pl, va.request, *rep_plan[a], va.solo_s, pl, va.request,
                                          *rep_plan[a], va.solo_s, cpu));
    }
    for (size_t a = 0; a < k; ++a) {
      for (size_t b = a + 1; b < k; ++b) {
        p->pair_speedup[a][b] = p->pair_speedup[b][a] =
            std::sqrt(p->pair_speedup[a][a] * p->pair_speedup[b][b]);
      }
    }
  }
  return core::Status::Ok();
}

// device_cpus[m]: the core the server's device m uses (as many as devices and cores allow);
// this thread runs on device_cpus[0].
core::StatusOr<ServingProfile> ProfileHere(const ServingPlannerOptions& o,
                                           const std::vector<int>& device_cpus) {
  const Clock::time_point t0 = Clock::now();
  const int cpu = device_cpus[0];
  ServingProfile p;
  p.cpu = cpu;
  runtime::HeapDeviceAllocator heap;
  LoadedModels models;
  ASSIGN_OR_RETURN(const int64_t weights, LoadMixModels(o, device_cpus, heap, &models, &p));
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
    std::vector<std::shared_ptr<TemplatePlan>> plans;
    ASSIGN_OR_RETURN(TemplateProfile tp,
                     ProfileTemplate(o, device_cpus, models, p.region_bytes, lt, &plans));
    laid_out.push_back(std::move(plans));
    p.templates.push_back(std::move(tp));
  }
  p.templates_s = core::SecondsSince(t0);
  const Clock::time_point t_pairs = Clock::now();
  RETURN_IF_ERROR(MeasurePairs(o, models, laid_out, cpu, &p));
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
    if (t.variants[i].sp_degree == 1 && t.variants[i].batch == 1 &&
        t.variants[i].arena_bytes <= p.region_bytes &&
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
  ServingPlannerOptions one_device = o;  // the probe's server has one device
  one_device.devices = 1;
  so.serving_plan =
      std::make_shared<const ServingPlan>(MakeServingPlan(p, one_device, c, ConfigurationScore{}));
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

}  // namespace

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
  if (o.max_sp_degree < 1 || o.max_sp_degree > 64) {
    return core::InvalidArgument(
        fmt::format("max-sp: got {}, must be in [1, 64]", o.max_sp_degree));
  }
  if (o.max_batch < 1 || o.max_batch > kMaxRequestBatch) {
    return core::InvalidArgument(
        fmt::format("max-batch: got {}, must be in [1, {}]", o.max_batch, kMaxRequestBatch));
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

core::StatusOr<double> MeasurePairSpeedup(DiffusionPipeline& pa, const DiffusionRequest& ra,
                                          const TemplatePlan& la, double solo_a,
                                          DiffusionPipeline& pb, const DiffusionRequest& rb,
                                          const TemplatePlan& lb, double solo_b, int cpu) {
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
  // The cores the server's devices pin to (server.cc): device d on the (cpus - 1 - d)-th.
  const int cpus = core::OnlineCpus();
  std::vector<int> device_cpus;
  for (int d = 0; d < std::min(o.devices, cpus); ++d)
    device_cpus.push_back(core::AllowedCpu(cpus - 1 - d));
  core::StatusOr<ServingProfile> result = core::Internal("profile did not run");
  std::thread worker([&] {
    if (device_cpus[0] >= 0) (void)core::PinThisThreadToCpu(device_cpus[0]);
    (void)kernels::SetBlasNumThreads(1);
    result = ProfileHere(o, device_cpus);
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

}  // namespace tessera::xema
