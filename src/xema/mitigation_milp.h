// The mitigation MILP: which memory mitigations to switch on, and how strongly, so that a
// request fits a device budget at every point of its timeline at the least added time. Xema's
// "only where and only as much as needed": actions that do not help at a point under pressure
// cost time and are not chosen; of the options that fit, the cheapest set wins.
//
// Problem (all bytes as measured on traces; the caller builds it, e.g. from recorded runs of
// the real pipeline, mitigation_planner.h):
//   actions a = 1..A, each with options o = 0..n_a - 1; option 0 is "off" (no time, no bytes).
//   Exactly one option per action: sum_o x_ao = 1, x binary.
//   Each option has an added time c_ao (seconds, >= 0) for the whole request.
//   Rows r (points of the timeline): live bytes L_r when the row's condition holds, minus the
//   bytes s_rao saved there by option o of action a:
//       L_r x_cond(r) - sum_ao s_rao x_ao <= limit + z
//   where cond(r) is an (action, option) pair or none (x_cond = 1). A conditional row is a
//   timeline point of a structural option (one that changes the ops, e.g. VAE tiling): it binds
//   only when that option is chosen. It is L_r - s x <= limit + z + M (1 - x_cond) with
//   M = L_r + N_r, N_r the bytes options may add there (negative savings), i.e.
//       (L_r + N_r) x_cond - sum s x <= limit + N_r + z,
//   which holds for any choice when x_cond = 0 (then -s x <= N_r).
//   z >= 0 is the shortfall (bytes over the limit that no choice removes), penalised far above
//   any time: the solve is always feasible, and z > 0 says the request cannot fit and by how
//   much.
//   Stage 1: minimise  sum_ao c_ao x_ao + kShortfallPenaltyPerByte z.
//   Stage 2 (only as much as needed): with z fixed at its optimum and the time at most the
//   optimum + time_tolerance_s (measured times closer than that are not told apart),
//   minimise sum_ao g_ao x_ao, g_ao the option's strength (saved_bytes: the most it saves at
//   any point; for an option without it, the largest s_rao over the rows).
// Bytes enter the model in MiB (doubles) so that CBC's tolerances are meaningful.
//
// Result: the chosen option per action, the added time, the predicted peak of every row after
// the choice, the shortfall. "Only as much as needed" is checked by the caller against a
// re-traced run (the model is linear: savings of two options at one point are assumed to add).
//
// Errors: InvalidArgument naming the field for an empty option list, a negative time, a row
// whose savings or condition point at an action / option that does not exist, negative
// limit or live bytes; solver failures pass through.
// Pure function of its arguments; thread-safe (CBC calls are serialised inside solver/).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"

namespace tessera::xema {

struct MitigationOptionSpec {
  std::string label;        // e.g. "ffn_chunks=4"
  double added_s = 0;       // seconds added to the whole request, >= 0
  int64_t saved_bytes = 0;  // strength: the most it saves at any point (0: from the rows)
};

struct MitigationActionSpec {
  std::string name;                           // e.g. "ffn_chunks"
  std::vector<MitigationOptionSpec> options;  // options[0] is "off": label it, added_s 0
};

struct OptionRef {
  int action = -1;  // -1: none
  int option = 0;
};

struct SavingTerm {
  int action = 0;
  int option = 0;
  int64_t bytes = 0;  // saved at the row's point (negative: the option costs bytes there)
};

struct MitigationRow {
  std::string point;       // e.g. "dit.block2@step0" (for messages and reports)
  int64_t live_bytes = 0;  // L_r: live bytes at the point with no saving, weights included
  OptionRef condition;     // the row binds only when this option is chosen (action -1: always)
  std::vector<SavingTerm> savings;
};

struct MitigationProblem {
  int64_t limit_bytes = 0;  // budget minus reserve
  std::vector<MitigationActionSpec> actions;
  std::vector<MitigationRow> rows;
};

struct MitigationChoice {
  std::vector<int> option;           // per action, the chosen option index
  double added_s = 0;                // sum of the chosen options' times
  int64_t shortfall_bytes = 0;       // > 0: cannot fit; the least excess over the limit achievable
  int64_t predicted_peak_bytes = 0;  // max over the binding rows given of L_r - savings
  double solve_ms = 0;
  bool fits() const { return shortfall_bytes == 0; }
};

// No-good cut: forbid exactly this combination of options (used when a re-traced run of a
// choice did not fit although the model said it would).
struct ForbiddenChoice {
  std::vector<int> option;  // per action
};

core::Status ValidateProblem(const MitigationProblem& problem);

core::StatusOr<MitigationChoice> SolveMitigation(const MitigationProblem& problem,
                                                 const std::vector<ForbiddenChoice>& forbidden = {},
                                                 double time_tolerance_s = 1e-3,
                                                 double time_limit_s = 30);

// Predicted live bytes of `row` under `option` (per action); 0 when the row does not bind.
int64_t PredictedRowBytes(const MitigationRow& row, const std::vector<int>& option);

// {"limit_bytes", "added_s", "shortfall_bytes", "predicted_peak_bytes", "solve_ms",
//  "actions": [{"name", "option" (chosen), "label", "added_s",
//               "options": [{"label", "added_s", "saved_bytes"}] (every option, "off" first)}]}
core::Json ToJson(const MitigationProblem& problem, const MitigationChoice& choice);

}  // namespace tessera::xema
