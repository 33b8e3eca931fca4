#include "compass/engine/gpt_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "comm/futex.h"
#include "compass/engine/link_runtime.h"
#include "compass/engine/overlap_context.h"
#include "compass/engine/run_timing.h"
#include "compass/engine/strategy_tp_ops.h"
#include "compass/plan.h"
#include "models/adamw.h"

namespace tessera::compass {

namespace {

constexpr double kLossTolerance = 1e-5;
constexpr int kMaxSteps = 1000;

// The losses of `steps` steps of the single-process twin on the run's batches.
core::StatusOr<std::vector<double>> TwinLosses(const models::SmallGptConfig& mc,
                                               const GptRunConfig& c) {
  ASSIGN_OR_RETURN(models::SmallGpt model, models::SmallGpt::Create(mc, 1, 0));
  ASSIGN_OR_RETURN(models::AdamW opt, models::AdamW::Create(model.NumParameters(),
                                                            {.learning_rate = c.learning_rate}));
  models::LocalTpOps ops;
  std::vector<double> out;
  for (int step = 0; step < c.steps; ++step) {
    ASSIGN_OR_RETURN(models::GptBatch b,
                     models::MakeSyntheticGptBatch(mc.vocab, c.batch, c.seq, c.seed, step));
    ASSIGN_OR_RETURN(double loss, model.TrainStep(b, ops, opt));
    out.push_back(loss);
  }
  return out;
}

// Every rank's spans of one step (the same operators in the same order on every rank), in
// device seconds after `start_ns`, into out->last_step_*.
core::Status GatherSpans(comm::Communicator& world, const std::vector<StrategyTpOps::Span>& spans,
                         int64_t start_ns, double time_scale, GptRun* out) {
  const int n = world.size();
  std::vector<double> mine;
  for (const StrategyTpOps::Span& sp : spans) {
    mine.push_back(static_cast<double>(sp.begin_ns - start_ns) * 1e-9 / time_scale);
    mine.push_back(static_cast<double>(sp.end_ns - start_ns) * 1e-9 / time_scale);
  }
  double count = static_cast<double>(spans.size());
  RETURN_IF_ERROR(world.AllReduceSum(std::span<double>(&count, 1)));
  if (count != static_cast<double>(spans.size()) * n) {
    return core::Internal("compass run: the ranks ran different operator sequences");
  }
  std::vector<double> all(mine.size() * n);
  RETURN_IF_ERROR(world.AllGather(std::span<const double>(mine), std::span<double>(all)));
  out->last_step_ops.clear();
  for (const StrategyTpOps::Span& sp : spans) out->last_step_ops.push_back(sp.name);
  out->last_step_spans.assign(n, {});
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < spans.size(); ++i) {
      out->last_step_spans[r].emplace_back(all[r * mine.size() + 2 * i],
                                           all[r * mine.size() + 2 * i + 1]);
    }
  }
  return core::Status::Ok();
}

}  // namespace

core::StatusOr<std::vector<GptOpChoice>> ChooseGptStrategies(
    const std::string& strategy, const std::vector<std::pair<std::string, TpOpShape>>& ops,
    const OpGemmTimer& gemm_s, const OpCollectiveTimer& collective_s,
    const OverheadTable& overheads, const SelectorOptions& options) {
  std::vector<GptOpChoice> out;
  for (const auto& [name, shape] : ops) {
    RETURN_IF_ERROR(ValidateTpOp(shape));
    GptOpChoice c;
    c.op = name;
    c.shape = shape;
    if (strategy == "auto") {
      const CollectiveTimer coll = [&, s = shape](comm::LinkAlgo a, double wire) {
        return collective_s(s, a, wire);
      };
      const StrategyInputs in = StrategyInputsFor(shape, gemm_s, coll, options.max_degree);
      ASSIGN_OR_RETURN(StrategyPick pick, SelectStrategy(in, overheads, options));
      c.strategy = pick.strategy.Name();
      c.predicted_s = pick.predicted_s;
      c.none_s = pick.none_s;
      c.reason = pick.reason;
    } else {
      c.strategy = strategy;
      c.reason = "given (--strategy)";
    }
    ASSIGN_OR_RETURN(StrategyChoice choice, ParseStrategy(c.strategy));
    if (TakesDegree(choice.id.family)) {
      core::Status st = ValidateDegree(shape, choice.degree());
      if (!st.ok())
        return core::InvalidArgument("strategy: operator " + name + ": " + st.message());
    }
    c.strategy = choice.name();
    out.push_back(std::move(c));
  }
  return out;
}

