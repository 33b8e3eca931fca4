// The serving plan table of Xema part 3 (`tessera xema plan --out plan.json`, read by
// `tessera xema serve --plan plan.json`): per request template, how the server runs it: SP
// degree, replicas, concurrency (runs of the template in flight on one device at once), batch
// (the most requests of the template one run takes together), the memory control (allocator,
// static-arena bytes per run in flight, the mitigations) and what the planner predicted; plus
// the fallback for templates not in the table. JSON:
//   {"format": "tessera.xema.plan_table/1", "label": "measured" | "modeled",
//    "device": "cpu" (this host's cores, one per device) | a modeled preset ("h100-80g", ...),
//    "budget_bytes", "devices", "rate_rps", "slo_scale",
//    "models": {name: {"weight_bytes"}},              every model resident on every device
//    "entries": [{"template": {model, width, height, frames, steps, cfg}, "key",
//                 "sp_degree", "replicas", "concurrency", "batch",
//                 "memory": {"allocator": "static", "arena_bytes", "layout": "tflite",
//                            "mitigations": {ffn_chunks, ...}, "labels": [...]},
//                 "predicted": {"solo_s", "p50_s", "p99_s", "attainment"}, "slo_s"}],
//    "fallback": {"allocator": "caching", "mitigations": "all", "concurrency": 1},
//    "planner": {...}}                                 the planner's report (not read back)
// Routing (RouteRequest): the entry of the request's exact template; else the smallest
// planned template (fewest arena bytes) of the same model that covers it in every dimension
// (width, height, frames, steps >=, CFG on covers off), whose per-request memory bounds the
// request's; else the fallback: the caching allocator, every always-on mitigation (tiling's),
// one request alone on the device. Both kinds of miss are served, logged and counted.
//
// Errors (InvalidArgument naming the source, the field and the value): another format, an
// unknown key, a template that is not a valid request, two entries for one template, a
// concurrency, SP degree or batch out of range, entries whose arenas at their concurrency do
// not fit the budget beside the weights. CheckPlanFitsServer refuses a plan for another device
// kind, a larger budget, another device count or models whose weights differ from the
// server's (a plan made for another model). Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "xema/pipeline/tiny_pipeline.h"

namespace tessera::xema {

inline constexpr char kServingPlanFormat[] = "tessera.xema.plan_table/1";
inline constexpr char kLocalDeviceKind[] = "cpu";
inline constexpr int kMaxPlanConcurrency = 16;

struct ServingPlanEntry {
  DiffusionRequest request;  // the template fields and the mitigations it runs with
  std::string key;           // TemplateKeyString(request)
  int sp_degree = 1;
  int replicas = 1;
  int concurrency = 1;
  int batch = 1;  // [1, kMaxRequestBatch]
  std::string allocator = "static";
  int64_t arena_bytes = 0;  // the static arena of one run in flight (a batch of up to `batch`)
  double solo_s = 0;        // predicted: alone on a device
  double p50_s = 0, p99_s = 0, attainment = 0;  // predicted under the planned load
  double slo_s = 0;
};

struct ServingPlan {
  std::string label = "measured";
  std::string device = kLocalDeviceKind;
  int64_t budget_bytes = 0;
  int devices = 1;
  double rate_rps = 0;
  double slo_scale = 0;
  std::map<std::string, int64_t> model_weight_bytes;
  std::vector<ServingPlanEntry> entries;
  core::Json planner = core::Json::object();

  int64_t WeightBytes() const;  // every model's weights (resident on each device)
  // The most requests one device may hold at once: the entries' concurrencies summed (each
  // entry's requests may run beside the others'), at least 1 (the fallback's).
  int SlotsPerDevice() const;
};

core::Json ToJson(const ServingPlan& plan);
core::StatusOr<ServingPlan> ServingPlanFromJson(const core::Json& j, const std::string& source);
core::StatusOr<ServingPlan> ReadServingPlan(const std::string& path);
// True when `j` claims the serving plan format (so `serve --plan` can tell it from
// mitigation plans).
bool IsServingPlanJson(const core::Json& j);

// The server's device kind ("cpu").
core::Status CheckPlanDevice(const ServingPlan& plan, const std::string& source);
// The server's side: CheckPlanDevice, budget, device count, models' weight bytes (`weights`:
// the preset models' WeightBytes by name).
core::Status CheckPlanFitsServer(const ServingPlan& plan, const std::string& source,
                                 int64_t budget_bytes, int devices,
                                 const std::map<std::string, int64_t>& weights);

enum class RouteKind { kExact, kCovered, kFallback };
struct Route {
  RouteKind kind = RouteKind::kFallback;
  int entry = -1;  // into plan.entries; -1 for the fallback
};
Route RouteRequest(const ServingPlan& plan, const DiffusionRequest& request);
std::string RouteKindName(RouteKind kind);  // "exact", "covered", "fallback"

// `request` as a run of a batch of k requests of its template (k - 1 batch mates: prompts
// "batch mate <j>", seeds request.seed + j, its guidance): what the planner and the server record
// and time a batch of k with (a run's layout depends on its template and batch, not on the
// prompts or seeds).
DiffusionRequest BatchTemplate(const DiffusionRequest& request, int k);

// The request as the fallback runs it: the template as sent, tiling's always-on mitigations.
DiffusionRequest FallbackRequest(const TinyModelSpec& spec, const DiffusionRequest& request);

}  // namespace tessera::xema
