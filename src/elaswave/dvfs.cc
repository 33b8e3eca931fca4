#include "elaswave/dvfs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::elaswave {
namespace {

// Speeds the range may name: above 0, at most twice nominal.
constexpr double kMaxSpeed = 2.0;

core::Status ValidateInputs(const std::vector<DvfsStage>& stages, const DvfsOptions& o) {
  if (stages.empty()) return core::InvalidArgument("stages: empty, need at least one stage");
  for (size_t i = 0; i < stages.size(); ++i) {
    if (!std::isfinite(stages[i].work_s) || stages[i].work_s <= 0) {
      return core::InvalidArgument(fmt::format(
          "stages[{}].work_s: got {}, must be finite and > 0 (seconds of compute per step)", i,
          stages[i].work_s));
    }
    if (!(stages[i].busy_share > 0 && stages[i].busy_share <= 1)) {
      return core::InvalidArgument(
          fmt::format("stages[{}].busy_share: got {}, must be in (0, 1]", i, stages[i].busy_share));
    }
    if (stages[i].devices < 1) {
      return core::InvalidArgument(
          fmt::format("stages[{}].devices: got {}, must be >= 1", i, stages[i].devices));
    }
  }
  RETURN_IF_ERROR(ValidateDvfsRange(o.range));
  RETURN_IF_ERROR(ValidatePowerModel(o.power));
  if (!std::isfinite(o.power_cap_w) || o.power_cap_w <= 0) {
    return core::InvalidArgument(
        fmt::format("power_cap_w: got {}, must be finite and > 0 (watts)", o.power_cap_w));
  }
  return core::Status::Ok();
}

std::string StageLabel(const std::vector<DvfsStage>& stages, size_t i) {
  return stages[i].name.empty() ? fmt::format("stage {}", i) : stages[i].name;
}

double MinWork(const std::vector<DvfsStage>& stages) {
  double w = std::numeric_limits<double>::infinity();
  for (const DvfsStage& s : stages) w = std::min(w, s.work_s);
  return w;
}

// f_s = work_s / tau, clamped into the range (rounding at the ends only).
std::vector<double> SpeedsFor(const std::vector<DvfsStage>& stages, double tau,
                              const DvfsRange& r) {
  std::vector<double> f;
  for (const DvfsStage& s : stages) f.push_back(std::clamp(s.work_s / tau, r.f_min, r.f_max));
  return f;
}

void FillBefore(const std::vector<DvfsStage>& stages, const PowerModel& power, DvfsChoice& c) {
  c.step_before_s = LongestWorkS(stages);
  c.power_before_w = NominalPowerW(stages, power);
  c.energy_before_j = c.power_before_w * c.step_before_s;
}

}  // namespace

core::Status ValidateDvfsRange(const DvfsRange& r) {
  for (const auto& [name, f] : {std::pair{"f_min", r.f_min}, std::pair{"f_max", r.f_max}}) {
    if (!std::isfinite(f) || f <= 0 || f > kMaxSpeed) {
      return core::InvalidArgument(fmt::format(
          "{}: got {}, must be in (0, {}] (a speed relative to nominal 1)", name, f, kMaxSpeed));
    }
  }
  if (r.f_min > r.f_max) {
    return core::InvalidArgument(
        fmt::format("f_min: got {}, above f_max {}; the range is f_min,f_max with f_min <= f_max",
                    r.f_min, r.f_max));
  }
  return core::Status::Ok();
}

core::Status ValidatePowerModel(const PowerModel& p) {
  if (!std::isfinite(p.idle_w) || p.idle_w < 0) {
    return core::InvalidArgument(
        fmt::format("idle_w: got {}, must be finite and >= 0 (watts per device)", p.idle_w));
  }
  if (!std::isfinite(p.peak_w) || p.peak_w <= p.idle_w) {
    return core::InvalidArgument(
        fmt::format("peak_w: got {}, must be finite and above idle_w {} (watts per device)",
                    p.peak_w, p.idle_w));
  }
  return core::Status::Ok();
}

double ModeledPowerW(const std::vector<DvfsStage>& stages, const std::vector<double>& f,
                     double step_s, const PowerModel& power) {
  double total = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    const double u = std::min(1.0, stages[i].busy_share * stages[i].work_s / f[i] / step_s);
    total +=
        stages[i].devices * (power.idle_w + (power.peak_w - power.idle_w) * u * f[i] * f[i] * f[i]);
  }
  return total;
}

double LongestWorkS(const std::vector<DvfsStage>& stages) {
  double w = 0;
  for (const DvfsStage& s : stages) w = std::max(w, s.work_s);
  return w;
}

double NominalPowerW(const std::vector<DvfsStage>& stages, const PowerModel& power) {
  if (stages.empty()) return 0;
  return ModeledPowerW(stages, std::vector<double>(stages.size(), 1.0), LongestWorkS(stages),
                       power);
}

