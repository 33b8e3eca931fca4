// Xema's planner at paper scale, modeled (`tessera xema plan --device NAME`): the
// serving profile of a mix of the public models' templates (xema/analytic_trace.h) on a modeled
// GPU (xema/serve/modeled_device.h), searched by the same planner as the measured one
// (serving_planner.h), with sequence parallelism as a real choice.
//
// ModelServingProfile: per template, a variant for every SP degree d, a power of two up to
// options.max_sp_degree (dividing the devices and the model's heads), FFN token chunks k in {1, 4},
// VAE tiles t in {1, 2, 4} (the mitigations the analytic traces model; attention stays fused) and
// batch b in 1 .. options.max_batch; each variant's trace is member 0's (AnalyticTrace), its arena
// the tflite layout of its activations (weights excluded: they are resident; a batch variant's the
// largest over the batch sizes up to b), its solo seconds the trace's modeled time (400 TFLOP/s,
// all-to-alls at the device's link speed) and its batch_s those of each batch size. The isolated
// latency (the SLO's base) is the plain request's on one device with every weight resident, whether
// or not it fits. A model in `encoders_on_host` keeps its text encoder's weights in host memory
// (streamed per layer, every variant of its templates). Modeled sharing: two requests on one GPU
// share its throughput (pair speed-up 1: a paper-scale DiT saturates the GPU alone); no server
// overhead.
//
// PlanModeledServing: the planner's search (PlanServing) for every subset of the mix's models
// whose encoders stay on the host (the weights must leave room: a subset whose resident weights
// fill the budget is skipped), the best by SLO attainment (then mean latency); the table is
// labelled modeled, device the preset, and its report names the subset.
//
// Errors: InvalidArgument naming the option (ValidatePlannerOptions; the mix's models must be
// analytic; a budget no subset leaves room in). ModelServingProfile: Infeasible "budget: ..."
// when the resident weights fill the budget (PlanModeledServing skips such a subset, and one
// where PlanServing finds no template fits, by that code). Progress: progress(stage, done, total).
// Thread-safety: reentrant.
#pragma once

#include <set>
#include <string>

#include "core/status.h"
#include "xema/planner/serving_planner.h"
#include "xema/serve/modeled_device.h"

namespace tessera::xema {

// The isolated latency of a modeled template (the SLO's base): the request without offload on
// one device with every weight resident, whether or not it fits; AnalyticTrace's errors.
core::StatusOr<double> ModeledIsolatedSeconds(const DiffusionRequest& request,
                                              const ModeledDevice& device);

core::StatusOr<ServingProfile> ModelServingProfile(const ServingPlannerOptions& options,
                                                   const ModeledDevice& device,
                                                   const std::set<std::string>& encoders_on_host);

core::StatusOr<ServingPlannerResult> PlanModeledServing(const ServingPlannerOptions& options,
                                                        const ModeledDevice& device);

}  // namespace tessera::xema
