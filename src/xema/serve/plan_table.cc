#include "xema/serve/plan_table.h"

#include <fmt/format.h>

#include <set>

namespace tessera::xema {
namespace {

core::StatusOr<OffloadSet> OffloadFromJson(const core::Json& list, const std::string& path) {
  if (!list.is_array()) {
    return core::InvalidArgument(
        fmt::format("{}: got {}, must be an array of text, latent, image, weights", path,
                    core::ShowJson(list)));
  }
  OffloadSet set;
  for (const core::Json& item : list) {
    const std::string name = item.is_string() ? item.get<std::string>() : "";
    bool* flag = OffloadFlag(set, name);
    if (flag == nullptr) {
      return core::InvalidArgument(fmt::format(
          "{}: got {}, items must be text, latent, image or weights", path, core::ShowJson(item)));
    }
    *flag = true;
  }
  return set;
}

core::StatusOr<PlannedTemplate> PlanFromJson(const core::Json& j, const std::string& path,
                                             int64_t budget_bytes) {
  if (!j.is_object()) {
    return core::InvalidArgument(fmt::format(
        "{}: got {}, must be a plan object (xema mitigate --json)", path, core::ShowJson(j)));
  }
  DiffusionRequest r;
  const std::string tpath = core::JoinPath(path, "template");
  ASSIGN_OR_RETURN(const core::Json* t, core::Member(j, path, "template"));
  ASSIGN_OR_RETURN(r.model, core::GetString(*t, tpath, "model"));
  ASSIGN_OR_RETURN(r.width, core::GetPositiveInt(*t, tpath, "width"));
  ASSIGN_OR_RETURN(r.height, core::GetPositiveInt(*t, tpath, "height"));
  ASSIGN_OR_RETURN(r.frames, core::GetPositiveInt(*t, tpath, "frames"));
  ASSIGN_OR_RETURN(r.steps, core::GetPositiveInt(*t, tpath, "steps"));
  ASSIGN_OR_RETURN(const core::Json* cfg, core::Member(*t, tpath, "cfg"));
  if (!cfg->is_boolean()) {
    return core::InvalidArgument(
        fmt::format("{}.cfg: got {}, must be true or false", tpath, core::ShowJson(*cfg)));
  }
  r.cfg = cfg->get<bool>();
  const std::string rpath = core::JoinPath(path, "request");
  ASSIGN_OR_RETURN(const core::Json* m, core::Member(j, path, "request"));
  ASSIGN_OR_RETURN(r.ffn_chunks, core::GetPositiveInt(*m, rpath, "ffn_chunks"));
  ASSIGN_OR_RETURN(r.attention_chunks, core::GetPositiveInt(*m, rpath, "attention_chunks"));
  ASSIGN_OR_RETURN(r.vae_frame_slices, core::GetPositiveInt(*m, rpath, "vae_frame_slices"));
  ASSIGN_OR_RETURN(r.vae_tiles, core::GetPositiveInt(*m, rpath, "vae_tiles"));
  ASSIGN_OR_RETURN(const core::Json* off, core::Member(*m, rpath, "offload"));
  ASSIGN_OR_RETURN(r.offload, OffloadFromJson(*off, core::JoinPath(rpath, "offload")));
  // The mitigations must be valid for the template (a chunked attention is not recorded in
  // the template: chunks > 1 need it).
  if (r.attention_chunks > 1) r.attention = AttentionMode::kChunked;
  auto spec = TinyModel(r.model);
  if (!spec.ok()) return spec.status().WithPrefix(tpath);
  RETURN_IF_ERROR(ValidateRequest(*spec, r).WithPrefix(path));
  ASSIGN_OR_RETURN(const int64_t limit, core::GetPositiveInt(j, path, "limit_bytes"));
  if (limit > budget_bytes) {
    return core::InvalidArgument(fmt::format(
        "{}.limit_bytes: got {}, the plan was made for more than the server's budget of {} "
        "bytes; plan it again with --budget at most that",
        path, limit, budget_bytes));
  }
  ASSIGN_OR_RETURN(const core::Json* fits, core::Member(j, path, "fits"));
  if (!fits->is_boolean()) {
    return core::InvalidArgument(
        fmt::format("{}.fits: got {}, must be true or false", path, core::ShowJson(*fits)));
  }
  PlannedTemplate p;
  p.key = TemplateKeyString(r);
  p.plan.settings = r;
  p.plan.labels = MitigationLabels(r);
  ASSIGN_OR_RETURN(p.plan.verified_peak_bytes,
                   core::GetNonNegativeInt(j, path, "verified_peak_bytes"));
  if (!fits->get<bool>()) {
    p.plan.refused = core::Infeasible(
        fmt::format("out of device memory: template {} cannot fit with every mitigation (plan "
                    "table {})",
                    p.key, path));
  }
  return p;
}

}  // namespace

core::StatusOr<std::vector<PlannedTemplate>> PlanTableFromJson(const core::Json& table,
                                                               const std::string& source,
                                                               int64_t budget_bytes) {
  std::vector<PlannedTemplate> out;
  std::set<std::string> keys;
  const bool many = table.is_array();
  const size_t n = many ? table.size() : 1;
  for (size_t i = 0; i < n; ++i) {
    const std::string path = many ? fmt::format("{}[{}]", source, i) : source;
    ASSIGN_OR_RETURN(PlannedTemplate p, PlanFromJson(many ? table[i] : table, path, budget_bytes));
    if (!keys.insert(p.key).second) {
      return core::InvalidArgument(
          fmt::format("{}: a second plan for template {}, must be one per template", path, p.key));
    }
    out.push_back(std::move(p));
  }
  return out;
}

core::StatusOr<std::vector<PlannedTemplate>> ReadPlanTable(const std::string& path,
                                                           int64_t budget_bytes) {
  ASSIGN_OR_RETURN(core::Json table, core::ReadJsonFile(path));
  return PlanTableFromJson(table, path, budget_bytes);
}

}  // namespace tessera::xema
