#include "zellige/plan.h"

#include <algorithm>
#include <numeric>

#include "hw/cluster.h"

namespace tessera::zellige {

using core::Json;
using core::Status;
using core::StatusOr;

Status ValidatePlan(const Plan& plan, const workload::Batch& batch, int heads) {
  const int n = static_cast<int>(batch.sequences.size());
  std::vector<int> seen(n, 0);
  for (size_t p = 0; p < plan.placements.size(); ++p) {
    const Placement& pl = plan.placements[p];
    const std::string where = "placements[" + std::to_string(p) + "]";
    if (pl.seq < 0 || pl.seq >= n) {
      return core::InvalidArgument(where + ".seq: got " + std::to_string(pl.seq) +
                                   ", must be in [0, " + std::to_string(n) + ")");
    }
    if (seen[pl.seq]++) {
      return core::InvalidArgument(where + ".seq: sequence " + std::to_string(pl.seq) +
                                   " is placed more than once");
    }
    RETURN_IF_ERROR(
        ValidateConfig(pl.config, heads, static_cast<int>(pl.ranks.size())).WithPrefix(where));
    std::vector<int> sorted = pl.ranks;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (sorted[i] < 0 || sorted[i] >= plan.num_ranks) {
        return core::InvalidArgument(where + ".ranks: got rank " + std::to_string(sorted[i]) +
                                     ", must be in [0, " + std::to_string(plan.num_ranks) + ")");
      }
      if (i > 0 && sorted[i] == sorted[i - 1]) {
        return core::InvalidArgument(where + ".ranks: rank " + std::to_string(sorted[i]) +
                                     " appears twice");
      }
    }
    if (batch.sequences[pl.seq].tokens < pl.config.degree()) {
      return core::InvalidArgument(
          where + ": sequence of " + std::to_string(batch.sequences[pl.seq].tokens) +
          " tokens cannot be split over " + std::to_string(pl.config.degree()) + " ranks");
    }
  }
  for (int s = 0; s < n; ++s) {
    if (!seen[s]) return core::InvalidArgument("sequence " + std::to_string(s) + " is not placed");
  }
  return Status::Ok();
}

std::vector<int> IssueOrder(const Plan& plan) {
  std::vector<int> order(plan.placements.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return plan.placements[a].config.degree() > plan.placements[b].config.degree();
  });
  return order;
}

std::vector<std::vector<RankShard>> RankShards(const Plan& plan, const workload::Batch& batch) {
  std::vector<std::vector<RankShard>> shards(std::max(plan.num_ranks, 0));
  for (int p : IssueOrder(plan)) {
    const Placement& pl = plan.placements[p];
    const int64_t tokens = batch.sequences[pl.seq].tokens;
    const int lambda = pl.config.degree();
    for (int m = 0; m < static_cast<int>(pl.ranks.size()); ++m) {
      shards[pl.ranks[m]].push_back({p, pl.seq, m, ChunkBegin(tokens, lambda, m),
                                     ChunkBegin(tokens, lambda, m + 1), pl.config});
    }
  }
  return shards;
}

int SplitCount(const Plan& plan) {
  int n = 0;
  for (const auto& p : plan.placements) n += p.config.degree() > 1;
  return n;
}

Json ToJson(const Plan& plan, const workload::Batch& batch) {
  Json pls = Json::array();
  for (const auto& p : plan.placements) {
    Json j = {{"seq", p.seq},
              {"q", p.config.q},
              {"h", p.config.h},
              {"k", p.config.k},
              {"ranks", p.ranks}};
    if (p.seq >= 0 && p.seq < static_cast<int>(batch.sequences.size())) {
      j["tokens"] = batch.sequences[p.seq].tokens;
    }
    pls.push_back(j);
  }
  return {{"planner", plan.planner}, {"num_ranks", plan.num_ranks}, {"placements", pls}};
}

