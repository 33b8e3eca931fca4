// CompassProfile: what one machine measured for Compass's models on one topology at one TP
// degree, written by `tessera compass profile` (profile_run.h) and read back by the commands
// that predict (the degree choice here, the strategy selector later). All times are device
// seconds (emulated wall seconds / the time scale the profile was taken at).
//
// Contents:
//  - gemms: every GEMM shape the profiled operators run, whole and in parts at every
//    feasible degree, each timed alone on one thread (overlap_context.h ProfileGemms):
//    "GEMM time as a function of chunk shape";
//  - links: the collective bench's rows (collective_bench.h): AllGather and ReduceScatter,
//    single ring, double ring and direct at a few block sizes, measured next to the model;
//  - contention: one GEMM's time alone and while the rank's collectives run beside it (the
//    comm thread and the copy engine share the rank's core); kappa = overlapped / alone;
//  - operators: per profiled operator, the measured decomposition times T(d) and the fitted
//    T(d) = A d + B + C / d with its d* (degree_model.h, d* among the fitted degrees);
//  - classes: per operator class ("ag": AllGather and wgrad, "rs": ReduceScatter) the class
//    model's alpha, delta, kappa and the pipeline model's (degree_model.h), fitted on every
//    profiled operator of the class;
//  - overheads: per strategy family (none, fused-ring1, fused-ring2, fused-direct, decomp) and
//    class, the strategy model's alpha, delta, kappa (strategy_model.h), fitted on the measured
//    runs of every profiled operator: what the selector predicts with.
//
// File (JSON): {"kind": "compass-profile", "version": 1, "topology": ..., "ranks": ...,
// "time_scale": ..., "gemms": [{"trans_a", "m", "n", "k", "device_s"}...], "links": [...],
// "contention": {...}, "operators": [...], "classes": {...}, "overheads": {family: {class:
// {...}}}}. ProfileFromJson validates every
// field it reads (messages name the file, field and value); CheckProfileFor refuses a profile
// taken on another topology or TP degree.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compass/degree_model.h"
#include "compass/strategy_model.h"
#include "core/json_util.h"
#include "core/status.h"

namespace tessera::compass {

struct ProfiledGemm {
  bool trans_a = false;
  int64_t m = 0, n = 0, k = 0;
  double device_s = 0;
};

struct ProfiledLink {
  std::string kind;  // "allgather", "reducescatter"
  std::string algo;  // "ring1", "ring2", "direct"
  int64_t block_wire_bytes = 0;
  double measured_s = 0, modeled_s = 0;
};

struct ContentionFigure {
  int64_t m = 0, n = 0, k = 0;  // the GEMM timed
  double alone_s = 0, overlapped_s = 0;
  double kappa() const { return alone_s > 0 ? overlapped_s / alone_s : 0; }
};

struct ProfiledOperator {
  std::string label;             // "qkv h512 M256"
  std::string op;                // tp_op.h kind name
  int64_t m = 0, n = 0, k = 0;   // the operator's shape (tp_op.h)
  std::map<int, double> t_by_d;  // measured decomp:D, device seconds
  DegreeFit fit;                 // on d in {1, 2, 4, 8}
  int d_star = 0;                // the fit's choice among the fitted degrees
};

struct ProfiledClass {
  DegreeClassModel degree;  // alpha, delta, kappa of the closed form
  PipelineModel pipeline;   // alpha, delta, kappa of the pipeline form
};

struct CompassProfile {
  std::string topology;
  int ranks = 0;
  double time_scale = 0;
  std::string time_scale_source;
  std::string machine;  // where it was measured (host name, cores)
  int repeats = 0;
  std::vector<ProfiledGemm> gemms;
  std::vector<ProfiledLink> links;
  ContentionFigure contention;
  std::vector<ProfiledOperator> operators;
  std::map<std::string, ProfiledClass> classes;  // "ag", "rs"
  OverheadTable overheads;

  // The profiled time of a GEMM shape; NotFound naming the shape.
  core::StatusOr<double> GemmSeconds(bool trans_a, int64_t m, int64_t n, int64_t k) const;
};

core::Json ToJson(const CompassProfile& p);
// `where`: the file name, prefixed to messages.
core::StatusOr<CompassProfile> ProfileFromJson(const core::Json& j, const std::string& where);
core::StatusOr<CompassProfile> LoadProfile(const std::string& path);

// InvalidArgument when the profile was taken on another topology or TP degree:
// "--profile p.json: taken on topology h100x8 at TP 4, this run is a6000x8 at TP 8".
core::Status CheckProfileFor(const CompassProfile& p, const std::string& where,
                             const std::string& topology, int ranks);

}  // namespace tessera::compass
