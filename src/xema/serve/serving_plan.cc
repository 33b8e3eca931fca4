#include "xema/serve/serving_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>

#include "xema/pipeline/template_json.h"
#include "xema/serve/memory_policy.h"
#include "xema/serve/modeled_device.h"
#include "xema/serve/serve_device.h"

namespace tessera::xema {
namespace {

core::Json EntryToJson(const ServingPlanEntry& e) {
  return {{"template", TemplateToJson(e.request)},
          {"key", e.key},
          {"sp_degree", e.sp_degree},
          {"replicas", e.replicas},
          {"concurrency", e.concurrency},
          {"batch", e.batch},
          {"memory",
           {{"allocator", e.allocator},
            {"arena_bytes", e.arena_bytes},
            {"layout", "tflite"},
            {"mitigations", MitigationsToJson(e.request)},
            {"labels", MitigationLabels(e.request)}}},
          {"predicted",
           {{"solo_s", e.solo_s},
            {"p50_s", e.p50_s},
            {"p99_s", e.p99_s},
            {"attainment", e.attainment}}},
          {"slo_s", e.slo_s}};
}

// `modeled`: a table for a modeled device (analytic models, SP degrees up to the devices).
core::StatusOr<ServingPlanEntry> EntryFromJson(const core::Json& j, const std::string& path,
                                               int devices, bool modeled) {
  RETURN_IF_ERROR(core::CheckKnownKeys(j, path,
                                       {"template", "key", "sp_degree", "replicas", "concurrency",
                                        "batch", "memory", "predicted", "slo_s"}));
  ServingPlanEntry e;
  ASSIGN_OR_RETURN(const core::Json* t, core::Member(j, path, "template"));
  RETURN_IF_ERROR(TemplateFromJson(*t, core::JoinPath(path, "template"), &e.request));
  const std::string mpath = core::JoinPath(path, "memory");
  ASSIGN_OR_RETURN(const core::Json* m, core::Member(j, path, "memory"));
  RETURN_IF_ERROR(core::CheckKnownKeys(
      *m, mpath, {"allocator", "arena_bytes", "layout", "mitigations", "labels"}));
  ASSIGN_OR_RETURN(const core::Json* mit, core::Member(*m, mpath, "mitigations"));
  RETURN_IF_ERROR(MitigationsFromJson(*mit, core::JoinPath(mpath, "mitigations"), &e.request));
  ASSIGN_OR_RETURN(const int64_t sp, core::GetIntInRange(j, path, "sp_degree", 1, devices));
  if (devices % sp != 0) {
    return core::InvalidArgument(fmt::format(
        "{}.sp_degree: got {}, must divide the {} devices (replica groups)", path, sp, devices));
  }
  if (modeled) {
    RETURN_IF_ERROR(
        ValidateModeledTemplate(e.request, static_cast<int>(sp)).WithPrefix(path + ".template"));
  } else {
    auto spec = TinyModel(e.request.model);
    if (!spec.ok()) return spec.status().WithPrefix(core::JoinPath(path, "template"));
    RETURN_IF_ERROR(ValidateRequest(*spec, e.request).WithPrefix(path));
  }
  if (!modeled && e.request.offload.any()) {
    return core::InvalidArgument(fmt::format(
        "{}.mitigations.offload: got {}, a planned entry runs from a static arena without a host "
        "tier; must be []",
        mpath, core::ShowJson((*mit)["offload"])));
  }
  e.key = TemplateKeyString(e.request);
  ASSIGN_OR_RETURN(e.allocator, core::GetString(*m, mpath, "allocator"));
  if (e.allocator != "static") {
    return core::InvalidArgument(fmt::format(
        "{}.allocator: got '{}', planned entries run from a static arena: must be static", mpath,
        e.allocator));
  }
  ASSIGN_OR_RETURN(e.arena_bytes, core::GetPositiveInt(*m, mpath, "arena_bytes"));
  ASSIGN_OR_RETURN(const int64_t replicas,
                   core::GetIntInRange(j, path, "replicas", devices / sp, devices / sp));
  ASSIGN_OR_RETURN(const int64_t c,
                   core::GetIntInRange(j, path, "concurrency", 1, kMaxPlanConcurrency));
  ASSIGN_OR_RETURN(const int64_t b, core::GetIntInRange(j, path, "batch", 1, kMaxRequestBatch));
  e.sp_degree = static_cast<int>(sp);
  e.replicas = static_cast<int>(replicas);
  e.concurrency = static_cast<int>(c);
  e.batch = static_cast<int>(b);
  if (j.contains("predicted")) {
    const std::string ppath = core::JoinPath(path, "predicted");
    const core::Json& p = j["predicted"];
    RETURN_IF_ERROR(core::CheckKnownKeys(p, ppath, {"solo_s", "p50_s", "p99_s", "attainment"}));
    ASSIGN_OR_RETURN(e.solo_s, core::GetNonNegativeDouble(p, ppath, "solo_s"));
    ASSIGN_OR_RETURN(e.p50_s, core::GetNonNegativeDouble(p, ppath, "p50_s"));
    ASSIGN_OR_RETURN(e.p99_s, core::GetNonNegativeDouble(p, ppath, "p99_s"));
    ASSIGN_OR_RETURN(e.attainment, core::GetDoubleInRange(p, ppath, "attainment", 0, 1));
  }
  if (j.contains("slo_s")) {
    ASSIGN_OR_RETURN(e.slo_s, core::GetNonNegativeDouble(j, path, "slo_s"));
  }
  return e;
}

// True when template `big` covers `r` in every dimension (same model).
bool Covers(const DiffusionRequest& big, const DiffusionRequest& r) {
  return big.model == r.model && big.width >= r.width && big.height >= r.height &&
         big.frames >= r.frames && big.steps >= r.steps && (big.cfg || !r.cfg);
}

}  // namespace

int64_t ServingPlan::WeightBytes() const {
  int64_t sum = 0;
  for (const auto& [name, bytes] : model_weight_bytes) sum += bytes;
  return sum;
}

int ServingPlan::SlotsPerDevice() const {
  int c = 0;
  for (const ServingPlanEntry& e : entries) c += e.concurrency;
  return std::max(c, 1);
}

core::Json ToJson(const ServingPlan& p) {
  core::Json models = core::Json::object();
  for (const auto& [name, bytes] : p.model_weight_bytes) models[name] = {{"weight_bytes", bytes}};
  core::Json entries = core::Json::array();
  for (const ServingPlanEntry& e : p.entries) entries.push_back(EntryToJson(e));
  return {{"format", kServingPlanFormat},
          {"label", p.label},
          {"device", p.device},
          {"budget_bytes", p.budget_bytes},
          {"devices", p.devices},
          {"rate_rps", p.rate_rps},
          {"slo_scale", p.slo_scale},
          {"models", models},
          {"entries", entries},
          {"fallback", {{"allocator", "caching"}, {"mitigations", "all"}, {"concurrency", 1}}},
          {"planner", p.planner}};
}

bool IsServingPlanJson(const core::Json& j) {
  return j.is_object() && j.contains("format") && j["format"].is_string() &&
         j["format"].get<std::string>().rfind("tessera.xema.plan_table/", 0) == 0;
}

core::StatusOr<ServingPlan> ServingPlanFromJson(const core::Json& j, const std::string& source) {
  RETURN_IF_ERROR(
      core::CheckKnownKeys(j, source,
                           {"format", "label", "device", "budget_bytes", "devices", "rate_rps",
                            "slo_scale", "models", "entries", "fallback", "planner"}));
  ASSIGN_OR_RETURN(const std::string format, core::GetString(j, source, "format"));
  if (format != kServingPlanFormat) {
    return core::InvalidArgument(fmt::format("{}.format: got '{}', this tessera reads {}", source,
                                             format, kServingPlanFormat));
  }
  ServingPlan p;
  ASSIGN_OR_RETURN(p.label, core::GetString(j, source, "label"));
  if (p.label != "measured" && p.label != "modeled") {
    return core::InvalidArgument(
        fmt::format("{}.label: got '{}', must be measured or modeled", source, p.label));
  }
  ASSIGN_OR_RETURN(p.device, core::GetString(j, source, "device"));
  if (p.device != kLocalDeviceKind) {
    RETURN_IF_ERROR(FindModeledDevice(p.device).status().WithPrefix(source));
    if (p.label != "modeled") {
      return core::InvalidArgument(fmt::format(
          "{}.label: got '{}', a table for the modeled device {} must be labelled modeled", source,
          p.label, p.device));
    }
  }
  ASSIGN_OR_RETURN(p.budget_bytes, core::GetPositiveInt(j, source, "budget_bytes"));
  ASSIGN_OR_RETURN(const int64_t devices, core::GetIntInRange(j, source, "devices", 1, 1 << 16));
  p.devices = static_cast<int>(devices);
  ASSIGN_OR_RETURN(p.rate_rps, core::GetPositiveDouble(j, source, "rate_rps"));
  ASSIGN_OR_RETURN(p.slo_scale, core::GetPositiveDouble(j, source, "slo_scale"));
  const std::string mpath = core::JoinPath(source, "models");
  ASSIGN_OR_RETURN(const core::Json* models, core::Member(j, source, "models"));
  if (!models->is_object() || models->empty()) {
    return core::InvalidArgument(
        fmt::format("{}: got {}, must be an object of models with their weight_bytes", mpath,
                    core::ShowJson(*models)));
  }
  for (const auto& [name, m] : models->items()) {
    const std::string path = core::JoinPath(mpath, name);
    RETURN_IF_ERROR(core::CheckKnownKeys(m, path, {"weight_bytes"}));
    ASSIGN_OR_RETURN(p.model_weight_bytes[name], core::GetPositiveInt(m, path, "weight_bytes"));
  }
  const std::string epath = core::JoinPath(source, "entries");
  ASSIGN_OR_RETURN(const core::Json* entries, core::Member(j, source, "entries"));
  if (!entries->is_array()) {
    return core::InvalidArgument(
        fmt::format("{}: got {}, must be an array", epath, core::ShowJson(*entries)));
  }
  std::set<std::string> keys;
  for (size_t i = 0; i < entries->size(); ++i) {
    const std::string path = fmt::format("{}[{}]", epath, i);
    ASSIGN_OR_RETURN(ServingPlanEntry e,
                     EntryFromJson((*entries)[i], path, p.devices, p.device != kLocalDeviceKind));
    if (!keys.insert(e.key).second) {
      return core::InvalidArgument(
          fmt::format("{}: a second entry for template {}, must be one per template", path, e.key));
    }
    if (!p.model_weight_bytes.contains(e.request.model)) {
      return core::InvalidArgument(fmt::format(
          "{}.template.model: got '{}', not in {} (every served model's weights are resident)",
          path, e.request.model, mpath));
    }
    const int64_t room = p.budget_bytes - p.WeightBytes();
    if (e.arena_bytes > room / e.concurrency) {
      return core::InvalidArgument(fmt::format(
          "{}.concurrency: got {} requests of {} bytes each, but the budget of {} bytes leaves {} "
          "beside the weights",
          path, e.concurrency, e.arena_bytes, p.budget_bytes, room));
    }
    p.entries.push_back(std::move(e));
  }
  if (j.contains("fallback")) {
    const std::string fpath = core::JoinPath(source, "fallback");
    const core::Json& f = j["fallback"];
    RETURN_IF_ERROR(core::CheckKnownKeys(f, fpath, {"allocator", "mitigations", "concurrency"}));
    ASSIGN_OR_RETURN(const std::string alloc, core::GetString(f, fpath, "allocator"));
    ASSIGN_OR_RETURN(const std::string mit, core::GetString(f, fpath, "mitigations"));
    ASSIGN_OR_RETURN(const int64_t c, core::GetIntInRange(f, fpath, "concurrency", 1, 1));
    (void)c;
    if (alloc != "caching" || mit != "all") {
      return core::InvalidArgument(fmt::format(
          "{}: got allocator '{}' and mitigations '{}', the fallback is the caching allocator "
          "with all mitigations (caching, all)",
          fpath, alloc, mit));
    }
  }
  if (j.contains("planner")) p.planner = j["planner"];
  return p;
}

core::StatusOr<ServingPlan> ReadServingPlan(const std::string& path) {
  ASSIGN_OR_RETURN(const core::Json j, core::ReadJsonFile(path));
  return ServingPlanFromJson(j, path);
}

core::Status CheckPlanDevice(const ServingPlan& p, const std::string& source) {
  if (p.device != kLocalDeviceKind) {
    return core::InvalidArgument(fmt::format(
        "{}.device: got '{}', this server's devices are '{}' (a plan for another device; plan "
        "again here)",
        source, p.device, kLocalDeviceKind));
  }
  return core::Status::Ok();
}

core::Status CheckPlanFitsServer(const ServingPlan& p, const std::string& source,
                                 int64_t budget_bytes, int devices,
                                 const std::map<std::string, int64_t>& weights) {
  RETURN_IF_ERROR(CheckPlanDevice(p, source));
  if (p.budget_bytes > budget_bytes) {
    return core::InvalidArgument(
        fmt::format("{}.budget_bytes: got {}, more than the server's budget of {} bytes per device",
                    source, p.budget_bytes, budget_bytes));
  }
  if (p.devices != devices) {
    return core::InvalidArgument(
        fmt::format("{}.devices: got {}, the server has {} devices", source, p.devices, devices));
  }
  for (const auto& [name, bytes] : p.model_weight_bytes) {
    auto it = weights.find(name);
    if (it == weights.end()) {
      return core::InvalidArgument(
          fmt::format("{}.models: got '{}', not a model this server has", source, name));
    }
    if (it->second != bytes) {
      return core::InvalidArgument(fmt::format(
          "{}.models.{}.weight_bytes: got {}, this server's {} has {} (a plan for another model)",
          source, name, bytes, name, it->second));
    }
  }
  return core::Status::Ok();
}

Route RouteRequest(const ServingPlan& plan, const DiffusionRequest& r) {
  const std::string key = TemplateKeyString(r);
  Route best;
  int64_t best_bytes = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    const ServingPlanEntry& e = plan.entries[i];
    if (e.key == key) return Route{RouteKind::kExact, static_cast<int>(i)};
    if (Covers(e.request, r) && e.arena_bytes < best_bytes) {
      best = Route{RouteKind::kCovered, static_cast<int>(i)};
      best_bytes = e.arena_bytes;
    }
  }
  return best;
}

std::string RouteKindName(RouteKind kind) {
  switch (kind) {
    case RouteKind::kExact:
      return "exact";
    case RouteKind::kCovered:
      return "covered";
    case RouteKind::kFallback:
      break;
  }
  return "fallback";
}

DiffusionRequest FallbackRequest(const TinyModelSpec& spec, const DiffusionRequest& r) {
  return AlwaysOnMitigations(MemoryPolicy::kTiling, spec, r);
}

DiffusionRequest BatchTemplate(const DiffusionRequest& request, int k) {
  DiffusionRequest r = request;
  r.batch_mates.clear();
  for (int j = 1; j < k; ++j) {
    r.batch_mates.push_back(BatchMate{fmt::format("batch mate {}", j),
                                      request.seed + static_cast<uint64_t>(j), request.guidance});
  }
  return r;
}

}  // namespace tessera::xema
