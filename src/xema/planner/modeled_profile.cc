#include "xema/planner/modeled_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "core/elapsed.h"
#include "xema/analytic_trace.h"
#include "xema/memory_trace.h"
#include "xema/serve/serve_device.h"
#include "xema/static_layout.h"

namespace tessera::xema {
namespace {

constexpr int64_t kFfnChunkOptions[] = {1, 4};
constexpr int64_t kVaeTileOptions[] = {1, 2, 4};

// The tflite arena of the trace's activations and workspaces (weights are resident apart).
core::StatusOr<int64_t> ActivationArenaBytes(const MemoryTrace& trace) {
  MemoryTrace acts = trace;
  acts.tensors.clear();
  for (const TraceTensor& x : trace.tensors) {
    if (x.kind == TensorKind::kWeight) continue;
    acts.tensors.push_back(x);
    acts.tensors.back().id = static_cast<int64_t>(acts.tensors.size()) - 1;
  }
  ASSIGN_OR_RETURN(const ExpandedTrace x, Expand(acts));
  ASSIGN_OR_RETURN(const Layout layout, PlanLayout(x, "tflite"));
  return layout.arena_bytes;
}

void Report(const ServingPlannerOptions& o, const std::string& stage, int done, int total) {
  if (o.progress) o.progress(stage, done, total);
}

}  // namespace

core::StatusOr<double> ModeledIsolatedSeconds(const DiffusionRequest& request,
                                              const ModeledDevice& device) {
  DiffusionRequest plain = request;
  plain.offload = OffloadSet{};
  ASSIGN_OR_RETURN(const MemoryTrace t, AnalyticTrace(ToAnalyticRequest(plain, 1, device)));
  return RequestSeconds(t);
}

core::StatusOr<ServingProfile> ModelServingProfile(const ServingPlannerOptions& o,
                                                   const ModeledDevice& device,
                                                   const std::set<std::string>& on_host) {
  const auto t0 = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(ValidatePlannerOptions(o));
  ServingProfile p;
  for (size_t i = 0; i < o.mix.size(); ++i) {
    const LoadTemplate& lt = o.mix[i];
    RETURN_IF_ERROR(ValidateModeledTemplate(lt.request, 1).WithPrefix(fmt::format("mix[{}]", i)));
    ASSIGN_OR_RETURN(const AnalyticModelInfo info, FindAnalyticModel(lt.request.model));
    TemplateProfile tp;
    tp.label = lt.label;
    tp.request = lt.request;
    DiffusionRequest plain = lt.request;
    plain.offload = OffloadSet{};
    ASSIGN_OR_RETURN(tp.isolated_s, ModeledIsolatedSeconds(lt.request, device));
    const bool host = on_host.contains(lt.request.model);
    for (int sp = 1; sp <= std::min(o.devices, o.max_sp_degree); sp *= 2) {
      if (o.devices % sp != 0 || info.heads % sp != 0) continue;
      for (const int64_t ffn : kFfnChunkOptions) {
        for (const int64_t tiles : kVaeTileOptions) {
          DiffusionRequest req = plain;
          req.ffn_chunks = ffn;
          req.vae_tiles = tiles;
          req.offload.idle_weights = host;
          // A variant per batch b <= max_batch: the seconds of each batch size up to b, the
          // largest of their arenas (a run takes whatever batch of up to b is waiting).
          std::vector<double> batch_s;
          int64_t arena = 0;
          for (int k = 1; k <= o.max_batch; ++k) {
            AnalyticRequest a = ToAnalyticRequest(req, sp, device);
            a.batch = k;
            ASSIGN_OR_RETURN(const MemoryTrace t, AnalyticTrace(a));
            ASSIGN_OR_RETURN(const int64_t bytes, ActivationArenaBytes(t));
            arena = std::max(arena, bytes);
            batch_s.push_back(RequestSeconds(t));
            if (k == 1) p.weight_bytes[lt.request.model] = WeightBytes(t);
            TemplateVariant v;
            v.request = req;
            v.sp_degree = sp;
            v.batch = k;
            v.arena_bytes = arena;
            v.solo_s = batch_s[0];
            v.batch_s = batch_s;
            v.labels = MitigationLabels(v.request);
            if (k > 1) v.labels.insert(v.labels.begin(), fmt::format("batch={}", k));
            if (sp > 1) v.labels.insert(v.labels.begin(), fmt::format("sp={}", sp));
            tp.variants.push_back(std::move(v));
          }
        }
      }
    }
    p.templates.push_back(std::move(tp));
    Report(o, "model", static_cast<int>(i) + 1, static_cast<int>(o.mix.size()));
  }
  int64_t weights = 0;
  for (const auto& [model, bytes] : p.weight_bytes) weights += bytes;
  p.region_bytes = o.budget_bytes - weights;
  if (p.region_bytes <= 0) {
    return core::Infeasible(
        fmt::format("budget: got {} bytes, the resident weights of the mix's models take {} bytes",
                    o.budget_bytes, weights));
  }
  p.overhead_s = 0;
  p.profile_s = p.templates_s = core::SecondsSince(t0);
  return p;
}

core::StatusOr<ServingPlannerResult> PlanModeledServing(const ServingPlannerOptions& o,
                                                        const ModeledDevice& device) {
  const auto t0 = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(ValidatePlannerOptions(o));
  std::vector<std::string> models;
  for (const LoadTemplate& t : o.mix) {
    if (std::find(models.begin(), models.end(), t.request.model) == models.end())
      models.push_back(t.request.model);
  }
  const size_t subsets = size_t{1} << models.size();
  std::optional<ServingPlannerResult> best;
  std::set<std::string> best_on_host;
  std::string why;  // of the last subset that could not be planned
  int tried = 0;
  for (size_t mask = 0; mask < subsets; ++mask) {
    std::set<std::string> on_host;
    for (size_t m = 0; m < models.size(); ++m)
      if (mask & (size_t{1} << m)) on_host.insert(models[m]);
    // A subset that leaves no room (Infeasible: its weights fill the budget, or no template
    // fits beside them) is skipped; any other error ends the search.
    auto profile = ModelServingProfile(o, device, on_host);
    if (!profile.ok()) {
      if (profile.status().code() != core::StatusCode::kInfeasible) return profile.status();
      why = profile.status().message();
      continue;
    }
    auto r = PlanServing(*profile, o);
    ++tried;
    if (!r.ok()) {
      if (r.status().code() != core::StatusCode::kInfeasible) return r.status();
      why = r.status().message();
      continue;
    }
    if (!best || BetterScore(r->score, best->score)) {
      best = std::move(*r);
      best_on_host = on_host;
    }
    Report(o, "encoders", static_cast<int>(mask) + 1, static_cast<int>(subsets));
  }
  if (!best) {
    return core::InvalidArgument(why.empty() ? "budget: no template of the mix fits" : why);
  }
  ServingPlannerResult result = std::move(*best);
  result.plan.label = "modeled";
  result.plan.device = device.name;
  result.plan.planner["encoders_on_host"] =
      std::vector<std::string>(best_on_host.begin(), best_on_host.end());
  result.plan.planner["encoder_subsets_planned"] = tried;
  result.plan.planner["device"] = {{"name", device.name},
                                   {"memory_bytes", device.memory_bytes},
                                   {"link_bytes_per_s", device.link_bytes_per_s},
                                   {"host_bytes_per_s", device.host_bytes_per_s},
                                   {"flops_per_s", device.flops_per_s}};
  result.search_s = core::SecondsSince(t0);
  result.plan.planner["planner_s"] = result.search_s;
  return result;
}

}  // namespace tessera::xema
