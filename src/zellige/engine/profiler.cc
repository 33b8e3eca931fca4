#include "zellige/engine/profiler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <span>
#include <string>
#include <utility>

#include "comm/broadcast_result.h"
#include "core/stats.h"
#include "core/units.h"
#include "hw/machine.h"
#include "zellige/engine/engine_check.h"
#include "zellige/engine/plan_measurement.h"
#include "zellige/planner_configs.h"

namespace tessera::zellige::engine {

using core::Status;
using core::StatusOr;

namespace {

Status CheckOptions(const ProfilerOptions& o) {
  if (o.repeats < 1 || o.warmup < 0 || o.whole_tokens < 1) {
    return core::InvalidArgument("repeats / warmup / whole_tokens: got " +
                                 std::to_string(o.repeats) + " / " + std::to_string(o.warmup) +
                                 " / " + std::to_string(o.whole_tokens) +
                                 ", must be >= 1 / >= 0 / >= 1");
  }
  for (int64_t b : o.buckets) {
    if (b < 1) return core::InvalidArgument("buckets: got " + std::to_string(b) + ", must be >= 1");
  }
  return Status::Ok();
}

// Sorted, deduplicated buckets (the defaults when none are given).
std::vector<int64_t> Buckets(const ProfilerOptions& o) {
  std::vector<int64_t> b = o.buckets.empty() ? DefaultProfileBuckets() : o.buckets;
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  return b;
}

void AddPoint(ProfilePlanSet* set, MeasuredPoint p, Plan plan, workload::Batch batch) {
  set->points.points.push_back(std::move(p));
  set->plans.push_back(std::move(plan));
  set->batches.push_back(std::move(batch));
}

// Calibration (one 8-token sequence on rank 0) and solo (the whole-config point nearest
// whole_tokens / 4, on rank 0 only) plans; needs >= 2 ranks.
void AddReferencePoints(int n, const std::vector<int64_t>& buckets, int64_t whole_tokens,
                        ProfilePlanSet* set) {
  MeasuredPoint cal;
  cal.config = kCalibrationPoint;
  cal.tokens = 8;
  AddPoint(set, cal, Plan{"profile", n, {{0, ParallelConfig{}, {0}}}, -1}, MakeBatch({8}));
  MeasuredPoint solo;
  solo.config = kSoloPoint;
  solo.tokens = buckets.front();
  for (int64_t L : buckets) {
    if (std::abs(L - whole_tokens / 4) < std::abs(solo.tokens - whole_tokens / 4)) solo.tokens = L;
  }
  solo.count = std::max<int64_t>(1, whole_tokens / solo.tokens);
  Plan plan{"profile", n, {}, -1};
  for (int64_t i = 0; i < solo.count; ++i) {
    plan.placements.push_back({static_cast<int>(i), ParallelConfig{}, {0}});
  }
  workload::Batch batch = MakeBatch(std::vector<int64_t>(solo.count, solo.tokens));
  AddPoint(set, solo, std::move(plan), std::move(batch));
}

// One (config, bucket) plan: `count` copies of L tokens on every aligned block.
void AddConfigPoint(int n, int c, const ParallelConfig& pc, int64_t L, int64_t whole_tokens,
                    ProfilePlanSet* set) {
  const int d = pc.degree();
  MeasuredPoint p;
  p.config = c;
  p.tokens = L;
  p.count = pc.whole() ? std::max<int64_t>(1, whole_tokens / L) : 1;
  const int blocks = n / d;
  Plan plan;
  plan.planner = "profile";
  plan.num_ranks = n;
  for (int blk = 0; blk < blocks; ++blk) {
    std::vector<int> ranks(d);
    for (int i = 0; i < d; ++i) ranks[i] = blk * d + i;
    for (int64_t i = 0; i < p.count; ++i) {
      plan.placements.push_back({static_cast<int>(blk * p.count + i), pc, ranks});
    }
  }
  workload::Batch batch = MakeBatch(std::vector<int64_t>(static_cast<size_t>(p.count * blocks), L));
  AddPoint(set, p, std::move(plan), std::move(batch));
}

// Median over `reps` repetitions (after 2 warm-ups) of the slowest rank's time of `op`.
StatusOr<double> TimeCollective(comm::Communicator& world, int reps,
                                const std::function<Status()>& op) {
  std::vector<double> mine;
  for (int i = 0; i < reps + 2; ++i) {
    RETURN_IF_ERROR(world.Barrier());
    auto t0 = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(op());
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i >= 2) mine.push_back(t);
  }
  std::vector<double> all(static_cast<size_t>(reps) * world.size());
  RETURN_IF_ERROR(world.AllGather(std::span<const double>(mine), std::span<double>(all)));
  std::vector<double> slowest(reps, 0.0);
  for (int r = 0; r < world.size(); ++r) {
    for (int i = 0; i < reps; ++i) slowest[i] = std::max(slowest[i], all[r * reps + i]);
  }
  return core::Median(slowest);
}

// Round trip rank 0 <-> rank 1 of `floats` values (other ranks idle).
Status PingPong(comm::Communicator& world, std::vector<float>& buf, int64_t floats) {
  std::span<float> s(buf.data(), floats);
  if (world.rank() == 0) {
    RETURN_IF_ERROR(world.Send(s, 1, 7));
    return world.Recv(s, 1, 8);
  }
  if (world.rank() == 1) {
    RETURN_IF_ERROR(world.Recv(s, 0, 7));
    return world.Send(s, 0, 8);
  }
  return Status::Ok();
}

// One primitive at one message size: (bytes sent per rank, seconds).
StatusOr<CommPoint> TimePrimitive(comm::Communicator& world, const std::string& prim, int64_t bytes,
                                  int reps) {
  const int n = world.size();
  const int64_t floats = bytes / 4;
  const int64_t chunk = std::max<int64_t>(1, floats / (n - 1));
  std::vector<float> send(std::max(chunk * n, floats), 1.0f), recv(chunk * n, 0.0f);
  std::vector<int64_t> counts(n, chunk), displs(n);
  for (int j = 0; j < n; ++j) displs[j] = j * chunk;
  std::function<Status()> op;
  if (prim == "all_to_all") {
    op = [&] {
      return world.AllToAllV(std::span<const float>(send.data(), chunk * n), counts, displs,
                             std::span<float>(recv), counts, displs);
    };
  } else if (prim == "all_gather") {
    op = [&] { return world.AllGather(std::span<const float>(send.data(), chunk), recv); };
  } else {
    op = [&] { return PingPong(world, send, floats); };
  }
  ASSIGN_OR_RETURN(double t, TimeCollective(world, reps, op));
  if (prim == "p2p") return CommPoint{static_cast<double>(floats * 4), t / 2};  // one way
  return CommPoint{static_cast<double>(chunk * (n - 1) * 4), t};
}

}  // namespace

