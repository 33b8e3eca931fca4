#include "zellige/knapformer_planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>
#include <utility>

#include "core/check.h"
#include "zellige/planner.h"

namespace tessera::zellige {

core::StatusOr<std::vector<Bag>> ParseBagSpec(const std::string& spec, int num_ranks) {
  auto bad = [&](const std::string& why) {
    return core::InvalidArgument("knapformer.bags: got '" + spec + "', " + why +
                                 " (format g{G}n{N}+..., e.g. g8n1+g4n1+g2n1+g1n2)");
  };
  if (spec.empty()) return bad("must not be empty");
  std::vector<std::pair<int, int>> parts;  // (bag size G, count N)
  size_t pos = 0;
  int64_t covered = 0;
  while (pos < spec.size()) {
    size_t end = spec.find('+', pos);
    if (end == std::string::npos) end = spec.size();
    std::string part = spec.substr(pos, end - pos);
    int g = 0, n = 0;
    char tail = 0;
    if (std::sscanf(part.c_str(), "g%dn%d%c", &g, &n, &tail) != 2 || g < 1 || n < 1) {
      return bad("part '" + part + "' is not g{G}n{N} with G, N >= 1");
    }
    for (const auto& [size, count] : parts) {
      if (size == g) {
        return bad("bag size " + std::to_string(g) +
                   " appears twice (each size once, as KnapFormer requires: g" + std::to_string(g) +
                   "n" + std::to_string(count + n) + ")");
      }
    }
    covered += static_cast<int64_t>(g) * n;
    if (covered > num_ranks) return bad("covers more than " + std::to_string(num_ranks) + " ranks");
    parts.emplace_back(g, n);
    pos = end + 1;
  }
  if (covered != num_ranks) {
    return bad("covers " + std::to_string(covered) + " ranks, must cover exactly " +
               std::to_string(num_ranks));
  }
  // KnapFormer's layout: sizes in increasing order, bags numbered and given contiguous ranks
  // in that order.
  std::stable_sort(parts.begin(), parts.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Bag> bags;
  int next = 0;
  for (const auto& [g, n] : parts) {
    for (int i = 0; i < n; ++i) {
      bags.push_back({next, g});
      next += g;
    }
  }
  return bags;
}

std::string DefaultBagSpec(int num_ranks) {
  if (num_ranks == 1) return "g1n1";
  std::string spec;
  int left = num_ranks;
  for (int g = num_ranks / 2; g >= 2 && left > 0; g /= 2) {
    if (g > left) continue;
    if (!spec.empty()) spec += '+';
    spec += 'g';
    spec += std::to_string(g);
    spec += "n1";
    left -= g;
  }
  if (left > 0) {
    if (!spec.empty()) spec += '+';
    spec += "g1n";
    spec += std::to_string(left);
  }
  return spec;
}

core::StatusOr<double> ParseKnapFormerGamma(const std::string& text) {
  double gamma = 0;
  size_t used = 0;
  try {
    gamma = std::stod(text, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(gamma) || gamma <= 0 || gamma > 1e6) {
    return core::InvalidArgument("knapformer.gamma: got '" + text +
                                 "', must be a number in (0, 1e6] (KnapFormer's default: 1)");
  }
  return gamma;
}

double FitKnapFormerGamma(const CostModel& cost, const std::vector<int64_t>& lengths) {
  // Weighted least squares for t(L) ~ a L + b L^2 with weights 1/t^2 (relative error).
  double s11 = 0, s12 = 0, s22 = 0, r1 = 0, r2 = 0;
  std::set<int64_t> distinct(lengths.begin(), lengths.end());
  for (int64_t L : {464L, 3600L, 8160L, 98820L, 497760L}) distinct.insert(L);
  for (int64_t L : distinct) {
    double t = cost.WholeTime(L);
    double w = 1.0 / (t * t);
    double x1 = static_cast<double>(L), x2 = x1 * x1;
    s11 += w * x1 * x1;
    s12 += w * x1 * x2;
    s22 += w * x2 * x2;
    r1 += w * x1 * t;
    r2 += w * x2 * t;
  }
  double det = s11 * s22 - s12 * s12;
  double a = (r1 * s22 - r2 * s12) / det;
  double b = (s11 * r2 - s12 * r1) / det;
  if (a <= 0 || b <= 0) return 1.0;
  const double d = cost.model().hidden;
  // a L : b L^2 == 24 L d^2 : gamma 4 L^2 d  =>  gamma = (b / a) * 24 d^2 / (4 d).
  return (b / a) * 6.0 * d;
}

double KnapFormerWorkload(int64_t tokens, int64_t token_dim, double gamma) {
  // 24 L d <= 2^53: an integer a double holds exactly (batches: L <= 2^27, d <= 2^20).
  CHECK(tokens >= 1 && token_dim >= 1 && tokens <= (int64_t{1} << 53) / 24 / token_dim)
      << "tokens " << tokens << ", token_dim " << token_dim;
  const double l = static_cast<double>(tokens), d = static_cast<double>(token_dim);
  // Python adds the exact integer 24 L (d d), rounded once to a double: (24 L d) is exact, so
  // one rounded product by d is that double. Likewise float(L * L) == l * l.
  const double mlp = static_cast<double>(24 * tokens * token_dim) * d;
  // gamma * 4 * (L * L) * d, left to right. Held in a volatile so that no build (e.g. one
  // with -march=native and FMA) fuses this product into the sum below.
  const volatile double attn = gamma * 4.0 * (l * l) * d;
  return (mlp + attn) / 1e12;
}

std::vector<int> KnapFormerAssign(const std::vector<double>& workload,
                                  const std::vector<int64_t>& lengths,
                                  const std::vector<Bag>& bags) {
  const size_t n = workload.size();
  int total_ranks = 0, largest = 0;
  for (const auto& b : bags) {
    total_ranks += b.size;
    largest = std::max(largest, b.size);
  }
  // sum() in input order (Python 3.10/3.11: left to right from 0), then / ranks; a bag's
  // capacity = that x its size, once.
  double total = 0;
  for (double w : workload) total += w;
  const double per_rank = total / total_ranks;
  std::vector<double> capacity(bags.size());
  for (size_t b = 0; b < bags.size(); ++b) capacity[b] = per_rank * bags[b].size;
  std::vector<double> occupancy(bags.size(), 0.0);
  // The fallback when no bag qualifies is not a fresh list: it is the balancer's own list of
  // the largest bags, which the stable sort by occupancy reorders in place, so a tie there
  // goes to the bag that came first at the previous fallback, not to the lowest number.
  std::vector<int> largest_bags;
  for (size_t b = 0; b < bags.size(); ++b)
    if (bags[b].size == largest) largest_bags.push_back(static_cast<int>(b));
  const auto by_occupancy = [&](int a, int b) { return occupancy[a] < occupancy[b]; };
  // sorted(..., reverse=True) is stable: equal workloads keep input order.
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return workload[a] > workload[b]; });
  std::vector<int> out(n, -1);
  std::vector<int> cand;
  for (int s : order) {
    cand.clear();
    for (size_t b = 0; b < bags.size(); ++b) {
      if (capacity[b] >= workload[s] && lengths[s] >= bags[b].size) cand.push_back(b);
    }
    int best = 0;
    if (cand.empty()) {
      std::stable_sort(largest_bags.begin(), largest_bags.end(), by_occupancy);
      best = largest_bags[0];
    } else {
      // A fresh list sorted stably by occupancy, then its first: the least occupancy, ties to
      // the lowest bag number.
      best = *std::min_element(cand.begin(), cand.end(), by_occupancy);
    }
    // Occupancy is a sum of per-sequence ratios, in assignment order (not sum / capacity).
    occupancy[best] += workload[s] / capacity[best];
    out[s] = best;
  }
  return out;
}

namespace {

class KnapFormerPlanner : public Planner {
 public:
  core::StatusOr<Plan> MakePlan(const PlanningProblem& pb) const override {
    const int n = pb.cost.cluster().num_ranks();
    auto it = pb.options.find("knapformer.bags");
    const std::string spec = it != pb.options.end() ? it->second : DefaultBagSpec(n);
    ASSIGN_OR_RETURN(std::vector<Bag> bags, ParseBagSpec(spec, n));
    std::vector<int64_t> lengths;
    for (const auto& s : pb.batch.sequences) lengths.push_back(s.tokens);
    double gamma = 0;
    if (auto g = pb.options.find("knapformer.gamma"); g != pb.options.end()) {
      ASSIGN_OR_RETURN(gamma, ParseKnapFormerGamma(g->second));
    } else {
      gamma = FitKnapFormerGamma(pb.cost, lengths);
    }
    std::vector<double> w;
    for (int64_t L : lengths) w.push_back(KnapFormerWorkload(L, pb.cost.model().hidden, gamma));
    std::vector<int> bag_of = KnapFormerAssign(w, lengths, bags);
    Plan plan{"knapformer", n, {}};
    for (size_t s = 0; s < lengths.size(); ++s) {
      const Bag& b = bags[bag_of[s]];
      int g = b.size;
      while (g > lengths[s]) g /= 2;  // only when every bag is longer than the sequence
      Placement p;
      p.seq = static_cast<int>(s);
      p.config = UlyssesRingConfig(g, pb.cost.model().heads);
      p.ranks = RankBlock{b.first_rank, g}.Ranks();
      plan.placements.push_back(std::move(p));
    }
    return plan;
  }
};

}  // namespace

std::unique_ptr<Planner> NewKnapFormerPlanner() { return std::make_unique<KnapFormerPlanner>(); }

PlannerEntry KnapFormerPlannerEntry() {
  return {{.disjoint_groups = true, .in_all = true},
          "knapformer",
          "KnapFormer greedy over fixed bags of ranks (Ulysses inside a bag)",
          &NewKnapFormerPlanner,
          {{"knapformer.bags",
            "bags g{G}n{N}+... covering every rank (default halves: g{N/2}n1+...+g1n2)"},
           {"knapformer.gamma",
            "the attention weight of KnapFormer's workload estimate (its own default: 1; "
            "default here: fitted to the cost model)"}}};
}

}  // namespace tessera::zellige
