// Xema against the serving configurations people deploy (deployed_config.h) at paper scale,
// modeled (`tessera xema deployed`): the same template mix, the same seeded arrivals and the
// same SLO (slo_scale x the template's isolated latency: the plain request on one GPU with
// every weight resident) for every policy, scored by the planner's serving simulation
// (serving_sim.h through ScoreConfiguration).
//
// CompareWithDeployed: Xema is PlanModeledServing (SP degree, FFN chunks, VAE tiles, encoder on
// the host, concurrency and batch searched; its exact static arena), twice: "xema" serves every
// template it can fit, "xema+shed" may also refuse a template's requests when that serves more
// within their SLOs (ServingPlannerOptions::may_shed: what an out-of-memory refusal does to a
// deployed configuration's long requests, chosen instead of suffered); a deployed configuration
// runs each template as ModelDeployedTemplate says, one request at a time per GPU or SP group.
// A template that does not fit a policy's device runs out of memory on every arrival (counted,
// and a miss); a policy where no template fits is reported infeasible, not as 0%.
// SLO attainment = requests answered within their SLO / arrivals.
//
// RunDeployedSweep: devices x GPU counts x models (PaperMix) x loads. A load is a share of the
// capacity `gpus / mean isolated latency` (arrivals per second the GPUs could serve at SP 1
// with every weight resident), over `requests` expected arrivals (the same statistics on a
// slow card and a fast one); xema / best deployed attainment per point (infinite when only
// Xema meets any SLO; undefined when none does).
//
// Errors: InvalidArgument naming the option (an empty list, a load <= 0, requests < 1, an unknown
// device, model or policy, a degree not dividing the GPUs); the planner's option errors. Progress:
// progress(done, total, label) per point, one call at a time. Points are planned on one worker
// thread per hardware thread. Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "xema/planner/deployed_config.h"
#include "xema/planner/serving_planner.h"

namespace tessera::xema {

struct DeployedRow {
  std::string policy;  // "xema" or DeployedConfigName
  bool infeasible = false;
  std::string why;  // of an infeasible policy
  double attainment = 0;
  double p50_s = 0, p99_s = 0;  // of the requests served
  int64_t arrivals = 0;
  int64_t out_of_memory = 0;                // arrivals of templates the policy cannot run
  std::string configuration;                // xema: the planner's choice per template
  std::vector<DeployedTemplate> templates;  // deployed: per template of the mix
};

// What a deployed configuration is scored with: one variant per template (its modeled seconds
// and SP degree), the arena the whole device (one pipeline per GPU or group runs one request at
// a time), concurrency 1; variant -1 (out of memory) for a template that does not fit.
struct DeployedProfile {
  ServingProfile profile;
  Configuration configuration;
  std::vector<DeployedTemplate> templates;
};
core::StatusOr<DeployedProfile> DeployedServingProfile(const DeployedConfig& config,
                                                       const ServingPlannerOptions& options,
                                                       const ModeledDevice& device);

core::StatusOr<std::vector<DeployedRow>> CompareWithDeployed(
    const ServingPlannerOptions& options, const ModeledDevice& device,
    const std::vector<DeployedConfig>& configs);

// The three-template mix of each analytic model (flux2-dev: 512, 1024, 2048 px squares 2:3:1;
// cogvideox-5b: 720x480x25, 720x480x49, 1360x768x49 1:2:1; ltx-2: 768x512x49, 768x512x121,
// 1216x704x121 2:2:1), the paper tables' mixes.
core::StatusOr<std::vector<LoadTemplate>> PaperMix(const std::string& model);

// The isolated latency's mean over the mix's arrivals (weights as shares) on `device`.
core::StatusOr<double> MeanIsolatedSeconds(const std::vector<LoadTemplate>& mix,
                                           const ModeledDevice& device);

struct DeployedSweepOptions {
  std::vector<std::string> devices;  // ModeledDeviceNames() when empty
  std::vector<int> gpus = {1, 8};
  std::vector<std::string> models;  // AnalyticModelNames() when empty
  std::vector<double> loads = {0.3, 0.6, 0.9, 1.2};
  std::vector<std::string> policies;  // AllDeployedConfigs(gpus) when empty
  double slo_scale = 2;
  double requests = 400;  // expected arrivals per point: its duration is requests / rate
  uint64_t seed = 1;
  int max_batch = 1;
  int max_concurrency = 3;
  // The offload configurations' host link (DeployedConfig::host_bytes_per_s); 0: the device's.
  double offload_host_bytes_per_s = 0;
  std::function<void(int done, int total, const std::string& label)> progress;
};

struct DeployedPoint {
  std::string device;
  int gpus = 1;
  std::string model;
  double load = 0, rate_rps = 0;
  std::vector<DeployedRow> rows;  // [0]: xema, [1]: xema+shed, then the deployed ones
  std::string best_deployed;      // the deployed configuration of highest attainment
  double ratio = 0;               // xema / best_deployed; +inf, or NaN when neither serves
  double ratio_shed = 0;          // the same for xema+shed
};

struct DeployedSweepReport {
  std::vector<DeployedPoint> points;
  struct Summary {
    int xema_at_least_best = 0;  // points where it is >= best deployed - 2 points
    int xema_infeasible = 0;
    int infinite = 0;
    double ratio_max = 0;  // over finite ratios
    std::string ratio_max_at;
  };
  Summary serve_all;  // xema
  Summary shed;       // xema+shed
};

core::StatusOr<DeployedSweepReport> RunDeployedSweep(const DeployedSweepOptions& options);

core::Json ToJson(const DeployedSweepReport& report);

}  // namespace tessera::xema
