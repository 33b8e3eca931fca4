// Profile: measured prices of one machine for one SmallDit shape, written by
// `tessera zellige profile` and read wherever a cluster preset is accepted (--profile FILE).
//
// What is measured (per participating rank, through the engine's real kernels and real MPI,
// median of repeats): for every parallel config theta the planners may use at `ranks`
// (planner_configs.h: every power-of-two degree, plus, when ranks is not a power of two, all
// ranks and knapformer's default bags; h dividing the heads) and every length bucket L, the
// forward and backward
// time of one training step of a batch holding n copies of an L-token sequence placed with
// theta on ranks 0..lambda-1 (n > 1 only for whole sequences, which coalesce: n = max(1,
// whole_tokens / L)), divided by n; and the peak allocated bytes above the resident base,
// divided by n. Per config the prices are fitted as
//   fwd_s(L) = a + b L + c L^2,  bwd_s(L) likewise   (least squares on relative error)
//   mem_bytes(L) = m0 + m1 L                          (least squares)
// so any length between the smallest and 2x the largest bucket is priced (outside that range
// the fit is still used; the profile records its range). Fixed per-step work (loss and
// gradient all-reduce, AdamW) is step_overhead_s, paid once per step by every rank; the bytes
// every rank holds before a step (parameters, gradients, AdamW state, backward scratch) are
// base_bytes. Communication primitives (all-to-all, all-gather, point-to-point) are fitted as
// alpha + beta * bytes per message.
//
// JSON ("kind": "tessera-zellige-profile", "version": 1): provenance ("measured on HOST,
// DATE"), machine, date, ranks, repeats, model {in_channels, hidden, heads, head_dim, layers,
// ffn}, step_overhead_s, base_bytes, usable_bytes_per_rank, solo_speedup, rank_time_factors
// (optional), configs [{q, h, k, points [{tokens, count, fwd_s, bwd_s, mem_bytes}], fwd_fit
// [a,b,c], bwd_fit [a,b,c], mem_fit [m0,m1]}], comm [{primitive, ranks, alpha_s,
// beta_s_per_byte, points [{bytes, time_s}]}].
// Loading checks, besides types and signs: every config of PlannerConfigs(ranks, heads) is
// present (a missing one is named, with the command that measures it); sizes within
// models::DitModel's ranges; point tokens <= workload::kMaxSequenceTokens; time fits >= 0
// from 1 token to twice the longest measured length and finite up to the longest sequence;
// memory fits with a slope >= 0, positive at twice the longest length (a negative intercept,
// clamped by EvalLine, is normal for measured memory); usable_bytes_per_rank within a
// device's memory range (hw/device.h); step_overhead_s <= 3600 s; comm alpha_s <= 60 s and
// beta_s_per_byte <= 1e-3 s/byte.
// Errors name the field, the value and what is allowed ("profile.json: configs[2].fwd_s:
// got -1, must be >= 0"). Plain values (measured data, its JSON round trip and validation);
// thread-safe to read. Pricing with a profile is ProfileCostModel's (cost_model_profile.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/fit.h"
#include "core/json_util.h"
#include "core/status.h"
#include "hw/cluster.h"
#include "hw/comm_fit.h"
#include "models/dit_spec.h"
#include "zellige/parallel_config.h"