core::Status CheckGptRun(const GptRunConfig& c, const hw::Topology& topology, int ranks) {
  if (c.steps < 1 || c.steps > kMaxSteps) {
    return core::InvalidArgument(
        fmt::format("steps: got {}, must be in [1, {}]", c.steps, kMaxSteps));
  }
  if (c.compute != runtime::ComputeMode::kReal && c.compute != runtime::ComputeMode::kModeled) {
    return core::InvalidArgument("compass run: compute must be real or modeled");
  }
  if (c.check && c.compute != runtime::ComputeMode::kReal) {
    return core::InvalidArgument(
        "check: needs compute real, got modeled (modeled GEMMs do not write their outputs)");
  }
  if (ranks > topology.num_devices()) {
    return core::InvalidArgument(fmt::format("{} ranks on {} with {} devices", ranks,
                                             topology.name(), topology.num_devices()));
  }
  ASSIGN_OR_RETURN(models::SmallGptConfig mc, models::SmallGptPreset(c.model));
  RETURN_IF_ERROR(models::ValidateSmallGptConfig(mc, ranks));
  if (c.batch < 1 || c.seq < 1 || c.seq > mc.max_seq) {
    return core::InvalidArgument(
        fmt::format("batch {} and seq {}: need batch >= 1 and seq in [1, {}] (the model's max_seq)",
                    c.batch, c.seq, mc.max_seq));
  }
  const int64_t m = c.batch * c.seq;
  if (m % ranks != 0) {
    return core::InvalidArgument(fmt::format(
        "batch x seq: {} tokens, not divisible by tp {} (the token axis is sharded)", m, ranks));
  }
  if (c.strategy != "auto") RETURN_IF_ERROR(ParseStrategy(c.strategy).status());
  if (c.profile != nullptr) {
    RETURN_IF_ERROR(CheckProfileFor(*c.profile, c.profile_name, topology.name(), ranks));
  }
  return core::Status::Ok();
}

namespace {

// Each operator's strategy (c.strategy, or the selector's pick under auto from GEMMs timed on
// rank 0 alone); sets out->overheads_source and out->choices.
core::StatusOr<std::map<std::string, StrategyChoice>> ChooseStrategies(
    comm::Communicator& world, const LinkRuntime& rt, const hw::Topology& topology,
    const runtime::TimeScale& scale, const GptRunConfig& c,
    const std::vector<std::pair<std::string, TpOpShape>>& ops, const std::vector<int>& ring1,
    const std::vector<int>& ring2, GptRun* out) {
  // The GEMM times auto needs: every whole and part shape, timed on rank 0 alone.
  runtime::GemmProfile gemm_s;
  const OverheadTable overheads = c.profile != nullptr ? c.profile->overheads : OverheadTable{};
  out->overheads_source =
      c.profile != nullptr
          ? "profile " + c.profile_name + " (measured on " + c.profile->machine + ")"
          : "none given: zero per-step and per-chunk overheads, kappa 1";
  const OpCollectiveTimer collective = [&](const TpOpShape& s, comm::LinkAlgo a, double wire) {
    return OperatorCollectiveTimer(topology, ring1, ring2, s.kind)(a, wire);
  };
  if (c.strategy == "auto") {
    std::set<runtime::GemmShape> wanted;
    const OpGemmTimer record = [&](bool t, int64_t gm, int64_t gn, int64_t gk) {
      wanted.insert(runtime::GemmShape{t, gm, gn, gk});
      return 1.0;
    };
    RETURN_IF_ERROR(
        ChooseGptStrategies("auto", ops, record, collective, overheads, c.selector).status());
    const std::vector<runtime::GemmShape> shapes(wanted.begin(), wanted.end());
    RETURN_IF_ERROR(ProfileGemmsOnRankZero(world, *rt.barrier, shapes, scale.scale, &gemm_s));
  }
  const OpGemmTimer lookup = [&](bool t, int64_t gm, int64_t gn, int64_t gk) {
    return gemm_s.at(runtime::GemmShape{t, gm, gn, gk});
  };
  ASSIGN_OR_RETURN(out->choices,
                   ChooseGptStrategies(c.strategy, ops, lookup, collective, overheads, c.selector));
  std::map<std::string, StrategyChoice> per_op;
  for (const GptOpChoice& oc : out->choices) {
    ASSIGN_OR_RETURN(per_op[oc.op], ParseStrategy(oc.strategy));
  }
  return per_op;
}

// --check: the single-process twin's losses, computed on rank 0 while the others wait, on
// every rank.
core::StatusOr<std::vector<double>> ShareTwinLosses(comm::Communicator& world,
                                                    const LinkRuntime& rt,
                                                    const models::SmallGptConfig& mc,
                                                    const GptRunConfig& c) {
  std::vector<double> ref(static_cast<size_t>(c.steps), -1.0);
  core::Status twin = core::Status::Ok();
  if (world.rank() == 0) {
    auto r = TwinLosses(mc, c);
    if (r.ok()) {
      ref = *r;
    } else {
      twin = r.status();
    }
  }
  RETURN_IF_ERROR(rt.barrier->Arrive(0, 600.0).status());
  RETURN_IF_ERROR(world.Broadcast(std::span<double>(ref), 0));
  RETURN_IF_ERROR(twin);
  if (ref[0] < 0) return core::Internal("check: the single-process twin failed on rank 0");
  return ref;
}

// Modeled compute: records every GEMM shape of one step, times them on rank 0 alone (into
// `modeled`, which must outlive the run), then makes ctx's GEMMs sleep for them.
core::Status UseModeledCompute(comm::Communicator& world, const LinkRuntime& rt,
                               const models::SmallGptConfig& mc, const GptRunConfig& c,
                               models::SmallGpt& model, OverlapContext& ctx, StrategyTpOps& tp_ops,
                               runtime::GemmProfile* modeled) {
  ASSIGN_OR_RETURN(models::GptBatch b,
                   models::MakeSyntheticGptBatch(mc.vocab, c.batch, c.seq, c.seed, 0));
  ctx.compute().set_mode(runtime::ComputeMode::kRecord);
  RETURN_IF_ERROR(model.ForwardBackward(b, tp_ops).status());
  std::vector<runtime::GemmShape> shapes = ctx.compute().TakeRecorded();
  std::sort(shapes.begin(), shapes.end());
  shapes.erase(std::unique(shapes.begin(), shapes.end()), shapes.end());
  RETURN_IF_ERROR(ProfileGemmsOnRankZero(world, *rt.barrier, shapes, 1.0, modeled));
  ctx.compute().set_profile(modeled);
  ctx.compute().set_mode(runtime::ComputeMode::kModeled);
  return core::Status::Ok();
}

// --check: every step's loss against the twin's (sets out->max_loss_rel_diff).
core::Status CheckLosses(const GptRunConfig& c, int n, GptRun* out) {
  out->max_loss_rel_diff = 0;
  for (int step = 0; step < c.steps; ++step) {
    const double ref = out->reference_losses[step], got = out->losses[step];
    double diff = std::abs(got - ref) / std::max(std::abs(ref), 1e-30);
    if (!std::isfinite(diff)) diff = 1e30;
    out->max_loss_rel_diff = std::max(out->max_loss_rel_diff, diff);
    if (diff > kLossTolerance) {
      return core::Internal(fmt::format(
          "check: step {} loss {:.9g} with tp {} ({}) differs from the single process's "
          "{:.9g} by {:.2e} relative (tolerance 1e-5)",
          step + 1, got, n, c.strategy, ref, diff));
    }
  }
  return core::Status::Ok();
}

}  // namespace

