#include "zellige/profile_builder.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/stats.h"
#include "core/units.h"

namespace tessera::zellige {

using core::Median;
using core::Status;
using core::StatusOr;

namespace {

// Assumed when the machine's memory could not be read.
constexpr double kUnknownMemoryBytes = 8 * core::kGiB;

struct FixedWork {
  double fwd_s = 0;
  double bwd_s = 0;
  double bytes = 0;
};

// The calibration's idle ranks: the per-step work every rank does whatever it holds.
FixedWork MeasureFixedWork(const ProfileMeasurements& in) {
  std::vector<double> fwd, bwd, bytes;
  for (const MeasuredPoint& p : in.points) {
    if (p.config != kCalibrationPoint) continue;
    for (const RankMeasurement& r : p.m.ranks) {
      if (r.local_tokens != 0) continue;
      fwd.insert(fwd.end(), r.forward_s.begin(), r.forward_s.end());
      bwd.insert(bwd.end(), r.backward_s.begin(), r.backward_s.end());
      bytes.push_back(static_cast<double>(r.peak_bytes - r.base_bytes));
    }
  }
  return {Median(fwd), Median(bwd), Median(bytes)};
}

// Median over all steps of all points of the fastest rank's tail.
double MedianFastestTail(const ProfileMeasurements& in) {
  std::vector<double> tails;
  for (const MeasuredPoint& p : in.points) {
    for (int s = 0; s < p.m.steps(); ++s) {
      double mn = INFINITY;
      for (const RankMeasurement& r : p.m.ranks) mn = std::min(mn, r.tail_s[s]);
      tails.push_back(mn);
    }
  }
  return Median(tails);
}

double MedianBase(const ProfileMeasurements& in) {
  std::vector<double> bases;
  for (const MeasuredPoint& p : in.points) {
    for (const RankMeasurement& r : p.m.ranks) bases.push_back(static_cast<double>(r.base_bytes));
  }
  return Median(bases);
}

// Every rank busy vs rank 0 alone on the solo point's load; 1 without a solo point.
double SoloSpeedup(const ProfileMeasurements& in) {
  double speedup = 1.0;
  const int n = in.ranks;
  for (const MeasuredPoint& solo : in.points) {
    if (solo.config != kSoloPoint || solo.m.ranks.empty()) continue;
    for (const MeasuredPoint& all : in.points) {
      if (all.config < 0 || !in.configs[all.config].whole() || all.tokens != solo.tokens) continue;
      std::vector<double> busy, alone;
      for (int s = 0; s < all.m.steps(); ++s) {
        double sum = 0;
        for (const RankMeasurement& r : all.m.ranks) sum += r.forward_s[s] + r.backward_s[s];
        busy.push_back(sum / n);
      }
      const RankMeasurement& r0 = solo.m.ranks[0];
      for (int s = 0; s < solo.m.steps(); ++s) alone.push_back(r0.forward_s[s] + r0.backward_s[s]);
      const double a = Median(alone);
      if (a > 0) speedup = std::clamp(Median(busy) / a, kMinSpeedFactor, kMaxSpeedFactor);
    }
  }
  return speedup;
}

// One (config, bucket) point: per-sequence prices net of the fixed work.
PricePoint PriceOf(const MeasuredPoint& p, int degree, int blocks, const FixedWork& fixed) {
  std::vector<double> f, b;
  for (int s = 0; s < p.m.steps(); ++s) {
    double sf = 0, sb = 0;
    for (int blk = 0; blk < blocks; ++blk) {
      double mf = 0, mb = 0;
      for (int r = blk * degree; r < (blk + 1) * degree; ++r) {
        mf = std::max(mf, p.m.ranks[r].forward_s[s]);
        mb = std::max(mb, p.m.ranks[r].backward_s[s]);
      }
      sf += mf;
      sb += mb;
    }
    f.push_back(sf / blocks);
    b.push_back(sb / blocks);
  }
  double peak = 0;
  for (int r = 0; r < blocks * degree; ++r) {
    peak = std::max(peak, static_cast<double>(p.m.ranks[r].peak_bytes - p.m.ranks[r].base_bytes));
  }
  PricePoint pt;
  pt.tokens = p.tokens;
  pt.count = p.count;
  const double cnt = static_cast<double>(p.count);
  pt.fwd_s = std::max(1e-9, (Median(f) - fixed.fwd_s) / cnt);
  pt.bwd_s = std::max(1e-9, (Median(b) - fixed.bwd_s) / cnt);
  pt.mem_bytes = std::max(0.0, (peak - fixed.bytes) / cnt);
  return pt;
}

// The relative quadratic fit of measured times; when noise makes it dip below zero anywhere
// in [1, 2 x the longest length] (a profile with such a fit does not load: profile.h), the
// fit with non-negative coefficients instead.
StatusOr<std::array<double, 3>> TimeFit(const std::vector<double>& xs,
                                        const std::vector<double>& ys) {
  ASSIGN_OR_RETURN(auto f, FitQuadraticRelative(xs, ys));
  const double hi = 2 * *std::max_element(xs.begin(), xs.end());
  std::vector<double> at = {1.0, hi};
  if (f[2] != 0) at.push_back(std::clamp(-f[1] / (2 * f[2]), 1.0, hi));
  for (double L : at) {
    if (!(core::EvalPolynomial(f, L) >= 0)) return core::FitQuadraticRelativeNonNegative(xs, ys);
  }
  return f;
}

StatusOr<ConfigPrices> PriceConfig(const ProfileMeasurements& in, int c, const FixedWork& fixed) {
  ConfigPrices cp;
  cp.config = in.configs[c];
  const int degree = cp.config.degree();
  const int blocks = in.ranks / degree;
  std::vector<double> xs, fw, bw, mem;
  for (const MeasuredPoint& p : in.points) {
    if (p.config != c) continue;
    const PricePoint pt = PriceOf(p, degree, blocks, fixed);
    cp.points.push_back(pt);
    xs.push_back(static_cast<double>(p.tokens));
    fw.push_back(pt.fwd_s);
    bw.push_back(pt.bwd_s);
    mem.push_back(pt.mem_bytes);
  }
  if (cp.points.size() < 3) {
    return core::InvalidArgument("profile measurements: config " + cp.config.ToString() + ": got " +
                                 std::to_string(cp.points.size()) +
                                 " points, must be >= 3 to fit its prices");
  }
  ASSIGN_OR_RETURN(cp.fwd_fit, TimeFit(xs, fw));
  ASSIGN_OR_RETURN(cp.bwd_fit, TimeFit(xs, bw));
  ASSIGN_OR_RETURN(cp.mem_fit, FitLine(xs, mem));
  return cp;
}

Status CheckMeasurements(const ProfileMeasurements& in) {
  if (in.ranks < 1) {
    return core::InvalidArgument("profile measurements: ranks: got " + std::to_string(in.ranks) +
                                 ", must be >= 1");
  }
  for (size_t i = 0; i < in.points.size(); ++i) {
    const MeasuredPoint& p = in.points[i];
    const std::string where = "profile measurements: points[" + std::to_string(i) + "]";
    if (p.config >= static_cast<int>(in.configs.size()) || p.config < kSoloPoint) {
      return core::InvalidArgument(where + ".config: got " + std::to_string(p.config) +
                                   ", must be -2, -1 or a config index < " +
                                   std::to_string(in.configs.size()));
    }
    if (static_cast<int>(p.m.ranks.size()) != in.ranks || p.m.steps() < 1 || p.count < 1) {
      return core::InvalidArgument(where + ": got " + std::to_string(p.m.ranks.size()) +
                                   " ranks, " + std::to_string(p.m.steps()) + " steps, count " +
                                   std::to_string(p.count) + "; must be " +
                                   std::to_string(in.ranks) + " ranks, >= 1 step, count >= 1");
    }
    for (const RankMeasurement& r : p.m.ranks) {
      const size_t s = static_cast<size_t>(p.m.steps());
      if (r.forward_s.size() != s || r.backward_s.size() != s || r.tail_s.size() != s) {
        return core::InvalidArgument(where + ": ranks differ in their number of steps");
      }
    }
    if (p.config >= 0 && in.configs[p.config].degree() > in.ranks) {
      return core::InvalidArgument(where + ": config " + in.configs[p.config].ToString() +
                                   " has more ranks than the job's " + std::to_string(in.ranks));
    }
  }
  return Status::Ok();
}

}  // namespace

ProfileModel ProfileModelOf(const models::SmallDitConfig& config) {
  ProfileModel m;
  m.in_channels = config.in_channels;
  m.hidden = config.hidden;
  m.heads = config.num_heads;
  m.head_dim = config.head_dim();
  m.layers = config.num_layers;
  m.ffn = config.ffn_hidden;
  return m;
}

std::string ProfileProvenance(const hw::Machine& machine) {
  return "measured on " + hw::Summary(machine) + ", " + machine.date;
}

StatusOr<Profile> BuildProfile(const ProfileMeasurements& in, const ProfileBuildOptions& options) {
  RETURN_IF_ERROR(CheckMeasurements(in));
  const FixedWork fixed = MeasureFixedWork(in);
  Profile prof;
  prof.machine = hw::Summary(options.machine);
  prof.date = options.machine.date;
  prof.provenance = ProfileProvenance(options.machine);
  prof.ranks = in.ranks;
  prof.repeats = options.repeats;
  prof.model = options.model;
  prof.step_overhead_s = MedianFastestTail(in) + fixed.fwd_s + fixed.bwd_s;
  prof.base_bytes = MedianBase(in) + fixed.bytes;
  const double memory_bytes = options.machine.memory_bytes > 0
                                  ? static_cast<double>(options.machine.memory_bytes)
                                  : kUnknownMemoryBytes;
  prof.usable_bytes_per_rank = options.usable_memory_fraction * memory_bytes / in.ranks;
  prof.solo_speedup = SoloSpeedup(in);
  for (size_t c = 0; c < in.configs.size(); ++c) {
    ASSIGN_OR_RETURN(ConfigPrices cp, PriceConfig(in, static_cast<int>(c), fixed));
    prof.configs.push_back(std::move(cp));
  }
  prof.comm = in.comm;
  return prof;
}

}  // namespace tessera::zellige