StatusOr<Plan> PlanFromJson(const Json& j, const std::string& source) {
  auto parse = [&]() -> StatusOr<Plan> {
    Plan plan;
    RETURN_IF_ERROR(core::CheckKnownKeys(j, "", {"planner", "num_ranks", "placements"}));
    ASSIGN_OR_RETURN(plan.planner, core::GetString(j, "", "planner"));
    ASSIGN_OR_RETURN(int64_t n, core::GetPositiveInt(j, "", "num_ranks"));
    if (n > hw::kMaxClusterRanks) {
      return core::InvalidArgument("num_ranks: got " + std::to_string(n) +
                                   ", must be <= " + std::to_string(hw::kMaxClusterRanks) +
                                   " (the largest cluster tessera models)");
    }
    plan.num_ranks = static_cast<int>(n);
    ASSIGN_OR_RETURN(const Json* pls, core::Member(j, "", "placements"));
    if (!pls->is_array()) return core::InvalidArgument("placements: must be an array");
    // One placement per sequence: the batch's limits bound the plan's.
    const int64_t count = static_cast<int64_t>(pls->size());
    if (count > workload::kMaxBatchSequences) {
      return core::InvalidArgument(
          "placements: got " + std::to_string(count) +
          " placements, must be <= " + std::to_string(workload::kMaxBatchSequences) +
          " (one per sequence, 2^22 sequences at most)");
    }
    int64_t total_tokens = 0;
    for (int64_t i = 0; i < count; ++i) {
      const Json& e = (*pls)[static_cast<size_t>(i)];
      const std::string path = "placements[" + std::to_string(i) + "]";
      Placement p;
      RETURN_IF_ERROR(core::CheckKnownKeys(e, path, {"seq", "q", "h", "k", "ranks", "tokens"}));
      ASSIGN_OR_RETURN(int64_t seq, core::GetNonNegativeInt(e, path, "seq"));
      if (seq >= count) {
        return core::InvalidArgument(path + ".seq: got " + std::to_string(seq) +
                                     ", must be in [0, " + std::to_string(count) +
                                     ") (one placement per sequence of the batch)");
      }
      int64_t qhk[3];
      const char* keys[3] = {"q", "h", "k"};
      for (int f = 0; f < 3; ++f) {
        ASSIGN_OR_RETURN(qhk[f], core::GetPositiveInt(e, path, keys[f]));
        if (qhk[f] > n) {
          return core::InvalidArgument(path + "." + keys[f] + ": got " + std::to_string(qhk[f]) +
                                       ", must be <= num_ranks (" + std::to_string(n) + ")");
        }
      }
      // Each factor is <= 65536, so the product fits in 64 bits; it must fit the ranks.
      const int64_t degree = qhk[0] * qhk[1] * qhk[2];
      const std::string config = "(" + std::to_string(qhk[0]) + "," + std::to_string(qhk[1]) + "," +
                                 std::to_string(qhk[2]) + ")";
      if (degree > n) {
        return core::InvalidArgument(path + ": config " + config + " has degree " +
                                     std::to_string(degree) + ", must be <= num_ranks (" +
                                     std::to_string(n) + ")");
      }
      p.seq = static_cast<int>(seq);
      p.config = {static_cast<int>(qhk[0]), static_cast<int>(qhk[1]), static_cast<int>(qhk[2])};
      ASSIGN_OR_RETURN(const Json* ranks, core::Member(e, path, "ranks"));
      if (!ranks->is_array()) return core::InvalidArgument(path + ".ranks: must be an array");
      if (static_cast<int64_t>(ranks->size()) != degree) {
        return core::InvalidArgument(path + ".ranks: got " + std::to_string(ranks->size()) +
                                     " ranks, must be q*h*k = " + std::to_string(degree) +
                                     " for config " + config);
      }
      for (const auto& r : *ranks) {
        if (!r.is_number_integer()) {
          return core::InvalidArgument(path + ".ranks: got " + core::ShowJson(r) +
                                       ", must be an integer");
        }
        // An unsigned value above INT64_MAX is out of range, never wrapped.
        const bool huge = r.is_number_unsigned() && r.get<uint64_t>() >= static_cast<uint64_t>(n);
        const int64_t v = huge ? n : r.get<int64_t>();
        if (v < 0 || v >= n) {
          return core::InvalidArgument(path + ".ranks: got " + core::ShowJson(r) +
                                       ", must be in [0, " + std::to_string(n) + ")");
        }
        p.ranks.push_back(static_cast<int>(v));
      }
      // "tokens" (written by ToJson; what `run` builds its batch from) is optional here but
      // bounded like a batch's when present.
      if (e.is_object() && e.contains("tokens")) {
        ASSIGN_OR_RETURN(int64_t tokens, core::GetPositiveInt(e, path, "tokens"));
        if (tokens > workload::kMaxSequenceTokens) {
          return core::InvalidArgument(
              path + ".tokens: got " + std::to_string(tokens) + ", must be <= " +
              std::to_string(workload::kMaxSequenceTokens) + " (2^27, the longest sequence)");
        }
        total_tokens += tokens;
        if (total_tokens > workload::kMaxBatchTokens) {
          return core::InvalidArgument("placements: got " + std::to_string(total_tokens) +
                                       " tokens by " + path +
                                       ", must be <= " + std::to_string(workload::kMaxBatchTokens) +
                                       " in all (2^36, the largest batch)");
        }
      }
      plan.placements.push_back(std::move(p));
    }
    return plan;
  };
  auto r = parse();
  if (!r.ok()) return r.status().WithPrefix(source);
  return r;
}

}  // namespace tessera::zellige
