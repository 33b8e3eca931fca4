#include "elaswave/fault_plan.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <set>
#include <tuple>

#include "core/parse_number.h"

namespace tessera::elaswave {
namespace {

constexpr std::array<std::pair<StepPhase, const char*>, 7> kPhases = {{
    {StepPhase::kForward, "forward"},
    {StepPhase::kBackward, "backward"},
    {StepPhase::kReduce, "reduce"},
    {StepPhase::kCommit, "commit"},
    {StepPhase::kOptimizer, "optimizer"},
    {StepPhase::kSnapshot, "snapshot"},
    {StepPhase::kRecover, "recover"},
}};
constexpr const char* kPhaseList =
    "forward, backward, reduce, commit, optimizer, snapshot, recover";

core::Status ParseAt(const core::Json& at, const std::string& path, const JobShape& shape,
                     int64_t steps, FaultEvent& e) {
  if (!at.is_object()) {
    return core::InvalidArgument(
        fmt::format("{}: got {}, must be an object", path, core::ShowJson(at)));
  }
  if (at.contains("time_s")) {
    RETURN_IF_ERROR(core::CheckKnownKeys(at, path, {"time_s"}));
    ASSIGN_OR_RETURN(e.time_s, core::GetDoubleInRange(at, path, "time_s", 0.0, 86400.0));
    e.at_time = true;
    return core::Status::Ok();
  }
  RETURN_IF_ERROR(core::CheckKnownKeys(at, path, {"step", "phase", "micro_batch"}));
  if (!at.contains("step")) {
    return core::InvalidArgument(
        fmt::format("{}: needs \"step\" (with \"phase\") or \"time_s\"", path));
  }
  if (steps < 1) return core::InvalidArgument(fmt::format("{}: the run has no steps", path));
  ASSIGN_OR_RETURN(e.step, core::GetIntInRange(at, path, "step", 0, steps - 1));
  ASSIGN_OR_RETURN(const std::string phase, core::GetString(at, path, "phase"));
  bool found = false;
  for (const auto& [p, name] : kPhases) {
    if (phase == name) {
      e.phase = p;
      found = true;
    }
  }
  if (!found) {
    return core::InvalidArgument(fmt::format("{}.phase: got '{}', must be one of {}", path,
                                             core::Utf8Prefix(phase, 60), kPhaseList));
  }
  if (at.contains("micro_batch")) {
    if (e.phase != StepPhase::kForward && e.phase != StepPhase::kBackward) {
      return core::InvalidArgument(fmt::format(
          "{}.micro_batch: given for phase '{}'; only forward and backward have micro-batches",
          path, phase));
    }
    ASSIGN_OR_RETURN(e.micro_batch, core::GetIntInRange(at, path, "micro_batch", 0,
                                                        shape.num_micro_batches() - 1));
  }
  return core::Status::Ok();
}

core::Status ParseAction(const core::Json& event, const std::string& path, FaultEvent& e) {
  ASSIGN_OR_RETURN(const std::string action, core::GetString(event, path, "action"));
  if (action == "kill") {
    e.action = FaultAction::kKill;
  } else if (action == "stop") {
    e.action = FaultAction::kStop;
  } else if (action == "join") {
    e.action = FaultAction::kJoin;
  } else if (action.rfind("slow:", 0) == 0) {
    e.action = FaultAction::kSlow;
    auto factor = core::ParseNumber(action.substr(5), 1.0, 100.0, /*lo_open=*/true);
    if (!factor.ok()) {
      return core::InvalidArgument(fmt::format(
          "{}.action: got '{}', the slow-down factor must be a number in (1, 100], e.g. slow:3",
          path, core::Utf8Prefix(action, 60)));
    }
    e.slow_factor = *factor;
  } else {
    return core::InvalidArgument(
        fmt::format("{}.action: got '{}', must be one of kill, stop, slow:F, join", path,
                    core::Utf8Prefix(action, 60)));
  }
  return core::Status::Ok();
}

core::Status ParseTarget(const core::Json& t, const std::string& path, const JobShape& shape,
                         FaultEvent& e) {
  if (!t.is_object()) {
    return core::InvalidArgument(
        fmt::format("{}: got {}, must be an object", path, core::ShowJson(t)));
  }
  RETURN_IF_ERROR(core::CheckKnownKeys(t, path, {"rank", "role"}));
  if (t.contains("rank") == t.contains("role")) {
    return core::InvalidArgument(
        fmt::format("{}: needs exactly one of \"rank\" or \"role\"", path));
  }
  if (t.contains("role")) {
    ASSIGN_OR_RETURN(const std::string role, core::GetString(t, path, "role"));
    if (role != "coordinator") {
      return core::InvalidArgument(
          fmt::format("{}.role: got '{}', must be coordinator", path, core::Utf8Prefix(role, 60)));
    }
    e.target_coordinator = true;
    return core::Status::Ok();
  }
  ASSIGN_OR_RETURN(const int64_t rank,
                   core::GetIntInRange(t, path, "rank", 0, shape.processes() - 1));
  e.target_rank = static_cast<int>(rank);
  return core::Status::Ok();
}

}  // namespace

std::string StepPhaseName(StepPhase p) {
  for (const auto& [phase, name] : kPhases) {
    if (phase == p) return name;
  }
  return "?";
}

std::string FaultActionName(FaultAction a) {
  switch (a) {
    case FaultAction::kKill:
      return "kill";
    case FaultAction::kStop:
      return "stop";
    case FaultAction::kSlow:
      return "slow";
    case FaultAction::kJoin:
      return "join";
  }
  return "?";
}

std::string FaultEvent::Describe() const {
  std::string what = FaultActionName(action);
  if (action == FaultAction::kSlow) what = fmt::format("slow x{}", slow_factor);
  const std::string who =
      target_coordinator ? "the coordinator" : fmt::format("rank {}", target_rank);
  if (at_time) return fmt::format("{} {} at {} s", what, who, time_s);
  std::string when = fmt::format("step {} {}", step, StepPhaseName(phase));
  if (micro_batch >= 0) when += fmt::format(" micro-batch {}", micro_batch);
  return fmt::format("{} {} at {}", what, who, when);
}

core::StatusOr<std::vector<FaultEvent>> ParseFaultPlan(const core::Json& j,
                                                       const std::string& source,
                                                       const JobShape& shape, int64_t steps) {
  if (!j.is_array()) {
    return core::InvalidArgument(fmt::format(
        "{}: got {}, must be a list of events [{{\"at\": ..., \"action\": ..., \"target\": ...}}]",
        source, core::ShowJson(j)));
  }
  std::vector<FaultEvent> events;
  std::set<int> killed;
  std::set<std::tuple<bool, double, int64_t, int, int64_t, bool, int>> seen;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string path = fmt::format("{}: event {}", source, i);
    const core::Json& ev = j[i];
    if (!ev.is_object()) {
      return core::InvalidArgument(
          fmt::format("{}: got {}, must be an object", path, core::ShowJson(ev)));
    }
    RETURN_IF_ERROR(core::CheckKnownKeys(ev, path, {"at", "action", "target"}));
    FaultEvent e;
    ASSIGN_OR_RETURN(const core::Json* at, core::Member(ev, path, "at"));
    RETURN_IF_ERROR(ParseAt(*at, path + ".at", shape, steps, e));
    RETURN_IF_ERROR(ParseAction(ev, path, e));
    ASSIGN_OR_RETURN(const core::Json* target, core::Member(ev, path, "target"));
    RETURN_IF_ERROR(ParseTarget(*target, path + ".target", shape, e));
    if (e.target_coordinator &&
        (e.action == FaultAction::kSlow || e.action == FaultAction::kJoin)) {
      return core::InvalidArgument(fmt::format(
          "{}.action: got '{}' for the coordinator, which can only be killed or stopped", path,
          FaultActionName(e.action)));
    }
    if (e.action == FaultAction::kJoin && !killed.count(e.target_rank)) {
      return core::InvalidArgument(fmt::format(
          "{}.target.rank: got {} for a join, but no earlier event kills rank {}; only a killed "
          "rank can join again",
          path, e.target_rank, e.target_rank));
    }
    if (e.action == FaultAction::kKill && !e.target_coordinator) killed.insert(e.target_rank);
    if (e.action == FaultAction::kJoin) killed.erase(e.target_rank);
    const auto key = std::make_tuple(e.at_time, e.time_s, e.step, static_cast<int>(e.phase),
                                     e.micro_batch, e.target_coordinator, e.target_rank);
    if (!seen.insert(key).second) {
      return core::InvalidArgument(fmt::format(
          "{}: duplicates an earlier event ({}); give each event once", path, e.Describe()));
    }
    events.push_back(e);
  }
  return events;
}

core::StatusOr<std::vector<FaultEvent>> LoadFaultPlan(const std::string& path,
                                                      const JobShape& shape, int64_t steps) {
  ASSIGN_OR_RETURN(const core::Json j, core::ReadJsonFile(path));
  return ParseFaultPlan(j, path, shape, steps);
}

core::Json FaultPlanToJson(const std::vector<FaultEvent>& events) {
  core::Json out = core::Json::array();
  for (const FaultEvent& e : events) {
    core::Json at;
    if (e.at_time) {
      at["time_s"] = e.time_s;
    } else {
      at["step"] = e.step;
      at["phase"] = StepPhaseName(e.phase);
      if (e.micro_batch >= 0) at["micro_batch"] = e.micro_batch;
    }
    std::string action = FaultActionName(e.action);
    if (e.action == FaultAction::kSlow) action = fmt::format("slow:{}", e.slow_factor);
    core::Json target;
    if (e.target_coordinator) {
      target["role"] = "coordinator";
    } else {
      target["rank"] = e.target_rank;
    }
    out.push_back({{"at", at}, {"action", action}, {"target", target}});
  }
  return out;
}

}  // namespace tessera::elaswave
