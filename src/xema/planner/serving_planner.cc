#include "xema/planner/serving_planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/elapsed.h"
#include "core/stats.h"

namespace tessera::xema {
namespace {

using Clock = std::chrono::steady_clock;

// One candidate of a template: a variant at a concurrency (variant -1: not planned, the
// fallback serves it).
struct Candidate {
  int variant, concurrency;
};
using Candidates = std::vector<std::vector<Candidate>>;  // per template

// Phase 1, collect candidates per template: feasible, not dominated at the same concurrency
// (a template without any gets {-1, 1} and is listed in result->unplanned). Counts the
// candidates, infeasible and dominated ones in *result.
Candidates CollectCandidates(const ServingProfile& p, const ServingPlannerOptions& o,
                             ServingPlannerResult* result) {
  Candidates cands(p.templates.size());
  for (size_t t = 0; t < p.templates.size(); ++t) {
    const std::vector<TemplateVariant>& vs = p.templates[t].variants;
    for (int c = 1; c <= o.max_concurrency; ++c) {
      for (size_t v = 0; v < vs.size(); ++v) {
        ++result->candidates;
        if (vs[v].arena_bytes > p.region_bytes / c) {
          ++result->infeasible;
          continue;
        }
        bool dominated = false;
        for (size_t w = 0; w < vs.size() && !dominated; ++w) {
          if (w == v || vs[w].arena_bytes > p.region_bytes / c ||
              vs[w].sp_degree > vs[v].sp_degree || vs[w].batch != vs[v].batch) {
            continue;
          }
          const bool no_worse =
              vs[w].arena_bytes <= vs[v].arena_bytes && vs[w].solo_s <= vs[v].solo_s;
          const bool better = vs[w].arena_bytes < vs[v].arena_bytes || vs[w].solo_s < vs[v].solo_s;
          dominated = no_worse && (better || w < v);
        }
        if (dominated) {
          ++result->dominated;
          continue;
        }
        cands[t].push_back({static_cast<int>(v), c});
      }
    }
    if (cands[t].empty()) {
      result->unplanned.push_back(p.templates[t].label);
      cands[t].push_back({-1, 1});
    } else if (o.may_shed) {
      cands[t].push_back({-1, 1});  // last: the first of equal scores keeps the template
    }
  }
  return cands;
}

// Infeasible, naming the smallest arena profiled: no template of the mix fits the region.
core::Status NoTemplateFits(const ServingProfile& p, const ServingPlannerOptions& o) {
  int64_t least = 0;
  for (const TemplateProfile& t : p.templates) {
    for (const TemplateVariant& v : t.variants) {
      if (least == 0 || v.arena_bytes < least) least = v.arena_bytes;
    }
  }
  return core::Infeasible(fmt::format(
      "budget: got {} bytes, no template of the mix fits: {} bytes are left beside the weights, "
      "the smallest arena profiled (mitigations included) is {} bytes",
      o.budget_bytes, p.region_bytes, least));
}

// Phase 2, search: scores configurations by simulation (counting them in
// result->simulated) and keeps the best (BetterScore; the first of equals).
class ConfigurationSearch {
 public:
  ConfigurationSearch(const ServingProfile& p, const ServingPlannerOptions& o,
                      const std::vector<PlannedArrival>& arrivals, ServingPlannerResult* result)
      : p_(p), o_(o), arrivals_(arrivals), result_(result) {}

  // Every configuration when the candidates' product fits max_configurations; else batch 1
  // first (exhaustive when it fits, else a descent from each template's first candidate: its
  // fastest at c = 1), then a descent over every candidate from the best found.
  core::Status Run(const Candidates& cands) {
    if (FitsExhaustive(cands)) return Exhaustive(cands);
    // Offering batches never ends the search below what batch 1 alone reaches (a descent only
    // climbs).
    Candidates batch_one(cands.size());
    for (size_t t = 0; t < cands.size(); ++t) {
      for (const Candidate& k : cands[t]) {
        if (k.variant < 0 || p_.templates[t].variants[static_cast<size_t>(k.variant)].batch == 1)
          batch_one[t].push_back(k);
      }
      if (batch_one[t].empty()) batch_one[t].push_back(cands[t][0]);
    }
    if (FitsExhaustive(batch_one)) {
      RETURN_IF_ERROR(Exhaustive(batch_one));
    } else {
      Configuration c;
      for (const auto& ct : batch_one) {
        c.variant.push_back(ct[0].variant);
        c.concurrency.push_back(ct[0].concurrency);
      }
      RETURN_IF_ERROR(Consider(c));
      RETURN_IF_ERROR(Descend(batch_one));
    }
    return Descend(cands);
  }