core::StatusOr<GptRun> RunGpt(comm::Communicator& world, const hw::Topology& topology,
                              const runtime::TimeScale& scale, const GptRunConfig& c) {
  const int n = world.size(), me = world.rank();
  RETURN_IF_ERROR(CheckGptRun(c, topology, n));
  ASSIGN_OR_RETURN(models::SmallGptConfig mc, models::SmallGptPreset(c.model));
  const int64_t m = c.batch * c.seq;
  ASSIGN_OR_RETURN(models::SmallGpt model, models::SmallGpt::Create(mc, n, me));
  std::vector<std::pair<std::string, TpOpShape>> ops;
  int64_t window = 1;
  for (const models::TpLayerOp& call : model.LayerTpCalls(m)) {
    ops.emplace_back(call.name, TpOpShapeOf(call.name, call.kind, call.dims, n));
    window = std::max(window, OverlapWindowBytes(ops.back().second));
  }
  ASSIGN_OR_RETURN(LinkRuntime rt, StartLinkRuntime(world, topology, scale, window, std::nullopt));
  OverlapContext ctx(world, rt.single.get(), rt.dual.get());
  ctx.compute().set_mode(runtime::ComputeMode::kReal);

  GptRun out;
  out.topology = topology.name();
  out.model = c.model;
  out.strategy = c.strategy;
  out.tp = n;
  out.compute = c.compute;
  out.batch = c.batch;
  out.seq = c.seq;
  out.parameters_per_rank = model.NumParameters();
  out.scale = scale;
  std::vector<int> ring1, ring2;
  for (int r : rt.ring1.order) ring1.push_back(rt.devices[r]);
  for (int r : rt.ring2.order) ring2.push_back(rt.devices[r]);

  ASSIGN_OR_RETURN(const auto per_op,
                   ChooseStrategies(world, rt, topology, scale, c, ops, ring1, ring2, &out));
  const StrategyChoice fallback = ChoiceOf(StrategyName::Of(StrategyFamily::kNone));

  if (c.check) {
    ASSIGN_OR_RETURN(out.reference_losses, ShareTwinLosses(world, rt, mc, c));
  }

  StrategyTpOps tp_ops(ctx, per_op, fallback);
  runtime::GemmProfile modeled;
  if (c.compute == runtime::ComputeMode::kModeled) {
    RETURN_IF_ERROR(UseModeledCompute(world, rt, mc, c, model, ctx, tp_ops, &modeled));
  }
  ASSIGN_OR_RETURN(models::AdamW opt, models::AdamW::Create(model.NumParameters(),
                                                            {.learning_rate = c.learning_rate}));
  std::vector<double> begin_ns, end_ns;
  for (int step = 0; step < c.steps; ++step) {
    ASSIGN_OR_RETURN(models::GptBatch b,
                     models::MakeSyntheticGptBatch(mc.vocab, c.batch, c.seq, c.seed, step));
    ASSIGN_OR_RETURN(int64_t start, rt.barrier->Arrive(2'000'000, 600.0));
    comm::SleepUntilNs(start);
    const bool last = step + 1 == c.steps;
    tp_ops.set_recording(last);
    const int64_t t0 = comm::NowNs();
    ASSIGN_OR_RETURN(double loss, model.TrainStep(b, tp_ops, opt));
    end_ns.push_back(static_cast<double>(comm::NowNs() - start));
    begin_ns.push_back(static_cast<double>(t0 - start));
    out.losses.push_back(loss);
    if (last) RETURN_IF_ERROR(GatherSpans(world, tp_ops.TakeSpans(), start, scale.scale, &out));
    if (me == 0 && c.progress) c.progress(step + 1, c.steps);
  }
  ASSIGN_OR_RETURN(out.step_s, GatherRunTimesS(world, begin_ns, end_ns, scale.scale));
  const std::span<const double> steady = out.step_s.size() > 1
                                             ? std::span<const double>(out.step_s).subspan(1)
                                             : std::span<const double>(out.step_s);
  out.step_summary = core::SummarizeMinMedianMax(steady);
  for (const auto& [name, wall_s] : tp_ops.OpSeconds()) out.op_s[name] = wall_s / scale.scale;

  if (c.check) RETURN_IF_ERROR(CheckLosses(c, n, &out));
  return out;
}

