#include "elaswave/elastic_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "core/fnv64.h"
#include "elaswave/microbatch_counts.h"

namespace tessera::elaswave {
namespace {

// Nominal rate turning FLOPs into the partition's "seconds at speed 1".
constexpr double kNominalFlops = 1e10;

bool HasDead(const std::vector<int>& ranks, const std::set<int>& dead) {
  return std::any_of(ranks.begin(), ranks.end(), [&](int w) { return dead.count(w) > 0; });
}

core::Status AssignCounts(const JobShape& shape, ElasticPlan& plan) {
  std::vector<PipelineTiming> timing;
  for (const PlanPipeline& p : plan.pipelines) {
    timing.push_back({static_cast<int>(p.stages.size()), std::max(p.tau_s, 1e-12)});
  }
  ASSIGN_OR_RETURN(const MicroBatchAssignment a,
                   AssignMicroBatches(shape.num_micro_batches(), timing));
  for (size_t p = 0; p < plan.pipelines.size(); ++p) {
    plan.pipelines[p].micro_batches = a.count[p];
    plan.pipelines[p].first_micro_batch = a.first[p];
  }
  return core::Status::Ok();
}

void Seal(ElasticPlan& plan) {
  core::Fnv64 h;
  h.Str(plan.ToJson().dump());
  plan.digest = h.value();
}

// The slots a group ran in `plan`, keyed by its first world id.
std::map<int, std::set<int>> HeldSlots(const ElasticPlan& plan) {
  std::map<int, std::set<int>> held;
  for (const PlanPipeline& p : plan.pipelines) {
    for (const PlanStage& s : p.stages) {
      for (int l = s.slot_begin; l < s.slot_end; ++l) held[s.ranks.front()].insert(l);
    }
  }
  return held;
}

}  // namespace

std::vector<int> ElasticPlan::Holders(int slot, int tp_rank) const {
  std::vector<int> out;
  for (const PlanPipeline& p : pipelines) {
    for (const PlanStage& s : p.stages) {
      if (slot >= s.slot_begin && slot < s.slot_end) out.push_back(s.ranks[tp_rank]);
    }
  }
  return out;
}

std::pair<int, int> ElasticPlan::Position(int world_id) const {
  for (size_t p = 0; p < pipelines.size(); ++p) {
    for (size_t s = 0; s < pipelines[p].stages.size(); ++s) {
      const auto& r = pipelines[p].stages[s].ranks;
      if (std::find(r.begin(), r.end(), world_id) != r.end()) {
        return {static_cast<int>(p), static_cast<int>(s)};
      }
    }
  }
  return {-1, -1};
}

int64_t ElasticPlan::total_micro_batches() const {
  int64_t n = 0;
  for (const PlanPipeline& p : pipelines) n += p.micro_batches;
  return n;
}

core::Json ElasticPlan::ToJson() const {
  core::Json j;
  j["epoch"] = epoch;
  j["dead"] = std::vector<int>(dead.begin(), dead.end());
  j["spares"] = spares;
  core::Json pipes = core::Json::array();
  for (const PlanPipeline& p : pipelines) {
    core::Json stages = core::Json::array();
    for (const PlanStage& s : p.stages) {
      stages.push_back({{"ranks", s.ranks}, {"slots", {s.slot_begin, s.slot_end}}});
    }
    pipes.push_back({{"replica", p.replica},
                     {"stages", stages},
                     {"micro_batches", p.micro_batches},
                     {"first_micro_batch", p.first_micro_batch},
                     {"tau_s", p.tau_s}});
  }
  j["pipelines"] = pipes;
  core::Json moves = core::Json::array();
  for (const StateTransfer& t : transfers) {
    moves.push_back({{"slot", t.slot},
                     {"tp_rank", t.tp_rank},
                     {"src", t.src},
                     {"dst", t.dst},
                     {"bytes", t.bytes}});
  }
  j["transfers"] = moves;
  return j;
}

std::vector<SlotCost> GptSlotCosts(const GptDims& d, int64_t micro_batch, int tp) {
  const double tokens = static_cast<double>(micro_batch * d.seq);
  const double h = static_cast<double>(d.hidden), f = static_cast<double>(d.ffn);
  const double v = static_cast<double>(d.vocab), s = static_cast<double>(d.seq);
  const double t = static_cast<double>(std::max(tp, 1));
  // Forward FLOPs; backward is twice that (dgrad + wgrad).
  const double block_fwd = 2 * tokens * (3 * h * h + h * h + 2 * h * f) + 4 * tokens * s * h;
  const double head_fwd = 2 * tokens * h * v;
  const double emb_fwd = tokens * h;
  const auto slot = [&](double fwd_flops, double params, double act_floats) {
    SlotCost c;
    c.compute_s = 3 * fwd_flops / t / kNominalFlops;
    c.state_bytes = static_cast<int64_t>(params / t) * 4 * 4;  // param, grad, AdamW m and v
    c.act_bytes = static_cast<int64_t>(act_floats / t) * 4;
    return c;
  };
  std::vector<SlotCost> costs;
  costs.push_back(slot(emb_fwd, (v + s) * h, tokens * h));
  for (int64_t b = 0; b < d.num_blocks; ++b) {
    costs.push_back(slot(block_fwd, 4 * h * h + 2 * h * f, tokens * (10 * h + 2 * f)));
  }
  costs.push_back(slot(head_fwd, h * v, tokens * (h + v)));
  return costs;
}

core::StatusOr<ElasticPlan> InitialPlan(const JobShape& shape, const std::vector<SlotCost>& costs) {
  RETURN_IF_ERROR(ValidateJobShape(shape));
  if (static_cast<int>(costs.size()) != shape.num_slots()) {
    return core::InvalidArgument(
        fmt::format("initial plan: {} slot costs for {} slots", costs.size(), shape.num_slots()));
  }
  const std::vector<StageResources> stages(shape.pp);
  ASSIGN_OR_RETURN(const Partition part, MinimaxPartition(costs, stages));
  ElasticPlan plan;
  for (int d = 0; d < shape.dp; ++d) {
    PlanPipeline p;
    p.replica = d;
    p.tau_s = part.tau_s;
    for (int s = 0; s < shape.pp; ++s) {
      PlanStage st;
      for (int r = 0; r < shape.tp; ++r) st.ranks.push_back(shape.WorldId(d, s, r));
      st.slot_begin = part.begin[s];
      st.slot_end = part.begin[s + 1];
      p.stages.push_back(st);
    }
    plan.pipelines.push_back(p);
  }
  RETURN_IF_ERROR(AssignCounts(shape, plan));
  Seal(plan);
  return plan;
}

core::StatusOr<RecoveryPolicy> ParseRecoveryPolicy(const std::string& name) {
  if (name == "elaswave") return RecoveryPolicy::kElasWave;
  if (name == "torchft") return RecoveryPolicy::kTorchFt;
  if (name == "restart") return RecoveryPolicy::kRestart;
  return core::InvalidArgument(fmt::format(
      "policy: got '{}', must be one of elaswave, torchft, restart", core::Utf8Prefix(name, 40)));
}

std::string RecoveryPolicyName(RecoveryPolicy p) {
  switch (p) {
    case RecoveryPolicy::kTorchFt:
      return "torchft";
    case RecoveryPolicy::kRestart:
      return "restart";
    case RecoveryPolicy::kElasWave:
      break;
  }
  return "elaswave";
}

core::StatusOr<ElasticPlan> Replan(const JobShape& shape, const std::vector<SlotCost>& costs,
                                   const ElasticPlan& previous, const std::set<int>& newly_dead,
                                   RecoveryPolicy policy) {
  if (static_cast<int>(costs.size()) != shape.num_slots()) {
    return core::InvalidArgument(
        fmt::format("replan: {} slot costs for {} slots", costs.size(), shape.num_slots()));
  }
  for (int w : newly_dead) {
    if (w < 0 || w >= shape.processes()) {
      return core::InvalidArgument(
          fmt::format("replan: dead world id {} outside [0, {})", w, shape.processes()));
    }
  }
  ElasticPlan plan;
  plan.epoch = previous.epoch + 1;
  plan.dead = previous.dead;
  plan.dead.insert(newly_dead.begin(), newly_dead.end());
  const std::map<int, std::set<int>> held = HeldSlots(previous);
  std::set<int> computing;
  for (const PlanPipeline& prev : previous.pipelines) {
    std::vector<PlanStage> alive;
    for (const PlanStage& s : prev.stages) {
      if (!HasDead(s.ranks, plan.dead)) alive.push_back(s);
    }
    if (alive.empty()) continue;
    if (policy == RecoveryPolicy::kTorchFt && alive.size() != prev.stages.size()) continue;
    PlanPipeline p = prev;
    if (alive.size() != prev.stages.size()) {
      std::vector<StageResources> res(alive.size());
      for (size_t j = 0; j < alive.size(); ++j) res[j].held = held.at(alive[j].ranks.front());
      auto part = MinimaxPartition(costs, res);
      if (!part.ok() && part.status().code() == core::StatusCode::kInfeasible)
        continue;  // dissolve
      RETURN_IF_ERROR(part.status());
      for (size_t j = 0; j < alive.size(); ++j) {
        alive[j].slot_begin = part->begin[j];
        alive[j].slot_end = part->begin[j + 1];
      }
      p.stages = alive;
      p.tau_s = part->tau_s;
    }
    for (const PlanStage& s : p.stages) computing.insert(s.ranks.begin(), s.ranks.end());
    plan.pipelines.push_back(p);
  }
  if (plan.pipelines.empty()) {
    return core::FailedPrecondition(fmt::format(
        "unrecoverable: no pipeline has a live tensor-parallel group left (dead ranks: {})",
        fmt::join(plan.dead, ", ")));
  }
  for (int w = 0; w < shape.processes(); ++w) {
    if (!plan.dead.count(w) && !computing.count(w)) plan.spares.push_back(w);
  }
  // Transfers: every (slot, tp rank) a process now runs but did not hold.
  std::map<int, int64_t> load;  // bytes assigned per source
  for (int slot = 0; slot < shape.num_slots(); ++slot) {
    for (int r = 0; r < shape.tp; ++r) {
      const std::vector<int> before = previous.Holders(slot, r);
      std::vector<int> sources;
      for (int w : before) {
        if (!plan.dead.count(w)) sources.push_back(w);
      }
      for (int dst : plan.Holders(slot, r)) {
        if (std::find(before.begin(), before.end(), dst) != before.end()) continue;
        if (sources.empty()) {
          return core::FailedPrecondition(
              fmt::format("unrecoverable: {} (tp rank {}) was held by ranks {} only, all dead",
                          SlotName(slot, shape.num_blocks), r, fmt::join(before, ", ")));
        }
        int src = sources.front();
        for (int w : sources) {
          if (load[w] < load[src] || (load[w] == load[src] && w < src)) src = w;
        }
        const int64_t bytes = costs[slot].state_bytes;
        load[src] += bytes;
        plan.transfers.push_back({slot, r, src, dst, bytes});
      }
    }
  }
  if (policy == RecoveryPolicy::kTorchFt) {
    // Each surviving replica keeps its own share of the batch; the rest is lost this step.
    const int64_t per = shape.num_micro_batches() / shape.dp;
    for (PlanPipeline& p : plan.pipelines) {
      p.micro_batches = per;
      p.first_micro_batch = p.replica * per;
    }
  } else {
    RETURN_IF_ERROR(AssignCounts(shape, plan));
  }
  Seal(plan);
  return plan;
}

}  // namespace tessera::elaswave