  const Configuration& best() const { return best_; }
  const ConfigurationScore& best_score() const { return best_score_; }

 private:
  core::Status Consider(const Configuration& c) {
    ++result_->simulated;
    ASSIGN_OR_RETURN(const ConfigurationScore s, ScoreConfiguration(p_, o_, arrivals_, c));
    if (!have_ || BetterScore(s, best_score_)) {
      best_ = c;
      best_score_ = s;
      have_ = true;
    }
    return core::Status::Ok();
  }

  bool FitsExhaustive(const Candidates& cs) const {
    double product = 1;
    for (const auto& c : cs) product *= static_cast<double>(c.size());
    return product <= static_cast<double>(o_.max_configurations);
  }

  core::Status Exhaustive(const Candidates& cs) {
    std::vector<size_t> idx(cs.size(), 0);
    for (;;) {
      Configuration c;
      for (size_t t = 0; t < cs.size(); ++t) {
        c.variant.push_back(cs[t][idx[t]].variant);
        c.concurrency.push_back(cs[t][idx[t]].concurrency);
      }
      RETURN_IF_ERROR(Consider(c));
      size_t t = 0;
      while (t < idx.size() && ++idx[t] == cs[t].size()) idx[t++] = 0;
      if (t == idx.size()) return core::Status::Ok();
    }
  }

  // Coordinate descent from the best so far: one template's candidate changed at a time.
  core::Status Descend(const Candidates& cs) {
    for (int round = 0; round < 10; ++round) {
      const Configuration start = best_;
      for (size_t t = 0; t < cs.size(); ++t) {
        for (const Candidate& k : cs[t]) {
          Configuration x = best_;
          x.variant[t] = k.variant;
          x.concurrency[t] = k.concurrency;
          RETURN_IF_ERROR(Consider(x));
        }
      }
      if (best_.variant == start.variant && best_.concurrency == start.concurrency) break;
    }
    return core::Status::Ok();
  }

  const ServingProfile& p_;
  const ServingPlannerOptions& o_;
  const std::vector<PlannedArrival>& arrivals_;
  ServingPlannerResult* result_;
  Configuration best_;
  ConfigurationScore best_score_;
  bool have_ = false;
};

}  // namespace

bool BetterScore(const ConfigurationScore& a, const ConfigurationScore& b) {
  if (a.feasible != b.feasible) return a.feasible;
  if (a.attainment != b.attainment) return a.attainment > b.attainment;
  if (a.left_out != b.left_out) return a.left_out < b.left_out;
  return a.mean_latency_s < b.mean_latency_s;
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
    e.sp_degree = v.sp_degree;
    e.batch = v.batch;
    e.replicas = o.devices / v.sp_degree;
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
    if (entry_of[t] < 0) {  // unplanned: counted as a miss below
      ++score.left_out;
      continue;
    }
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
  for (size_t t = 0; t < nt; ++t) {
    if (c.variant[t] >= 0)
      so.batch_work_s.push_back(p.templates[t].variants[static_cast<size_t>(c.variant[t])].batch_s);
  }
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
  const Candidates cands = CollectCandidates(p, o, &result);
  if (result.unplanned.size() == p.templates.size()) return NoTemplateFits(p, o);
  ConfigurationSearch search(p, o, arrivals, &result);
  RETURN_IF_ERROR(search.Run(cands));
  const Configuration& best = search.best();
  const ConfigurationScore& best_score = search.best_score();
  result.chosen = best;
  result.score = best_score;
  for (size_t t = 0; t < p.templates.size(); ++t) {
    const std::string& label = p.templates[t].label;
    if (best.variant[t] < 0 && std::find(result.unplanned.begin(), result.unplanned.end(), label) ==
                                   result.unplanned.end()) {
      result.shed.push_back(label);
    }
  }
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
                         {"shed", result.shed},
                         {"configuration", ConfigurationLabel(p, best)}};
  return result;
}

}  // namespace tessera::xema