core::Json ToJson(const GptRun& r) {
  core::Json choices = core::Json::array();
  for (const GptOpChoice& c : r.choices) {
    core::Json j = {{"op", c.op},        {"kind", TpOpKindName(c.shape.kind)},
                    {"m", c.shape.m},    {"n", c.shape.n},
                    {"k", c.shape.k},    {"strategy", c.strategy},
                    {"reason", c.reason}};
    if (c.predicted_s > 0) {
      j["predicted_ms"] = c.predicted_s * 1e3;
      j["none_ms"] = c.none_s * 1e3;
    }
    choices.push_back(j);
  }
  core::Json op_ms = core::Json::object();
  for (const auto& [name, s] : r.op_s) op_ms[name] = s * 1e3;
  core::Json j = {{"kind", "compass-gpt-run"},
                  {"version", 1},
                  {"topology", r.topology},
                  {"model", r.model},
                  {"strategy", r.strategy},
                  {"tp", r.tp},
                  {"batch", r.batch},
                  {"seq", r.seq},
                  {"parameters_per_rank", r.parameters_per_rank},
                  {"time_scale", r.scale.scale},
                  {"time_scale_source", r.scale.source},
                  {"compute", runtime::ComputeModeName(r.compute)},
                  {"overheads_source", r.overheads_source},
                  {"choices", choices},
                  {"losses", r.losses},
                  {"step_ms", core::Json::array()},
                  {"step_ms_min", r.step_summary.min * 1e3},
                  {"step_ms_median", r.step_summary.median * 1e3},
                  {"step_ms_max", r.step_summary.max * 1e3},
                  {"op_ms_rank0", op_ms}};
  for (double s : r.step_s) j["step_ms"].push_back(s * 1e3);
  if (!r.reference_losses.empty()) {
    j["reference_losses"] = r.reference_losses;
    j["max_loss_rel_diff"] = r.max_loss_rel_diff;
  }
  return j;
}

core::TraceWriter GptStepTrace(const GptRun& r) {
  core::TraceWriter t;
  std::map<std::string, std::string> strategy;
  for (const GptOpChoice& c : r.choices) strategy[c.op] = c.strategy;
  for (size_t rank = 0; rank < r.last_step_spans.size(); ++rank) {
    const int tid = static_cast<int>(rank);
    t.NameTrack(tid, "rank " + std::to_string(rank));
    for (size_t i = 0; i < r.last_step_spans[rank].size(); ++i) {
      const auto [b, e] = r.last_step_spans[rank][i];
      const std::string& op = r.last_step_ops[i];
      t.Span(tid, op, strategy.count(op) ? strategy[op] : "", b, e - b,
             {{"strategy", strategy.count(op) ? strategy[op] : ""}});
    }
  }
  return t;
}

}  // namespace tessera::compass
