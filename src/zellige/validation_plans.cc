#include "zellige/validation_plans.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/rng.h"
#include "models/token_calculus.h"
#include "zellige/parallel_config.h"

namespace tessera::zellige {
namespace {

struct VideoOption {
  ParallelConfig config;
  std::vector<int> ranks;
};

std::vector<VideoOption> VideoOptions(int n, int heads) {
  std::vector<VideoOption> opts;
  for (int r = 0; r < n; ++r) opts.push_back({ParallelConfig{}, {r}});
  for (int d = 2; d <= n; d *= 2) {
    for (const ParallelConfig& c : ConfigsOfDegree(d, heads)) {
      for (int first = 0; first + d <= n; first += d) {
        std::vector<int> ranks(d);
        for (int i = 0; i < d; ++i) ranks[i] = first + i;
        opts.push_back({c, ranks});
      }
    }
  }
  return opts;
}

core::StatusOr<workload::Batch> MakeBaseBatch(const ValidationSpec& s, uint64_t seed) {
  static const char* kVideoRes[] = {"480p", "720p", "1080p"};
  static const char* kImageRes[] = {"256p", "360p", "480p", "720p", "1080p"};
  core::Rng rng(seed);
  workload::Batch b;
  b.name = "validate-seed" + std::to_string(seed);
  auto scaled = [&](int64_t t, int64_t min) {
    return std::max<int64_t>(min, std::llround(static_cast<double>(t) * s.token_scale));
  };
  for (int j = 0; j < 3; ++j) {
    workload::Sequence v;
    v.id = static_cast<int>(b.sequences.size());
    v.kind = models::MediaKind::kVideo;
    v.res = kVideoRes[j];  // one of each resolution
    v.seconds = 3 + static_cast<double>(rng.Below(3));
    ASSIGN_OR_RETURN(models::Resolution r, models::ParseResolution(v.res));
    ASSIGN_OR_RETURN(int64_t t, models::CountTokens(models::MediaKind::kVideo, r, v.seconds, 16));
    v.tokens = scaled(t, s.num_ranks);
    b.sequences.push_back(v);
  }
  for (int i = 0; i < 50; ++i) {
    workload::Sequence im;
    im.id = static_cast<int>(b.sequences.size());
    im.kind = models::MediaKind::kImage;
    im.res = kImageRes[rng.Below(5)];
    ASSIGN_OR_RETURN(models::Resolution r, models::ParseResolution(im.res));
    ASSIGN_OR_RETURN(int64_t t, models::CountTokens(models::MediaKind::kImage, r, 0, 16));
    im.tokens = scaled(t, 1);
    b.sequences.push_back(im);
  }
  return b;
}

Placement Whole(int seq, int rank) { return Placement{seq, ParallelConfig{}, {rank}}; }

}  // namespace

core::StatusOr<std::vector<ValidationCase>> MakeValidationCases(const ValidationSpec& s) {
  if (s.num_ranks < 1 || s.heads < 1 || !(s.token_scale > 0) || s.token_scale > 1) {
    return core::InvalidArgument("validation: ranks / heads / token scale: got " +
                                 std::to_string(s.num_ranks) + " / " + std::to_string(s.heads) +
                                 " / " + std::to_string(s.token_scale) +
                                 ", must be >= 1 / >= 1 / in (0, 1]");
  }
  const int n = s.num_ranks;
  std::vector<workload::Batch> batches;
  for (uint64_t b = 0; b < 3; ++b) {
    ASSIGN_OR_RETURN(workload::Batch batch, MakeBaseBatch(s, s.seed + b));
    batches.push_back(std::move(batch));
  }
  const std::vector<VideoOption> opts = VideoOptions(n, s.heads);
  const double kShares[] = {0.2, 0.5, 0.8};
  std::vector<ValidationCase> cases;
  for (int i = 0; i < 18; ++i) {
    const int b = i % 3, r = i / 3;
    ValidationCase c;
    c.name = "mixed-" + std::string(i < 9 ? "0" : "") + std::to_string(i + 1) + " (batch " +
             std::to_string(b) + ", rotation " + std::to_string(r) + ")";
    c.batch = batches[b];
    c.plan.planner = "validate";
    c.plan.num_ranks = n;
    for (int j = 0; j < 3; ++j) {
      const VideoOption& o = opts[(r * (b + 1) + j * (b + 2) + b) % opts.size()];
      c.plan.placements.push_back(Placement{j, o.config, o.ranks});
    }
    const int heavy = static_cast<int>(std::lround(50 * kShares[(r + b) % 3]));
    for (int m = 0; m < 50; ++m) {
      const int rank = m < heavy ? r % n : m % n;
      c.plan.placements.push_back(Whole(3 + m, rank));
    }
    cases.push_back(std::move(c));
  }
  {  // corner-balanced: longest first onto the rank with the fewest tokens.
    ValidationCase c;
    c.name = "corner-balanced";
    c.batch = batches[0];
    c.plan = {"validate", n, {}, -1};
    std::vector<int> order(c.batch.sequences.size());
    for (size_t q = 0; q < order.size(); ++q) order[q] = static_cast<int>(q);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
      return c.batch.sequences[x].tokens > c.batch.sequences[y].tokens;
    });
    std::vector<int64_t> load(n, 0);
    for (int q : order) {
      const int rank = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
      load[rank] += c.batch.sequences[q].tokens;
      c.plan.placements.push_back(Whole(q, rank));
    }
    cases.push_back(std::move(c));
  }
  {  // corner-videos-apart
    ValidationCase c;
    c.name = "corner-videos-apart";
    c.batch = batches[1];
    c.plan = {"validate", n, {}, -1};
    for (int j = 0; j < 3; ++j) c.plan.placements.push_back(Whole(j, 0));
    for (int m = 0; m < 50; ++m)
      c.plan.placements.push_back(Whole(3 + m, n == 1 ? 0 : 1 + m % (n - 1)));
    cases.push_back(std::move(c));
  }
  {  // corner-one-rank
    ValidationCase c;
    c.name = "corner-one-rank";
    c.batch = batches[2];
    c.plan = {"validate", n, {}, -1};
    for (size_t q = 0; q < c.batch.sequences.size(); ++q)
      c.plan.placements.push_back(Whole(static_cast<int>(q), 0));
    cases.push_back(std::move(c));
  }
  for (const ValidationCase& c : cases) {
    RETURN_IF_ERROR(ValidatePlan(c.plan, c.batch, s.heads).WithPrefix(c.name));
  }
  return cases;
}

