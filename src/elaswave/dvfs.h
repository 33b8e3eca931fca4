// DVFS after a change: the clock speed of every pipeline stage, chosen so the survivors finish a
// step as soon as they can without drawing more power than the fault-free job did. Modeled: no
// cpufreq is touched; a speed f scales a stage's compute time by 1 / f (f = 1 is nominal).
//
// Inputs: per stage its work per step `work_s` (seconds at f = 1 that the stage's part of the
// step takes: its cost per micro-batch times its pipeline's micro-batch count, or under 1F1B
// (m + S - 1) times the cost, so the fill and drain count), the share of that it computes
// `busy_share` (1, or m / (m + S - 1) under 1F1B: the rest is the pipeline's bubble) and its
// `devices` (the tensor-parallel group's size); a speed range [f_min, f_max] (default
// [0.6, 1.15]); a power model per device
//
//     P_s = P_idle + (P_peak - P_idle) * u_s * f_s^3,   u_s = busy / tau = a_s (work_s / f_s) / tau
//
// (a_s = busy_share, d_s = devices; defaults P_idle 100 W, P_peak 400 W: a modeled accelerator
// whose dynamic power goes with the cube of its clock); and a power cap in watts (the plan command
// uses the fault-free job's power at f = 1, NominalPowerW).
//
// The choice: the smallest step period tau such that f_s = work_s / tau lies in [f_min, f_max]
// for every stage (no stage idles beyond its bubble: the slack of a light stage becomes a lower
// clock and the critical stage may boost) and sum_s P_s <= cap. With f_s = work_s / tau,
// u_s = a_s and the power is
//
//     P(tau) = sum_s d_s (P_idle + (P_peak - P_idle) a_s (work_s / tau)^3),
//
// decreasing in tau, so the answer is closed-form:
//     tau = max(max_s work_s / f_max, cbrt((P_peak - P_idle) sum_s d_s a_s work_s^3 /
//                                           (cap - P_idle sum_s d_s))),
// feasible when tau <= min_s work_s / f_min. The result is nudged up by ulps until the power as
// computed is <= the cap, so it is never over the cap. ChooseFrequenciesByGrid is the plain
// reference (tests only): a fine grid over tau, every constraint checked directly.
//
// "Before" figures are the same stages at f = 1 with tau = max_s work_s (the busiest stage sets
// the period; u_s = a_s work_s / tau); energy per step is power x tau.
//
// Errors: InvalidArgument naming the field (stages[i].work_s, .busy_share, .devices, f_min, f_max,
// idle_w, peak_w, power_cap_w) and the value; Infeasible with the reason when no tau keeps every
// stage in range under the cap.
// Thread-safety: value types and pure functions.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::elaswave {

struct DvfsStage {
  double work_s = 0;        // seconds per step at f = 1 (sets the period)
  double busy_share = 1.0;  // the share of work_s it computes, in (0, 1]
  int devices = 1;          // processes (devices) the stage runs on
  std::string name = {};    // how messages name it ("stage i" when empty)
};

struct DvfsRange {
  double f_min = 0.6, f_max = 1.15;
};

struct PowerModel {
  double idle_w = 100;  // per device, clock running, nothing computed
  double peak_w = 400;  // per device, busy at f = 1
};

struct DvfsOptions {
  DvfsRange range;
  PowerModel power;
  double power_cap_w = 0;  // the whole job's cap
};

struct DvfsChoice {
  std::vector<double> frequency;  // f_s per stage, in [f_min, f_max]
  double step_s = 0;              // tau
  double power_w = 0;             // sum_s P_s at the chosen speeds (<= the cap)
  double energy_per_step_j = 0;   // power_w * step_s
  double step_before_s = 0;       // the same stages at f = 1: max_s work_s
  double power_before_w = 0;      // NominalPowerW of the stages
  double energy_before_j = 0;     // power_before_w * step_before_s
  // What fixed tau: "power cap" (the cap is met with equality) or "f_max" (the busiest stage is
  // at its top speed and the cap leaves room).
  std::string limited_by;
};

// f_min, f_max in (0, 2] with f_min <= f_max; InvalidArgument naming the field otherwise.
core::Status ValidateDvfsRange(const DvfsRange& range);
core::Status ValidatePowerModel(const PowerModel& power);

// max_s work_s: the period at f = 1 (0 for no stages).
double LongestWorkS(const std::vector<DvfsStage>& stages);

// The stages' power at f = 1 with tau = max_s work_s (u_s = a_s work_s / tau).
double NominalPowerW(const std::vector<DvfsStage>& stages, const PowerModel& power);

// sum_s P_s when stage s runs at f[s] for a period tau (u_s = min(1, a_s work_s / f_s / tau)).
double ModeledPowerW(const std::vector<DvfsStage>& stages, const std::vector<double>& f,
                     double step_s, const PowerModel& power);

core::StatusOr<DvfsChoice> ChooseFrequencies(const std::vector<DvfsStage>& stages,
                                             const DvfsOptions& options);

// The reference: tau over `points` equal steps of [min_s work_s / f_max / 2,
// 2 max_s work_s / f_min], the first that passes every check. Infeasible when none does.
core::StatusOr<DvfsChoice> ChooseFrequenciesByGrid(const std::vector<DvfsStage>& stages,
                                                   const DvfsOptions& options, int points);

}  // namespace tessera::elaswave
