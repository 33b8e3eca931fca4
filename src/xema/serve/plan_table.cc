#include "xema/serve/plan_table.h"

#include <fmt/format.h>

#include <set>

#include "xema/pipeline/template_json.h"

namespace tessera::xema {
namespace {

core::StatusOr<PlannedTemplate> PlanFromJson(const core::Json& j, const std::string& path,
                                             int64_t budget_bytes) {
  if (!j.is_object()) {
    return core::InvalidArgument(fmt::format(
        "{}: got {}, must be a plan object (a mitigation plan as JSON)", path, core::ShowJson(j)));
  }
  DiffusionRequest r;
  const std::string tpath = core::JoinPath(path, "template");
  ASSIGN_OR_RETURN(const core::Json* t, core::Member(j, path, "template"));
  RETURN_IF_ERROR(TemplateFromJson(*t, tpath, &r));
  ASSIGN_OR_RETURN(const core::Json* m, core::Member(j, path, "request"));
  RETURN_IF_ERROR(MitigationsFromJson(*m, core::JoinPath(path, "request"), &r));
  auto spec = TinyModel(r.model);
  if (!spec.ok()) return spec.status().WithPrefix(tpath);
  RETURN_IF_ERROR(ValidateRequest(*spec, r).WithPrefix(path));
  ASSIGN_OR_RETURN(const int64_t limit, core::GetPositiveInt(j, path, "limit_bytes"));
  if (limit > budget_bytes) {
    return core::InvalidArgument(fmt::format(
        "{}.limit_bytes: got {}, the plan was made for more than the server's budget of {} "
        "bytes; plan it again with a budget of at most that",
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
