#include "zellige/plan.h"

#include <algorithm>
#include <numeric>

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
    ASSIGN_OR_RETURN(plan.planner, core::GetString(j, "", "planner"));
    ASSIGN_OR_RETURN(int64_t n, core::GetPositiveInt(j, "", "num_ranks"));
    if (n > 65536)
      return core::InvalidArgument("num_ranks: got " + std::to_string(n) + ", must be <= 65536");
    plan.num_ranks = static_cast<int>(n);
    ASSIGN_OR_RETURN(const Json* pls, core::Member(j, "", "placements"));
    if (!pls->is_array()) return core::InvalidArgument("placements: must be an array");
    for (size_t i = 0; i < pls->size(); ++i) {
      const Json& e = (*pls)[i];
      const std::string path = "placements[" + std::to_string(i) + "]";
      Placement p;
      ASSIGN_OR_RETURN(int64_t seq, core::GetNonNegativeInt(e, path, "seq"));
      ASSIGN_OR_RETURN(int64_t q, core::GetPositiveInt(e, path, "q"));
      ASSIGN_OR_RETURN(int64_t h, core::GetPositiveInt(e, path, "h"));
      ASSIGN_OR_RETURN(int64_t k, core::GetPositiveInt(e, path, "k"));
      if (seq > (1 << 30) || q > n || h > n || k > n) {
        return core::InvalidArgument(path + ": seq/q/h/k out of range for " + std::to_string(n) +
                                     " ranks");
      }
      p.seq = static_cast<int>(seq);
      p.config = {static_cast<int>(q), static_cast<int>(h), static_cast<int>(k)};
      ASSIGN_OR_RETURN(const Json* ranks, core::Member(e, path, "ranks"));
      if (!ranks->is_array()) return core::InvalidArgument(path + ".ranks: must be an array");
      for (const auto& r : *ranks) {
        if (!r.is_number_integer()) {
          return core::InvalidArgument(path + ".ranks: got " + r.dump() + ", must be an integer");
        }
        int64_t v = r.get<int64_t>();
        if (v < 0 || v >= n) {
          return core::InvalidArgument(path + ".ranks: got " + std::to_string(v) +
                                       ", must be in [0, " + std::to_string(n) + ")");
        }
        p.ranks.push_back(static_cast<int>(v));
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