core::StatusOr<DvfsChoice> ChooseFrequencies(const std::vector<DvfsStage>& stages,
                                             const DvfsOptions& o) {
  RETURN_IF_ERROR(ValidateInputs(stages, o));
  const PowerModel& pm = o.power;
  double idle = 0, cubes = 0;
  size_t heaviest = 0, lightest = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    idle += stages[i].devices * pm.idle_w;
    cubes += stages[i].devices * stages[i].busy_share * std::pow(stages[i].work_s, 3);
    if (stages[i].work_s > stages[heaviest].work_s) heaviest = i;
    if (stages[i].work_s < stages[lightest].work_s) lightest = i;
  }
  const double tau_speed = LongestWorkS(stages) / o.range.f_max;  // the busiest stage at f_max
  const double tau_idle = MinWork(stages) / o.range.f_min;        // the lightest stage at f_min
  if (o.power_cap_w <= idle) {
    return core::Infeasible(fmt::format(
        "dvfs: the power cap {:.1f} W is not above the idle power {:.1f} W of the {} stages",
        o.power_cap_w, idle, stages.size()));
  }
  const double tau_power = std::cbrt((pm.peak_w - pm.idle_w) * cubes / (o.power_cap_w - idle));
  // Relative slack for rounding when comparing the ends of the feasible interval.
  constexpr double kSlack = 1e-12;
  if (tau_speed > tau_idle * (1 + kSlack)) {
    return core::Infeasible(fmt::format(
        "dvfs: {} has {:.3f}x the work of {}, more than f_max / f_min = {:.3f}: no "
        "step period keeps every stage busy inside [{}, {}]",
        StageLabel(stages, heaviest), stages[heaviest].work_s / stages[lightest].work_s,
        StageLabel(stages, lightest), o.range.f_max / o.range.f_min, o.range.f_min, o.range.f_max));
  }
  if (tau_power > tau_idle * (1 + kSlack)) {
    return core::Infeasible(fmt::format(
        "dvfs: the power cap {:.1f} W needs a step period of at least {:.6g} s, where {} "
        "(work {:.6g} s) would run below f_min {}",
        o.power_cap_w, tau_power, StageLabel(stages, lightest), stages[lightest].work_s,
        o.range.f_min));
  }
  DvfsChoice c;
  c.limited_by = tau_power >= tau_speed ? "power cap" : "f_max";
  double tau = std::max(tau_speed, tau_power);
  c.frequency = SpeedsFor(stages, tau, o.range);
  c.power_w = ModeledPowerW(stages, c.frequency, tau, pm);
  // Never over the cap as computed: nudge tau up past any rounding.
  for (int i = 0; i < 64 && c.power_w > o.power_cap_w; ++i) {
    tau = std::nextafter(tau, std::numeric_limits<double>::infinity());
    c.frequency = SpeedsFor(stages, tau, o.range);
    c.power_w = ModeledPowerW(stages, c.frequency, tau, pm);
  }
  if (c.power_w > o.power_cap_w) {
    return core::Internal(
        fmt::format("dvfs: power {} W over the cap {} W after rounding", c.power_w, o.power_cap_w));
  }
  c.step_s = tau;
  c.energy_per_step_j = c.power_w * tau;
  FillBefore(stages, pm, c);
  return c;
}

core::StatusOr<DvfsChoice> ChooseFrequenciesByGrid(const std::vector<DvfsStage>& stages,
                                                   const DvfsOptions& o, int points) {
  RETURN_IF_ERROR(ValidateInputs(stages, o));
  if (points < 2) return core::InvalidArgument(fmt::format("points: got {}, need >= 2", points));
  const double lo = MinWork(stages) / o.range.f_max / 2;
  const double hi = 2 * LongestWorkS(stages) / o.range.f_min;
  for (int k = 0; k < points; ++k) {
    const double tau = lo + (hi - lo) * k / (points - 1);
    std::vector<double> f;
    bool in_range = true;
    for (const DvfsStage& s : stages) {
      f.push_back(s.work_s / tau);
      in_range = in_range && f.back() >= o.range.f_min && f.back() <= o.range.f_max;
    }
    if (!in_range) continue;
    double power = 0;
    for (size_t i = 0; i < stages.size(); ++i) {
      const double busy_s = stages[i].busy_share * stages[i].work_s / f[i];
      power += stages[i].devices * (o.power.idle_w + (o.power.peak_w - o.power.idle_w) *
                                                         (busy_s / tau) * std::pow(f[i], 3));
    }
    if (power > o.power_cap_w) continue;
    DvfsChoice c;
    c.frequency = f;
    c.step_s = tau;
    c.power_w = power;
    c.energy_per_step_j = power * tau;
    c.limited_by = "grid";
    FillBefore(stages, o.power, c);
    return c;
  }
  return core::Infeasible("dvfs (grid): no step period on the grid meets every constraint");
}

}  // namespace tessera::elaswave
