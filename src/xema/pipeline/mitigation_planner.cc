#include "xema/pipeline/mitigation_planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "xema/pipeline/template_json.h"

namespace tessera::xema {
namespace {

// One configuration's recorded memory and time, steps expanded to the request's count.
struct Profile {
  MemoryTrace trace;
  ExpandedTrace x;
  std::vector<int64_t> live;  // per flat op, weights included
  double denoise_s = 0, vae_s = 0, total_s = 0;
};

bool IsVae(const Profile& p, int t) {
  return p.trace.op(p.x.ops[t].template_op).phase == Phase::kVae;
}

class Profiler {
 public:
  Profiler(const RecordFn& record, const MitigationPlanOptions& options, int64_t steps, int total)
      : record_(record), options_(options), steps_(steps), total_(total) {}

  core::StatusOr<Profile> Measure(DiffusionRequest r) {
    r.steps = std::min<int64_t>(steps_, options_.profile_steps);
    Profile p;
    for (int rep = 0; rep < std::max(1, options_.repeats); ++rep) {
      ASSIGN_OR_RETURN(RecordedRequest rec, record_(r));
      ++runs_;
      if (options_.progress) options_.progress(runs_, std::max(runs_, total_));
      MemoryTrace trace = std::move(rec.trace);
      trace.key.steps = steps_;
      ASSIGN_OR_RETURN(ExpandedTrace x, Expand(trace));
      // Weights left parked are restored by the next request: the run's cost includes it.
      double denoise = 0, vae = 0, total = rec.restore_s;
      for (const FlatOp& op : x.ops) {
        const TraceOp& o = trace.op(op.template_op);
        total += o.time_s;
        if (o.phase == Phase::kVae) vae += o.time_s;
        if (o.phase == Phase::kDenoise) denoise += o.time_s;
      }
      if (rep == 0) {
        p.live = LiveBytes(x, true);
        p.trace = std::move(trace);
        p.x = std::move(x);
        p.denoise_s = denoise, p.vae_s = vae, p.total_s = total;
      } else {
        p.denoise_s = std::min(p.denoise_s, denoise);
        p.vae_s = std::min(p.vae_s, vae);
        p.total_s = std::min(p.total_s, total);
      }
    }
    return p;
  }
  int runs() const { return runs_; }
  void AddToTotal(int n) { total_ += n; }