namespace tessera::zellige {

// The SmallDit shape a profile was measured for (models::SmallDitConfig's sizes).
struct ProfileModel {
  int64_t in_channels = 16;
  int64_t hidden = 256;
  int64_t heads = 4;
  int64_t head_dim = 64;  // hidden / heads
  int64_t layers = 4;
  int64_t ffn = 1024;
  bool operator==(const ProfileModel&) const = default;
};

struct PricePoint {
  int64_t tokens = 0;    // sequence length L
  int64_t count = 1;     // copies measured together (whole sequences coalesce)
  double fwd_s = 0;      // per sequence, per participating rank (slowest participant)
  double bwd_s = 0;      // recompute-free backward (the engine keeps forward state)
  double mem_bytes = 0;  // peak allocated above base_bytes, per sequence, per rank (max)
  bool operator==(const PricePoint&) const = default;
};

struct ConfigPrices {
  ParallelConfig config;
  std::vector<PricePoint> points;   // ascending tokens
  std::array<double, 3> fwd_fit{};  // a, b, c of a + b L + c L^2 (seconds)
  std::array<double, 3> bwd_fit{};
  std::array<double, 2> mem_fit{};  // m0, m1 of m0 + m1 L (bytes)
  bool operator==(const ConfigPrices&) const = default;
};

// One measured message size: bytes per rank sent, median time.
using CommPoint = hw::CommSample;

// The alpha-beta fit (hw/comm_fit.h) of one primitive at `ranks` participants.
struct CommFit {
  std::string primitive;  // "all_to_all", "all_gather" or "p2p"
  int ranks = 2;          // participants
  double alpha_s = 0;
  double beta_s_per_byte = 0;
  std::vector<CommPoint> points;
  hw::AlphaBeta alpha_beta() const { return {alpha_s, beta_s_per_byte}; }
  bool operator==(const CommFit&) const = default;
};

// Fits alpha and beta to `points` (hw::FitAlphaBeta: least squares, each clamped at 0) and
// returns the CommFit holding them and the points. InvalidArgument as FitAlphaBeta.
core::StatusOr<CommFit> FitComm(const std::string& primitive, int ranks,
                                std::vector<CommPoint> points);

// Bounds of a speed factor a profile may carry (solo_speedup, rank_time_factors): beyond
// them the machine differs too much from the profiled one for the prices to describe it.
inline constexpr double kMinSpeedFactor = 0.25;
inline constexpr double kMaxSpeedFactor = 8.0;
inline bool InSpeedFactorRange(double f) { return f >= kMinSpeedFactor && f <= kMaxSpeedFactor; }

struct Profile {
  std::string provenance;  // "measured on HOST, DATE"
  std::string machine;     // host name and CPU model
  std::string date;        // ISO 8601
  int ranks = 0;           // MPI ranks it was measured with (configs up to this degree)
  int repeats = 0;         // timed steps per point (median taken)
  ProfileModel model;
  double step_overhead_s = 0;        // per step and rank: loss/gradient all-reduce + AdamW
  double base_bytes = 0;             // resident per rank before a step
  double usable_bytes_per_rank = 0;  // memory a rank may allocate (machine RAM / ranks)
  // Contention: prices are measured with every rank busy; a rank working while all others
  // are idle runs this many times faster (measured: the same whole-sequence load on one rank
  // alone vs on every rank). 1 = no contention; JSON field optional (default 1), in [0.25, 8].
  double solo_speedup = 1.0;
  // Per-rank time factors: rank r's work takes rank_time_factors[r] times its price (the
  // prices are those of the ranks' mean). Empty = 1 for every rank (the profiler writes none);
  // validate sets them from its drift probe to predict the machine as it runs now. JSON field
  // optional; when present one value per rank, each in [0.25, 8].
  std::vector<double> rank_time_factors;
  std::vector<ConfigPrices> configs;  // every config the planners may use at `ranks`
  std::vector<CommFit> comm;

  // The prices of `config`, or nullptr when it was not measured.
  const ConfigPrices* Find(const ParallelConfig& config) const;
  bool operator==(const Profile&) const = default;
};

// Least squares fits used by the profiler (core/fit.h): fwd/bwd prices by
// FitQuadraticRelative (a + b L + c L^2 minimising the relative error), memory by FitLine.
using core::FitLine;
using core::FitQuadraticRelative;

// Evaluates a fit at L (max(0, ...) so a fit never prices a sequence negative).
double EvalQuadratic(const std::array<double, 3>& f, double tokens);
double EvalLine(const std::array<double, 2>& f, double tokens);

// The JSON form above; ProfileFromJson reads it back to an equal Profile (doubles print so
// that they parse back exactly).
core::Json ToJson(const Profile& p);
// Parses and validates every field; `source` prefixes messages (the file name).
core::StatusOr<Profile> ProfileFromJson(const core::Json& j, const std::string& source);
core::StatusOr<Profile> LoadProfile(const std::string& path);

// InvalidArgument naming the first differing field and both values, e.g.
// "profile.json: model.head_dim: measured for 64, asked for 128", or Ok.
core::Status CheckProfileModel(const Profile& p, const ProfileModel& want,
                               const std::string& source);

}  // namespace tessera::zellige