std::vector<int64_t> DefaultProfileBuckets() {
  std::vector<int64_t> b;
  for (int i = 0; i <= 16; ++i) b.push_back(std::llround(8.0 * std::pow(2.0, i / 2.0)));
  return b;
}

StatusOr<ProfilePlanSet> MakeProfilePlans(int n, const ProfilerOptions& options) {
  RETURN_IF_ERROR(CheckOptions(options));
  const std::vector<int64_t> buckets = Buckets(options);
  ProfilePlanSet set;
  set.points.ranks = n;
  // Every config a planner may use at n ranks: what a profile must price (profile.h).
  set.points.configs = PlannerConfigs(n, static_cast<int>(options.model.num_heads));
  for (const ParallelConfig& c : set.points.configs) {
    const auto usable =
        std::count_if(buckets.begin(), buckets.end(), [&](int64_t L) { return L >= c.degree(); });
    if (usable < 3) {
      return core::InvalidArgument("buckets: config " + c.ToString() +
                                   " needs >= 3 buckets of >= " + std::to_string(c.degree()) +
                                   " tokens to fit its prices");
    }
  }
  if (n >= 2) AddReferencePoints(n, buckets, options.whole_tokens, &set);
  for (size_t c = 0; c < set.points.configs.size(); ++c) {
    const ParallelConfig pc = set.points.configs[c];
    for (int64_t L : buckets) {
      if (L >= pc.degree())
        AddConfigPoint(n, static_cast<int>(c), pc, L, options.whole_tokens, &set);
    }
  }
  return set;
}

StatusOr<std::vector<CommFit>> MeasureCommFits(comm::Communicator& world, int reps) {
  const int n = world.size();
  std::vector<CommFit> fits;
  if (n < 2) return fits;
  const std::vector<int64_t> sizes = {4096, 16384, 65536, 262144, 1048576, 4194304};
  for (const std::string prim : {"all_to_all", "all_gather", "p2p"}) {
    std::vector<CommPoint> points;
    for (int64_t bytes : sizes) {
      ASSIGN_OR_RETURN(CommPoint pt, TimePrimitive(world, prim, bytes, reps));
      points.push_back(pt);
    }
    ASSIGN_OR_RETURN(CommFit f, FitComm(prim, prim == "p2p" ? 2 : n, std::move(points)));
    fits.push_back(std::move(f));
  }
  return fits;
}

StatusOr<Profile> MeasureProfile(comm::Communicator& world, const ProfilerOptions& options,
                                 const ProgressFn& progress) {
  ASSIGN_OR_RETURN(ProfilePlanSet set, MakeProfilePlans(world.size(), options));
  std::vector<PlanCase> cases;
  for (size_t i = 0; i < set.plans.size(); ++i) cases.push_back({&set.plans[i], &set.batches[i]});
  MeasureOptions mo;
  mo.warmup_steps = options.warmup;
  mo.steps = options.repeats;
  mo.seed = options.seed;
  ASSIGN_OR_RETURN(std::vector<PlanMeasurement> measured,
                   MeasurePlansInterleaved(cases, options.model, world, mo, progress));
  for (size_t i = 0; i < measured.size(); ++i) set.points.points[i].m = std::move(measured[i]);
  ASSIGN_OR_RETURN(set.points.comm, MeasureCommFits(world, 2 * options.repeats));
  StatusOr<Profile> built = core::Internal("not on rank 0");
  if (world.rank() == 0) {
    if (!set.points.points.empty() && !set.points.points[0].m.memory_measured) {
      built = core::FailedPrecondition(
          "this build does not count heap allocations (sanitizer build?); profile with the "
          "release build");
    } else {
      ProfileBuildOptions bo;
      bo.repeats = options.repeats;
      bo.model = ProfileModelOf(options.model);
      bo.machine = hw::DescribeThisMachine();
      built = BuildProfile(set.points, bo);
    }
  }
  return comm::BroadcastResult<Profile>(
      world, 0, built, [](const core::Json& j) { return ProfileFromJson(j, "profile"); });
}

}  // namespace tessera::zellige::engine
