// A plan table for `tessera xema serve --plan FILE`: the mitigations planned offline per
// request template (`tessera xema mitigate --json`, one plan per file or an array of them),
// loaded into the server's TemplateCache at start so that no template is planned while
// requests wait (policies caching and xema; the others ignore mitigation plans).
//
// Each plan is ToJson(MitigationPlan) (mitigation_planner.h); read are "template" {model,
// width, height, frames, steps, cfg}, "limit_bytes", "fits", "verified_peak_bytes" and
// "request" {ffn_chunks, attention_chunks, vae_frame_slices, vae_tiles, offload [text,
// latent, image, weights]}; other members are ignored (they are the plan's report).
// A plan made for a larger limit than the server's budget is refused (its mitigations may
// not fit); a plan that did not fit makes its template refused with 507, as the planner's
// own would. Two plans for one template: the second is refused, naming it.
//
// Errors: InvalidArgument naming the file, the plan's index and the field; NotFound for a
// missing file. Thread-safety: pure functions.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "xema/serve/serve_device.h"

namespace tessera::xema {

struct PlannedTemplate {
  std::string key;  // TemplateKeyString
  MitigatedTemplate plan;
};

// `source` names the table in messages; budget_bytes is the server's per-device budget.
core::StatusOr<std::vector<PlannedTemplate>> PlanTableFromJson(const core::Json& table,
                                                               const std::string& source,
                                                               int64_t budget_bytes);
core::StatusOr<std::vector<PlannedTemplate>> ReadPlanTable(const std::string& path,
                                                           int64_t budget_bytes);

}  // namespace tessera::xema