core::StatusOr<DriftProbe> MakeDriftProbe(const Profile& profile) {
  const ConfigPrices* whole = profile.Find(ParallelConfig{});
  if (whole == nullptr || whole->points.empty()) {
    return core::InvalidArgument("profile has no whole-sequence (1,1,1) points for a drift probe");
  }
  // The points nearest 256, 512 and 1,024 tokens (each once), in ascending length.
  std::vector<const PricePoint*> chosen;
  for (int64_t target : {256, 512, 1024}) {
    const PricePoint* best = &whole->points.front();
    for (const PricePoint& p : whole->points) {
      if (std::llabs(p.tokens - target) < std::llabs(best->tokens - target)) best = &p;
    }
    if (std::find(chosen.begin(), chosen.end(), best) == chosen.end()) chosen.push_back(best);
  }
  std::sort(chosen.begin(), chosen.end(),
            [](const PricePoint* x, const PricePoint* y) { return x->tokens < y->tokens; });
  ValidationCase c;
  c.batch.name = "drift-probe";
  c.plan.planner = "drift-probe";
  c.plan.num_ranks = profile.ranks;
  std::string what;
  double compute = 0;
  for (const PricePoint* pt : chosen) {
    what += (what.empty() ? "" : " + ") + std::to_string(pt->count) + " x " +
            std::to_string(pt->tokens);
    compute += static_cast<double>(pt->count) * (pt->fwd_s + pt->bwd_s);
  }
  c.name = "drift-probe (" + what + " tokens per rank)";
  for (int r = 0; r < profile.ranks; ++r) {
    for (const PricePoint* pt : chosen) {
      for (int64_t i = 0; i < pt->count; ++i) {
        workload::Sequence s;
        s.id = static_cast<int>(c.batch.sequences.size());
        s.kind = models::MediaKind::kImage;
        s.tokens = pt->tokens;
        c.plan.placements.push_back(Whole(s.id, r));
        c.batch.sequences.push_back(s);
      }
    }
  }
  return DriftProbe{std::move(c), compute + profile.step_overhead_s, compute};
}

core::StatusOr<ValidationCase> MakeSoloProbe(const DriftProbe& probe) {
  const Plan& all = probe.probe.plan;
  if (all.num_ranks < 2) {
    return core::InvalidArgument("solo probe: needs >= 2 ranks, the drift probe has " +
                                 std::to_string(all.num_ranks));
  }
  ValidationCase c;
  c.batch.name = "drift-probe-solo";
  c.plan.planner = "drift-probe-solo";
  c.plan.num_ranks = all.num_ranks;
  for (const Placement& pl : all.placements) {
    if (pl.ranks != std::vector<int>{0}) continue;
    workload::Sequence s = probe.probe.batch.sequences[pl.seq];
    s.id = static_cast<int>(c.batch.sequences.size());
    c.plan.placements.push_back(Whole(s.id, 0));
    c.batch.sequences.push_back(s);
  }
  const std::string& name = probe.probe.name;
  const size_t open = name.find('(');
  c.name =
      "drift-probe-solo " + (open == std::string::npos
                                 ? std::string("(rank 0 alone)")
                                 : name.substr(open, name.size() - open - 1) + " on rank 0 alone)");
  return c;
}

core::StatusOr<Profile> DriftScaledProfile(const Profile& profile, const DriftProbe& probe,
                                           const std::vector<double>& rank_compute_s,
                                           double solo_speedup_now) {
  if (static_cast<int>(rank_compute_s.size()) != profile.ranks) {
    return core::InvalidArgument("drift probe: got " + std::to_string(rank_compute_s.size()) +
                                 " rank times, the profile has " + std::to_string(profile.ranks) +
                                 " ranks");
  }
  if (!(probe.profiled_compute_s > 0)) {
    return core::InvalidArgument("drift probe: the profiled compute time must be > 0");
  }
  Profile now = profile;
  now.rank_time_factors.clear();
  double sum = 0;
  for (size_t r = 0; r < rank_compute_s.size(); ++r) {
    const double f = rank_compute_s[r] / probe.profiled_compute_s;
    if (!InSpeedFactorRange(f)) {
      return core::InvalidArgument(
          "drift probe: rank " + std::to_string(r) + " runs " + std::to_string(f) +
          " times the profiled time, outside [0.25, 8]: profile this machine again");
    }
    now.rank_time_factors.push_back(f);
    sum += f;
  }
  now.step_overhead_s *= sum / static_cast<double>(rank_compute_s.size());
  if (solo_speedup_now > 0) {
    if (!InSpeedFactorRange(solo_speedup_now)) {
      return core::InvalidArgument("solo probe: a rank alone runs " +
                                   std::to_string(solo_speedup_now) +
                                   " times faster than with every rank busy, outside [0.25, 8]: "
                                   "profile this machine again");
    }
    now.solo_speedup = solo_speedup_now;
  }
  return now;
}

}  // namespace tessera::zellige
