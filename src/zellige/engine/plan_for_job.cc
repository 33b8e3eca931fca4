#include "zellige/engine/plan_for_job.h"

#include <memory>
#include <utility>
#include <vector>

#include "comm/broadcast_result.h"
#include "core/units.h"
#include "zellige/cost_model.h"
#include "zellige/engine/engine_check.h"
#include "zellige/evaluate.h"
#include "zellige/profile.h"

namespace tessera::zellige::engine {

using core::Json;
using core::StatusOr;

hw::Cluster ThisMachine(int num_ranks) {
  hw::Cluster c;
  c.name = "this-machine";
  c.provenance = "modeled (CPU-like guesses for the local ranks, not measured)";
  c.device = hw::Device{"cpu-rank", {.bf16 = 50e9}, 10e9, 8.0 * core::kGiB, 0.9, 0.5, 0, 0, {}};
  c.nodes = 1;
  c.ranks_per_node = num_ranks;
  c.intra = hw::Link{"shared-memory", 4e9, 5e-6};
  c.inter = c.intra;
  return c;
}

namespace {

// The cluster of the analytic model: ThisMachine or --cluster, which must match the job.
StatusOr<hw::Cluster> JobCluster(const PlanJobRequest& r, int num_ranks) {
  if (r.cluster.empty()) return ThisMachine(num_ranks);
  ASSIGN_OR_RETURN(hw::Cluster cluster, hw::LoadCluster(r.cluster));
  if (cluster.num_ranks() != num_ranks) {
    return core::InvalidArgument("cluster: " + r.cluster + " has " +
                                 std::to_string(cluster.num_ranks()) + " ranks but the job has " +
                                 std::to_string(num_ranks));
  }
  return cluster;
}

// The profile-priced model of r.profile (measured with the job's rank count).
StatusOr<std::unique_ptr<CostModel>> ProfileCostModel(const PlanJobRequest& r, int num_ranks) {
  if (!r.cluster.empty()) {
    return core::InvalidArgument("cluster: got '" + r.cluster +
                                 "', cannot be combined with a profile");
  }
  ASSIGN_OR_RETURN(Profile profile, LoadProfile(r.profile));
  auto cost = MakeProfileCostModel(std::make_shared<const Profile>(std::move(profile)));
  if (cost->cluster().num_ranks() != num_ranks) {
    return core::InvalidArgument(r.profile + ": ranks: measured with " +
                                 std::to_string(cost->cluster().num_ranks()) + ", the job has " +
                                 std::to_string(num_ranks));
  }
  return cost;
}

}  // namespace

StatusOr<Json> PlanForJob(const PlanJobRequest& request, int num_ranks) {
  if (!request.plan_path.empty()) {
    ASSIGN_OR_RETURN(Json j, core::ReadJsonFile(request.plan_path));
    ASSIGN_OR_RETURN(Plan plan, PlanFromJson(j, request.plan_path));
    (void)plan;
    return j;
  }
  RETURN_IF_ERROR(workload::ValidateTokenScale(request.workload.token_scale));
  ASSIGN_OR_RETURN(hw::Cluster cluster, JobCluster(request, num_ranks));
  ASSIGN_OR_RETURN(workload::Batch batch, workload::LoadBatch(request.workload, num_ranks));
  RETURN_IF_ERROR(models::Validate(request.model));
  std::unique_ptr<CostModel> cost;
  if (!request.profile.empty()) {
    ASSIGN_OR_RETURN(cost, ProfileCostModel(request, num_ranks));
  } else {
    cost = MakeAnalyticCostModel(std::move(cluster), request.model);
  }
  ASSIGN_OR_RETURN(const PlannerEntry* entry, FindPlanner(request.planner));
  RETURN_IF_ERROR(CheckBatchFits(batch, *cost));
  ASSIGN_OR_RETURN(PlannerRun run, RunPlanner(*entry, batch, *cost, {}));
  return ToJson(run.plan, batch);
}

StatusOr<JobPlan> ParseJobPlan(const Json& json, const std::string& source) {
  JobPlan job;
  job.json = json;
  ASSIGN_OR_RETURN(job.plan, PlanFromJson(json, source));
  // PlanFromJson bounded every seq to [0, placements) and every "tokens" present; here each
  // placement must carry its tokens and each sequence be placed once.
  const size_t n = job.plan.placements.size();
  std::vector<int64_t> tokens(n, 0);
  const Json& pls = json["placements"];
  for (size_t i = 0; i < n; ++i) {
    const std::string path = "placements[" + std::to_string(i) + "]";
    auto t = core::GetPositiveInt(pls[i], path, "tokens");
    if (!t.ok()) return t.status().WithPrefix(source);
    const int seq = job.plan.placements[i].seq;
    if (tokens[seq] != 0) {
      return core::InvalidArgument(source + ": " + path + ".seq: sequence " + std::to_string(seq) +
                                   " is placed more than once");
    }
    tokens[seq] = *t;
  }
  job.batch = MakeBatch(tokens);
  return job;
}

StatusOr<JobPlan> ShareJobPlan(comm::Communicator& world, const PlanJobRequest& request) {
  const StatusOr<Json> on_root =
      world.rank() == 0 ? PlanForJob(request, world.size()) : StatusOr<Json>(comm::NotOnRoot());
  ASSIGN_OR_RETURN(Json j, comm::BroadcastResult(world, 0, on_root));
  return ParseJobPlan(j, request.plan_path.empty() ? "plan" : request.plan_path);
}

}  // namespace tessera::zellige::engine