 private:
  const RecordFn& record_;
  const MitigationPlanOptions& options_;
  int64_t steps_;
  int total_;
  int runs_ = 0;
};

// Same op sequence (names per flat op) over [0, n) of both.
core::Status SameOps(const Profile& a, const Profile& b, int n, const std::string& what) {
  if (static_cast<int>(a.x.ops.size()) < n || static_cast<int>(b.x.ops.size()) < n) {
    return core::Internal(fmt::format("mitigation {} changed the number of ops", what));
  }
  for (int t = 0; t < n; ++t) {
    if (FlatOpName(a.trace, a.x.ops[t]) != FlatOpName(b.trace, b.x.ops[t])) {
      return core::Internal(fmt::format("mitigation {} changed op {} ({} vs {})", what, t,
                                        FlatOpName(a.trace, a.x.ops[t]),
                                        FlatOpName(b.trace, b.x.ops[t])));
    }
  }
  return core::Status::Ok();
}

int FirstVaeOp(const Profile& p) {
  for (int t = 0; t < static_cast<int>(p.x.ops.size()); ++t) {
    if (IsVae(p, t)) return t;
  }
  return static_cast<int>(p.x.ops.size());
}

int64_t Peak(const std::vector<int64_t>& live) {
  return live.empty() ? 0 : *std::max_element(live.begin(), live.end());
}

core::StatusOr<int64_t> ParseValue(const std::string& label, const std::string& prefix) {
  if (label.rfind(prefix, 0) != 0) {
    return core::InvalidArgument(fmt::format("option label {}: expected {}N", label, prefix));
  }
  try {
    return static_cast<int64_t>(std::stoll(label.substr(prefix.size())));
  } catch (...) {
    return core::InvalidArgument(fmt::format("option label {}: expected {}N", label, prefix));
  }
}

core::Status ApplyOption(DiffusionRequest& r, const std::string& action, const std::string& label) {
  if (label == "off") return core::Status::Ok();
  if (action == "ffn_chunks") {
    ASSIGN_OR_RETURN(r.ffn_chunks, ParseValue(label, "ffn_chunks="));
  } else if (action == "attention_chunks") {
    ASSIGN_OR_RETURN(r.attention_chunks, ParseValue(label, "attention_chunks="));
  } else if (action == "vae") {
    const size_t comma = label.find(",tiles=");
    if (comma == std::string::npos) {
      return core::InvalidArgument(
          fmt::format("option label {}: expected slices=S,tiles=T", label));
    }
    ASSIGN_OR_RETURN(r.vae_frame_slices, ParseValue(label.substr(0, comma), "slices="));
    ASSIGN_OR_RETURN(r.vae_tiles, ParseValue(label.substr(comma + 1), "tiles="));
  } else if (action == "offload_text") {
    r.offload.text_context = true;
  } else if (action == "offload_latent") {
    r.offload.latent = true;
  } else if (action == "offload_image") {
    r.offload.image = true;
  } else if (action == "offload_weights") {
    r.offload.idle_weights = true;
  } else {
    return core::InvalidArgument(fmt::format("unknown mitigation action {}", action));
  }
  return core::Status::Ok();
}

// Checks the budget and profiling options (the request is checked by the caller first).
core::Status ValidatePlanOptions(const MitigationPlanOptions& options) {
  if (options.budget_bytes <= options.reserve_bytes || options.reserve_bytes < 0) {
    return core::InvalidArgument(fmt::format(
        "budget_bytes: got {} with reserve {}, must exceed the reserve (and reserve >= 0)",
        options.budget_bytes, options.reserve_bytes));
  }
  if (options.profile_steps < 1 || options.repeats < 1 || options.max_retraces < 0) {
    return core::InvalidArgument("profile_steps and repeats must be >= 1, max_retraces >= 0");
  }
  if (!(options.time_tolerance_fraction >= 0 && options.time_tolerance_fraction <= 1)) {
    return core::InvalidArgument(fmt::format("time_tolerance_fraction: got {}, must be in [0, 1]",
                                             options.time_tolerance_fraction));
  }
  return core::Status::Ok();
}

// Phase 1, collect candidates: appends to problem->actions every action that has an option
// beyond "off" for `request` (header order: ffn_chunks, attention_chunks, vae, offloads).
void AddActions(const TinyModelSpec& spec, const DiffusionRequest& request,
                const MitigationCandidates& c, MitigationProblem* problem) {
  auto add_action = [&](const std::string& name, std::vector<std::string> labels) {
    if (labels.empty()) return;
    MitigationActionSpec act{name, {{"off", 0}}};
    for (std::string& l : labels) act.options.push_back({std::move(l), 0});
    problem->actions.push_back(std::move(act));
  };
  std::vector<std::string> labels;
  for (int64_t k : c.ffn_chunks) {
    if (k > request.ffn_chunks && k <= kMaxFfnChunks)
      labels.push_back(fmt::format("ffn_chunks={}", k));
  }
  add_action("ffn_chunks", std::move(labels));
  labels.clear();
  if (request.attention == models::AttentionMode::kChunked) {
    for (int64_t k : c.attention_chunks) {
      if (k > request.attention_chunks && k <= kMaxAttentionChunks) {
        labels.push_back(fmt::format("attention_chunks={}", k));
      }
    }
  }
  add_action("attention_chunks", std::move(labels));
  labels.clear();
  std::vector<int64_t> slices = {request.vae_frame_slices};
  for (int64_t s : c.vae_slices) {
    if (spec.video && s > request.vae_frame_slices && s <= request.frames) slices.push_back(s);
  }
  std::vector<int64_t> tiles = {request.vae_tiles};
  for (int64_t t : c.vae_tiles) {
    if (t > request.vae_tiles && t <= kMaxVaeTiles) tiles.push_back(t);
  }
  for (int64_t s : slices) {
    for (int64_t t : tiles) {
      if (s != request.vae_frame_slices || t != request.vae_tiles) {
        labels.push_back(fmt::format("slices={},tiles={}", s, t));
      }
    }
  }
  add_action("vae", std::move(labels));
  if (c.offload) {
    add_action("offload_text", {"on"});
    add_action("offload_latent", {"on"});
    add_action("offload_image", {"on"});
    if (c.offload_idle_weights) add_action("offload_weights", {"on"});
  }
}

// What profiling the options yields: every point's row (base points first, then each VAE
// option's own points) and each option's largest saving at any point.
struct OptionSavings {
  int vae_action = -1;                        // index of the "vae" action, -1 if none
  std::vector<std::vector<int64_t>> largest;  // [action][option], bytes
  std::vector<int> vae_touching;              // non-structural actions that save in the VAE
  std::vector<MitigationRow> rows;            // every point, not only those that can bind
};

// Phase 2a: records every option of the non-structural actions and fills the base points'
// rows (one per flat op of `base`, conditional on VAE option 0 from vae_first on) and
// problem->actions[*].options[*].added_s. Internal when an option changes the op sequence.
core::Status MeasureBaseOptions(const DiffusionRequest& request, const Profile& base,
                                Profiler& profiler, MitigationProblem* problem,
                                OptionSavings* out) {
  const int vae_first = FirstVaeOp(base);
  const int n_ops = static_cast<int>(base.x.ops.size());
  // rows_of[t] collects the savings at base point t; variant rows are added after.
  std::vector<MitigationRow> base_rows(n_ops);
  for (int t = 0; t < n_ops; ++t) {
    base_rows[t].point = FlatOpName(base.trace, base.x.ops[t]);
    base_rows[t].live_bytes = base.live[t];
  }
  out->largest.resize(problem->actions.size());  // per option
  for (size_t a = 0; a < problem->actions.size(); ++a) {
    MitigationActionSpec& act = problem->actions[a];
    out->largest[a].assign(act.options.size(), 0);
    if (act.name == "vae") {
      out->vae_action = static_cast<int>(a);
      continue;
    }
    bool touches_vae = false;
    for (size_t o = 1; o < act.options.size(); ++o) {
      DiffusionRequest r = request;
      RETURN_IF_ERROR(ApplyOption(r, act.name, act.options[o].label));
      ASSIGN_OR_RETURN(Profile p, profiler.Measure(r));
      RETURN_IF_ERROR(SameOps(base, p, n_ops, act.options[o].label));
      if (static_cast<int>(p.x.ops.size()) != n_ops) {
        return core::Internal(fmt::format("mitigation {} added ops", act.options[o].label));
      }
      const double added = act.name.rfind("offload", 0) == 0 ? p.total_s - base.total_s
                                                             : p.denoise_s - base.denoise_s;
      act.options[o].added_s = std::max(0.0, added);
      for (int t = 0; t < n_ops; ++t) {
        const int64_t saved = base.live[t] - p.live[t];
        if (saved == 0) continue;
        base_rows[t].savings.push_back({static_cast<int>(a), static_cast<int>(o), saved});
        out->largest[a][o] = std::max(out->largest[a][o], saved);
        touches_vae = touches_vae || t >= vae_first;
      }
    }
    if (touches_vae) out->vae_touching.push_back(static_cast<int>(a));
  }
  for (int t = 0; t < n_ops; ++t) {
    if (t >= vae_first && out->vae_action >= 0) base_rows[t].condition = {out->vae_action, 0};
    out->rows.push_back(std::move(base_rows[t]));
  }
  return core::Status::Ok();
}

// Phase 2b: records each VAE option v (it must keep every op and live byte before the VAE),
// then each VAE-touching option on top of v, and appends v's VAE points as rows conditional
// on v. Sets the VAE options' added_s and largest saving (drop of the VAE-phase peak).
core::Status MeasureVaeOptions(const DiffusionRequest& request, const Profile& base,
                               const MitigationPlanOptions& options, Profiler& profiler,
                               MitigationProblem* problem, OptionSavings* out) {
  const int vae_action = out->vae_action;
  const int vae_first = FirstVaeOp(base);
  MitigationActionSpec& act = problem->actions[vae_action];
  const int64_t base_vae_peak =
      Peak(std::vector<int64_t>(base.live.begin() + vae_first, base.live.end()));
  for (size_t o = 1; o < act.options.size(); ++o) {
    DiffusionRequest rv = request;
    RETURN_IF_ERROR(ApplyOption(rv, act.name, act.options[o].label));
    ASSIGN_OR_RETURN(Profile pv, profiler.Measure(rv));
    RETURN_IF_ERROR(SameOps(base, pv, vae_first, act.options[o].label));
    for (int t = 0; t < vae_first; ++t) {
      if (pv.live[t] != base.live[t]) {
        return core::Internal(
            fmt::format("mitigation {} changed live bytes before the VAE", act.options[o].label));
      }
    }
    act.options[o].added_s = std::max(0.0, pv.vae_s - base.vae_s);
    const int v_first = FirstVaeOp(pv);
    const int v_ops = static_cast<int>(pv.x.ops.size());
    out->largest[vae_action][o] = std::max<int64_t>(
        0, base_vae_peak - Peak(std::vector<int64_t>(pv.live.begin() + v_first, pv.live.end())));
    std::vector<MitigationRow> vrows(v_ops - v_first);
    for (int t = v_first; t < v_ops; ++t) {
      vrows[t - v_first].point = act.options[o].label + ":" + FlatOpName(pv.trace, pv.x.ops[t]);
      vrows[t - v_first].live_bytes = pv.live[t];
      vrows[t - v_first].condition = {vae_action, static_cast<int>(o)};
    }
    for (int a : out->vae_touching) {
      const MitigationActionSpec& other = problem->actions[a];
      for (size_t oo = 1; oo < other.options.size(); ++oo) {
        DiffusionRequest r2 = rv;
        RETURN_IF_ERROR(ApplyOption(r2, other.name, other.options[oo].label));
        profiler.AddToTotal(options.repeats);
        ASSIGN_OR_RETURN(Profile p2, profiler.Measure(r2));
        RETURN_IF_ERROR(
            SameOps(pv, p2, v_ops, other.options[oo].label + " on " + act.options[o].label));
        for (int t = v_first; t < v_ops; ++t) {
          const int64_t saved = pv.live[t] - p2.live[t];
          if (saved != 0) {
            vrows[t - v_first].savings.push_back({a, static_cast<int>(oo), saved});
          }
        }
      }
    }
    for (MitigationRow& row : vrows) out->rows.push_back(std::move(row));
  }
  return core::Status::Ok();
}

// Phase 3: sets each option's saved_bytes and keeps in problem->rows the rows that can bind
// (over the limit, or with a negative saving), identical ones (repeated steps) merged.
void BuildRows(const OptionSavings& s, int64_t limit_bytes, MitigationProblem* problem) {
  for (size_t a = 0; a < problem->actions.size(); ++a) {
    for (size_t o = 1; o < problem->actions[a].options.size(); ++o) {
      problem->actions[a].options[o].saved_bytes = s.largest[a][o];
    }
  }
  std::map<std::string, bool> seen;
  for (const MitigationRow& row : s.rows) {
    bool negative = false;
    for (const SavingTerm& t : row.savings) negative = negative || t.bytes < 0;
    if (row.live_bytes <= limit_bytes && !negative) continue;
    std::string key =
        fmt::format("{}|{}:{}", row.live_bytes, row.condition.action, row.condition.option);
    for (const SavingTerm& t : row.savings)
      key += fmt::format("|{},{},{}", t.action, t.option, t.bytes);
    if (seen.emplace(key, true).second) problem->rows.push_back(row);
  }
}

// Phase 4, solve / apply / verify: asks the MILP, applies its choice, records the request
// again; a choice that does not fit is forbidden and the MILP asked again, at most
// max_retraces times. Sets plan->choice, request, verified_peak_bytes, fits, retraces and
// returns the verified run's profile.
core::StatusOr<Profile> SolveAndVerify(const DiffusionRequest& request,
                                       const std::vector<MitigationRow>& rows,
                                       const MitigationPlanOptions& options, double tolerance_s,
                                       Profiler& profiler, MitigationPlan* plan) {
  const MitigationProblem& problem = plan->problem;
  std::vector<ForbiddenChoice> forbidden;
  Profile verified;
  for (;;) {
    ASSIGN_OR_RETURN(plan->choice, SolveMitigation(problem, forbidden, tolerance_s));
    plan->choice.predicted_peak_bytes = 0;  // over every point, not only the rows kept
    for (const MitigationRow& row : rows) {
      plan->choice.predicted_peak_bytes =
          std::max(plan->choice.predicted_peak_bytes, PredictedRowBytes(row, plan->choice.option));
    }
    ASSIGN_OR_RETURN(plan->request, ApplyChoice(request, problem, plan->choice.option));
    profiler.AddToTotal(options.repeats);
    ASSIGN_OR_RETURN(verified, profiler.Measure(plan->request));
    plan->verified_peak_bytes = Peak(verified.live);
    plan->fits = plan->verified_peak_bytes <= plan->limit_bytes;
    if (plan->fits || !plan->choice.fits() || plan->retraces >= options.max_retraces) break;
    forbidden.push_back({plan->choice.option});
    ++plan->retraces;
  }
  return verified;
}

// Phase 5: labels, shortfall, saved bytes, granularity and only_as_needed of a verified plan
// (see the header for "only as much as needed").
void Summarize(const std::vector<std::vector<int64_t>>& largest, double tolerance_s,
               double verified_s, MitigationPlan* plan) {
  const MitigationProblem& problem = plan->problem;
  plan->shortfall_bytes = plan->fits
                              ? 0
                              : std::max<int64_t>(plan->choice.shortfall_bytes,
                                                  plan->verified_peak_bytes - plan->limit_bytes);
  plan->mitigated_s = verified_s;
  plan->saved_bytes = plan->base_peak_bytes - plan->verified_peak_bytes;
  for (size_t a = 0; a < problem.actions.size(); ++a) {
    const int o = plan->choice.option[a];
    plan->labels.push_back(problem.actions[a].options[o].label);
    if (o == 0) continue;
    // The largest saving of this action's options below o's that are not slower than o
    // (within the tolerance): a weaker option that costs more time is not "enough".
    const std::vector<MitigationOptionSpec>& opts = problem.actions[a].options;
    int64_t weaker = 0;
    for (size_t k = 1; k < largest[a].size(); ++k) {
      if (largest[a][k] < largest[a][o] && opts[k].added_s <= opts[o].added_s + tolerance_s) {
        weaker = std::max(weaker, largest[a][k]);
      }
    }
    plan->granularity_bytes = std::max(plan->granularity_bytes, largest[a][o] - weaker);
  }
  plan->only_as_needed = plan->saved_bytes <= plan->excess_bytes + plan->granularity_bytes;
}

}  // namespace

core::StatusOr<DiffusionRequest> ApplyChoice(const DiffusionRequest& base,
                                             const MitigationProblem& problem,
                                             const std::vector<int>& option) {
  if (option.size() != problem.actions.size()) {
    return core::InvalidArgument(
        fmt::format("{} options for {} actions", option.size(), problem.actions.size()));
  }
  DiffusionRequest r = base;
  for (size_t a = 0; a < option.size(); ++a) {
    const MitigationActionSpec& act = problem.actions[a];
    if (option[a] < 0 || option[a] >= static_cast<int>(act.options.size())) {
      return core::InvalidArgument(fmt::format("action {}: no option {}", act.name, option[a]));
    }
    RETURN_IF_ERROR(ApplyOption(r, act.name, act.options[option[a]].label));
  }
  return r;
}

core::StatusOr<MitigationPlan> PlanMitigations(const TinyModelSpec& spec,
                                               const DiffusionRequest& request,
                                               const MitigationPlanOptions& options) {
  RETURN_IF_ERROR(ValidateRequest(spec, request));
  RETURN_IF_ERROR(ValidatePlanOptions(options));
  const RecordFn record =
      options.record ? options.record : RecordFn([&](const DiffusionRequest& r) {
        return RecordRequest(spec, r, options.host_budget_bytes, options.host);
      });
  if (options.candidates.offload && !options.record && options.host == nullptr) {
    return core::InvalidArgument(
        "candidates.offload needs a host tier (options.host) or a recorder that has one");
  }
  MitigationPlan plan;
  plan.request = request;
  plan.limit_bytes = options.budget_bytes - options.reserve_bytes;
  MitigationProblem& problem = plan.problem;
  problem.limit_bytes = plan.limit_bytes;
  AddActions(spec, request, options.candidates, &problem);
  int total = 1;
  for (const MitigationActionSpec& a : problem.actions)
    total += static_cast<int>(a.options.size()) - 1;
  Profiler profiler(record, options, request.steps, total * options.repeats);

  ASSIGN_OR_RETURN(Profile base, profiler.Measure(request));
  plan.base_peak_bytes = Peak(base.live);
  plan.base_s = base.total_s;
  plan.excess_bytes = std::max<int64_t>(0, plan.base_peak_bytes - plan.limit_bytes);
  plan.choice.option.assign(problem.actions.size(), 0);
  if (plan.excess_bytes == 0) {  // nothing to do
    plan.verified_peak_bytes = plan.base_peak_bytes;
    plan.mitigated_s = plan.base_s;
    plan.fits = plan.only_as_needed = true;
    plan.runs = profiler.runs();
    plan.labels.assign(problem.actions.size(), "off");
    return plan;
  }
  // The first runs were the warm-up (page faults, caches): measure the base time again.
  {
    ASSIGN_OR_RETURN(Profile again, profiler.Measure(request));
    base.denoise_s = again.denoise_s, base.vae_s = again.vae_s, base.total_s = again.total_s;
    plan.base_s = base.total_s;
  }
  OptionSavings savings;
  RETURN_IF_ERROR(MeasureBaseOptions(request, base, profiler, &problem, &savings));
  if (savings.vae_action >= 0) {
    RETURN_IF_ERROR(MeasureVaeOptions(request, base, options, profiler, &problem, &savings));
  }
  BuildRows(savings, plan.limit_bytes, &problem);

  const double tolerance_s = options.time_tolerance_fraction * plan.base_s;
  ASSIGN_OR_RETURN(Profile verified,
                   SolveAndVerify(request, savings.rows, options, tolerance_s, profiler, &plan));
  Summarize(savings.largest, tolerance_s, verified.total_s, &plan);
  plan.runs = profiler.runs();
  return plan;
}

core::Json ToJson(const MitigationPlan& p) {
  return {{"template", TemplateToJson(p.request)},
          {"limit_bytes", p.limit_bytes},
          {"base_peak_bytes", p.base_peak_bytes},
          {"excess_bytes", p.excess_bytes},
          {"verified_peak_bytes", p.verified_peak_bytes},
          {"saved_bytes", p.saved_bytes},
          {"granularity_bytes", p.granularity_bytes},
          {"fits", p.fits},
          {"only_as_needed", p.only_as_needed},
          {"shortfall_bytes", p.shortfall_bytes},
          {"base_s", p.base_s},
          {"mitigated_s", p.mitigated_s},
          {"runs", p.runs},
          {"retraces", p.retraces},
          {"rows", p.problem.rows.size()},
          {"choice", ToJson(p.problem, p.choice)},
          {"request", MitigationsToJson(p.request)}};
}

}  // namespace tessera::xema
