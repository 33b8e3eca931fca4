// The template mix of a load generator: which requests it sends and how often.
//
//   [{"model": "tiny-t2i", "size": "64x64", "steps": 4, "weight": 3},
//    {"model": "tiny-t2v", "size": "32x32", "frames": 5, "steps": 2, "guidance": 1.0,
//     "weight": 1}]
//
// Given inline (text starting with '[') or as a JSON file holding that array. Per template:
// model (required, a preset), size ("WxH", default 64x64), frames (video only, default 5),
// steps (default 4), guidance (default 4.0), weight (> 0, default 1): the template is drawn
// with probability weight / sum of weights. Each template must be a valid request
// (ValidateRequest), so a typo fails before any load is sent; unknown keys are refused.
// Errors: InvalidArgument "mix[1].steps: got 0, must be in [1, 200]" style; at most
// kMaxMixTemplates templates. Thread-safety: reentrant; a MixSource is read-only once built.
#pragma once

#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "serve/request_source.h"
#include "xema/pipeline/tiny_pipeline.h"

namespace tessera::xema {

inline constexpr size_t kMaxMixTemplates = 64;

struct LoadTemplate {
  DiffusionRequest request;  // prompt and seed are set per request by the generator
  bool video = false;
  double weight = 1;
  std::string label;  // "tiny-t2i 64x64x1 steps 4 cfg on"
};

// Which models a mix may name: the tiny pipeline's presets (served here), or the analytic
// models of the paper-scale planner (modeled; frames required for a video model, cfg by
// default as the model ships unless guidance says otherwise, ValidateModeledTemplate).
enum class MixModels { kTiny, kAnalytic };

core::StatusOr<std::vector<LoadTemplate>> MixFromJson(const core::Json& j,
                                                      const std::string& source,
                                                      MixModels models = MixModels::kTiny);
// Inline JSON when `spec` starts with '[' (after spaces), else a file path.
core::StatusOr<std::vector<LoadTemplate>> ReadMix(const std::string& spec,
                                                  MixModels models = MixModels::kTiny);

// The body of one generation request of template `t` (response_format "none").
std::string RequestBody(const LoadTemplate& t, uint64_t seed);

// A mix as the serving core's load tools see it (serve/request_source.h): template t is
// RequestBody(mix[t], seed) POSTed to its generation route. Holds a reference: `mix` must
// outlive it.
class MixSource : public serve::RequestSource {
 public:
  explicit MixSource(const std::vector<LoadTemplate>& mix) : mix_(mix) {}
  size_t Count() const override { return mix_.size(); }
  std::string Label(size_t t) const override { return mix_[t].label; }
  double Weight(size_t t) const override { return mix_[t].weight; }
  serve::LoadRequest Request(size_t t, uint64_t seed) const override;

 private:
  const std::vector<LoadTemplate>& mix_;
};

}  // namespace tessera::xema
