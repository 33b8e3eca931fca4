#include "tarot/bench_report.h"

#include <fmt/format.h>

#include <cmath>

namespace tessera::tarot {
namespace {

constexpr double kPoints = 100;
// Bars compare in points computed from fractions: 100 x (0.3 - 0.2) is 9.999999999999998.
constexpr double kSlack = 1e-9;

bool AtLeast(double v, double bar) { return v >= bar - kSlack; }

const MetricSummary* Tier(const SystemSummary* s, const std::string& tier) {
  if (s == nullptr) return nullptr;
  auto it = s->by_tier.find(tier);
  return it == s->by_tier.end() ? nullptr : &it->second;
}

TargetCheck EriCheck(const BenchReport& r, const std::string& tier, bool gain) {
  TargetCheck c;
  c.name = (gain ? "eri-gain-" : "eri-keep-") + tier;
  c.claim = gain ? "ERI beats naive SAM3 on " + tier : "ERI keeps naive SAM3's gIoU on " + tier;
  c.bar = gain ? fmt::format(">= +{:g} points", kEriGainPoints)
               : fmt::format(">= {:g} points", kEriKeepPoints);
  const MetricSummary* eri = Tier(FindSystem(r, System::kEri), tier);
  const MetricSummary* naive = Tier(FindSystem(r, System::kNaive), tier);
  if (eri == nullptr || naive == nullptr) {
    c.note = FindSystem(r, System::kEri) && FindSystem(r, System::kNaive)
                 ? "no " + tier + " samples"
                 : "needs systems eri and naive";
    return c;
  }
  c.applicable = true;
  c.value = kPoints * (eri->giou - naive->giou);
  c.met = AtLeast(c.value, gain ? kEriGainPoints : kEriKeepPoints);
  return c;
}

core::Json Ci(const Interval& i) { return core::Json::array({i.lo, i.hi}); }

core::Json SummaryJson(const MetricSummary& m) {
  return {
      {"samples", m.samples},     {"giou", m.giou}, {"giou_ci", Ci(m.giou_ci)}, {"ciou", m.ciou},
      {"ciou_ci", Ci(m.ciou_ci)}, {"p50", m.p50},   {"p50_ci", Ci(m.p50_ci)},   {"p70", m.p70},
      {"p70_ci", Ci(m.p70_ci)},   {"p90", m.p90},   {"p90_ci", Ci(m.p90_ci)}};
}

core::Json OptionsJson(const core::RegistryOptions& o) {
  core::Json j = core::Json::object();
  for (const auto& [k, v] : o) j[k] = v;
  return j;
}

core::Json GroupJson(const BoundaryGroup& b) {
  return {{"with_errors", b.with_errors},
          {"clean", b.clean},
          {"eri_giou", b.eri_giou},
          {"full_giou", b.full_giou},
          {"gain", b.gain},
          {"gain_ci", Ci(b.gain_ci)},
          {"clean_eri_giou", b.clean_eri_giou},
          {"clean_full_giou", b.clean_full_giou},
          {"harmful", b.harmful},
          {"harmful_fraction", b.harmful_fraction}};
}

// NaN (an unswept rate) as JSON null.
core::Json Number(double v) { return std::isnan(v) ? core::Json(nullptr) : core::Json(v); }

}  // namespace

const SystemSummary* FindSystem(const BenchReport& report, System s) {
  for (const SystemSummary& x : report.systems)
    if (x.system == s) return &x;
  return nullptr;
}

std::vector<TargetCheck> CheckTargets(const BenchReport& r) {
  std::vector<TargetCheck> out;
  for (const char* tier : {"E3", "E4", "I1", "I2"}) out.push_back(EriCheck(r, tier, true));
  for (const char* tier : {"E0", "E1"}) out.push_back(EriCheck(r, tier, false));

  TargetCheck gain, harm;
  gain.name = "msr-gain";
  gain.claim = "MSR fixes injected over/under-segmentation";
  gain.bar = fmt::format(">= +{:g} points", kMsrGainPoints);
  harm.name = "msr-harm";
  harm.claim = "MSR rarely harms clean samples";
  harm.bar = fmt::format("< {:g}% of clean samples", kPoints * kMsrHarmFraction);
  if (!r.boundary.has_value()) {
    gain.note = harm.note = "no boundary split (needs the synthetic segmenter)";
  } else {
    const BoundaryGroup& b = r.boundary->all;
    if (b.with_errors == 0) {
      gain.note = "no sample with boundary errors";
    } else {
      gain.applicable = true;
      gain.value = kPoints * b.gain;
      gain.met = AtLeast(gain.value, kMsrGainPoints);
    }
    if (b.clean == 0) {
      harm.note = "no clean sample";
    } else {
      harm.applicable = true;
      harm.value = kPoints * b.harmful_fraction;
      harm.met = b.harmful_fraction < kMsrHarmFraction;
    }
  }
  out.push_back(gain);
  out.push_back(harm);

  TargetCheck dep;
  dep.name = "reasoner-error";
  const std::string& skill = r.options.sweep_skill;
  dep.claim = "less dependence on the reasoner at 20% error (" +
              (skill == "all" ? std::string("every skill") : skill + " errors only") + ")";
  dep.bar = fmt::format("loss(full) <= {:g} x loss(naive-coupling)", kReasonerLossRatio);
  if (!r.sweep.has_value() || std::isnan(r.sweep->full_loss_at_20)) {
    dep.note = "no sweep with rates 0 and 0.2 (--sweep-reasoner-error)";
  } else {
    const double full = kPoints * r.sweep->full_loss_at_20;
    const double coupling = kPoints * r.sweep->coupling_loss_at_20;
    dep.applicable = true;
    dep.value = coupling > 0 ? full / coupling : (full <= 0 ? 0.0 : INFINITY);
    dep.met = coupling > 0 ? AtLeast(kReasonerLossRatio * coupling, full) : AtLeast(0, full);
    dep.note = fmt::format("loss full {:.1f}, naive-coupling {:.1f} points", full, coupling);
  }
  out.push_back(dep);
  return out;
}

core::Json BenchReportToJson(const BenchReport& r) {
  const BenchOptions& o = r.options;
  core::Json systems = core::Json::array();
  for (const SystemSummary& s : r.systems) {
    core::Json tiers = core::Json::object();
    for (const auto& [tier, m] : s.by_tier) tiers[tier] = SummaryJson(m);
    systems.push_back({{"system", SystemName(s.system)},
                       {"tiers", tiers},
                       {"calls_per_query",
                        {{"segmenter", s.segmenter_calls},
                         {"reasoner", s.reasoner_calls},
                         {"features", s.feature_calls}}},
                       {"ms_per_query", {{"median", s.ms_median}, {"mean", s.ms_mean}}},
                       {"setup_ms_median", s.setup_ms_median},
                       {"errors", s.errors},
                       {"first_error", s.first_error}});
  }
  core::Json sys_names = core::Json::array();
  for (System s : o.systems) sys_names.push_back(SystemName(s));
  core::Json j = {{"kind", "tarot-bench"},
                  {"version", 1},
                  {"measured_on", "this machine (times are wall clock, one thread)"},
                  {"options",
                   {{"set", o.set},
                    {"n", o.n},
                    {"seed", o.seed},
                    {"systems", sys_names},
                    {"segmenter", o.backends.segmenter},
                    {"segmenter_options", OptionsJson(o.backends.segmenter_options)},
                    {"reasoner", o.backends.reasoner},
                    {"reasoner_options", OptionsJson(o.backends.reasoner_options)},
                    {"features", o.backends.features},
                    {"bootstrap_resamples", o.metrics.bootstrap_resamples}}},
                  {"scenes", r.scenes},
                  {"samples", r.samples},
                  {"samples_per_tier", r.samples_per_tier},
                  {"systems", systems},
                  {"wall_s", r.wall_s}};
  if (r.boundary.has_value()) {
    const BoundarySplit& b = *r.boundary;
    j["boundary"] = {{"segmenter_options", OptionsJson(b.segmenter_options)},
                     {"all", GroupJson(b.all)},
                     {"single", GroupJson(b.single)},
                     {"group", GroupJson(b.group)}};
    for (const auto& [system, g] : b.ablations) j["boundary"][SystemName(system)] = GroupJson(g);
  }
  if (r.sweep.has_value()) {
    core::Json points = core::Json::array();
    for (const SweepPoint& p : r.sweep->points) {
      points.push_back({{"rate", p.rate},
                        {"full_giou", p.full_giou},
                        {"full_giou_ci", Ci(p.full_ci)},
                        {"naive_coupling_giou", p.coupling_giou},
                        {"naive_coupling_giou_ci", Ci(p.coupling_ci)}});
    }
    j["sweep"] = {{"skill", r.options.sweep_skill},
                  {"points", points},
                  {"full_loss_at_20", Number(r.sweep->full_loss_at_20)},
                  {"naive_coupling_loss_at_20", Number(r.sweep->coupling_loss_at_20)}};
  }
  core::Json targets = core::Json::array();
  for (const TargetCheck& t : CheckTargets(r)) {
    targets.push_back({{"name", t.name},
                       {"claim", t.claim},
                       {"bar", t.bar},
                       {"applicable", t.applicable},
                       {"value", t.applicable ? Number(t.value) : core::Json(nullptr)},
                       {"met", t.met},
                       {"note", t.note}});
  }
  j["targets"] = targets;
  return j;
}

core::Json BenchPlotJson(const BenchReport& r) {
  std::vector<std::string> tiers;
  for (const auto t : AllTiers()) tiers.push_back(TierName(t));
  tiers.push_back("all");
  core::Json systems = core::Json::array();
  for (const SystemSummary& s : r.systems) {
    core::Json giou = core::Json::array();
    for (const std::string& t : tiers) {
      const auto it = s.by_tier.find(t);
      giou.push_back(it == s.by_tier.end() || it->second.samples == 0
                         ? core::Json(nullptr)
                         : core::Json(100 * it->second.giou));
    }
    systems.push_back({{"system", SystemName(s.system)}, {"giou", giou}});
  }
  core::Json sweep = nullptr;
  if (r.sweep.has_value()) {
    core::Json rates = core::Json::array(), full = core::Json::array(),
               coupling = core::Json::array();
    for (const SweepPoint& p : r.sweep->points) {
      rates.push_back(100 * p.rate);
      full.push_back(100 * p.full_giou);
      coupling.push_back(100 * p.coupling_giou);
    }
    sweep = {
        {"skill", r.options.sweep_skill}, {"rates", rates}, {"full", full}, {"coupling", coupling}};
  }
  return {{"title", fmt::format("tarot bench: {}, {} scenes (seed {}), segmenter {}, reasoner {}",
                                r.options.set, r.scenes, r.options.seed,
                                r.options.backends.segmenter, r.options.backends.reasoner)},
          {"tiers", tiers},
          {"systems", systems},
          {"sweep", sweep}};
}

}  // namespace tessera::tarot
