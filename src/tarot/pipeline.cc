#include "tarot/pipeline.h"

#include <fmt/format.h>

#include <chrono>
#include <utility>

#include "core/elapsed.h"
#include "tarot/baselines.h"
#include "tarot/msr_ablations.h"
#include "tarot/traced.h"

namespace tessera::tarot {

const char* SystemName(System s) {
  switch (s) {
    case System::kNaive:
      return "naive";
    case System::kNaiveCoupling:
      return "naive-coupling";
    case System::kTextOnly:
      return "text-only";
    case System::kBoxOnly:
      return "box-only";
    case System::kNoRephrase:
      return "no-rephrase";
    case System::kNoVote:
      return "no-vote";
    case System::kEri:
      return "eri";
    case System::kFull:
      return "full";
    case System::kMsrFlatFeatures:
      return "msr-flat-features";
    case System::kMsrYesJudge:
      return "msr-yes-judge";
  }
  return "?";
}

const std::vector<System>& AllSystems() {
  static const std::vector<System> kAll = {
      System::kNaive,           System::kNaiveCoupling, System::kTextOnly, System::kBoxOnly,
      System::kNoRephrase,      System::kNoVote,        System::kEri,      System::kFull,
      System::kMsrFlatFeatures, System::kMsrYesJudge};
  return kAll;
}

core::StatusOr<System> ParseSystem(const std::string& name) {
  std::string names;
  for (System s : AllSystems()) {
    if (name == SystemName(s)) return s;
    names += (names.empty() ? "" : ", ") + std::string(SystemName(s));
  }
  return core::InvalidArgument(
      fmt::format("tarot.system: got '{}', must be one of {} (e.g. full)", name, names));
}

EriOptions EriOptionsFor(System s, const EriOptions& base) {
  EriOptions o = base;
  if (s == System::kTextOnly) o.use_boxes = false;
  if (s == System::kBoxOnly) o.use_text = false;
  if (s == System::kNoRephrase) o.rephrase = false;
  if (s == System::kNoVote) o.vote = false;
  return o;
}

bool UsesEri(System s) { return s != System::kNaive && s != System::kNaiveCoupling; }
bool UsesMsr(System s) {
  return s == System::kFull || s == System::kMsrFlatFeatures || s == System::kMsrYesJudge;
}

TarotPipeline::TarotPipeline(Segmenter& segmenter, Reasoner& reasoner,
                             const FeatureExtractor* features, PipelineOptions options)
    : segmenter_(segmenter),
      reasoner_(reasoner),
      features_(features),
      options_(std::move(options)) {}

core::Status TarotPipeline::SetImage(const Image& image, CallTrace* trace) {
  width_ = height_ = 0;
  grid_.reset();
  if (image.empty()) {
    return core::InvalidArgument(
        fmt::format("tarot.image: got {}x{}, must be at least 1x1", image.width, image.height));
  }
  if (UsesMsr(options_.system) && features_ == nullptr) {
    return core::InvalidArgument(fmt::format(
        "tarot.features: system '{}' runs MSR and needs a feature extractor (e.g. handcrafted)",
        SystemName(options_.system)));
  }
  TracedSegmenter seg(segmenter_, 0, 0, trace);
  TracedReasoner rsn(reasoner_, trace);
  RETURN_IF_ERROR(seg.SetImage(image));
  RETURN_IF_ERROR(rsn.SetImage(image));
  if (UsesMsr(options_.system)) {
    const auto t0 = std::chrono::steady_clock::now();
    core::StatusOr<PatchGrid> grid = features_->Extract(image);
    if (trace != nullptr) {
      trace->Add("features", "Extract", fmt::format("{}x{}", image.width, image.height),
                 grid.ok() ? fmt::format("{}x{} patches, dim {}, stride {}", grid->grid_w,
                                         grid->grid_h, grid->dim, grid->stride)
                           : "error: " + grid.status().ToString(),
                 core::MillisecondsSince(t0));
    }
    if (!grid.ok()) return grid.status();
    grid_ = options_.system == System::kMsrFlatFeatures ? FlatGrid(*grid) : std::move(grid).value();
  }
  width_ = image.width;
  height_ = image.height;
  return core::Status::Ok();
}

core::StatusOr<QueryResult> TarotPipeline::Run(const std::string& query, CallTrace* trace) {
  if (width_ == 0) {
    return core::FailedPrecondition("tarot: Run before SetImage (set an image first)");
  }
  if (query.find_first_not_of(" \t\r\n") == std::string::npos) {
    return core::InvalidArgument(
        "tarot.query: got an empty query, need the expression to segment (e.g. 'the red cup')");
  }
  RETURN_IF_ERROR(ValidateEriOptions(EriOptionsFor(options_.system, options_.eri)));
  if (UsesMsr(options_.system)) RETURN_IF_ERROR(ValidateMsrOptions(options_.msr));

  // The query's own trace, so the counts are this query's whatever the caller passes.
  CallTrace local;
  TracedSegmenter seg(segmenter_, width_, height_, &local);
  TracedReasoner rsn(reasoner_, &local);
  QueryResult out;
  out.system = options_.system;
  const auto status = [&]() -> core::Status {
    switch (options_.system) {
      case System::kNaive: {
        ASSIGN_OR_RETURN(out.mask, NaiveText(query, width_, height_, seg));
        return core::Status::Ok();
      }
      case System::kNaiveCoupling: {
        ASSIGN_OR_RETURN(out.mask, NaiveCoupling(query, width_, height_, seg, rsn, &local));
        return core::Status::Ok();
      }
      default:
        break;
    }
    ASSIGN_OR_RETURN(out.eri, RunEri(query, width_, height_, seg, rsn,
                                     EriOptionsFor(options_.system, options_.eri), &local));
    out.mask = out.eri->mask;
    // Our choice: MSR refines one target with one point prompt (the interactive head returns
    // one mask), so a group or collection target (several instances) keeps ERI's mask; refining
    // it would shrink the group to the instance under the points.
    const Scope scope = out.eri->parsed.scope;
    if (UsesMsr(options_.system) && (scope == Scope::kGroup || scope == Scope::kCollection)) {
      local.Add("msr", "skip", ScopeName(scope), "kept the ERI mask (MSR refines one target)");
    } else if (options_.system == System::kMsrYesJudge) {
      YesJudgeReasoner yes(reasoner_);
      TracedReasoner yes_rsn(yes, &local);
      ASSIGN_OR_RETURN(out.msr, RunMsr(out.eri->mask, out.eri->chosen_box, out.eri->description,
                                       *grid_, seg, yes_rsn, options_.msr, &local));
      out.mask = out.msr->mask;
    } else if (UsesMsr(options_.system)) {
      ASSIGN_OR_RETURN(out.msr, RunMsr(out.eri->mask, out.eri->chosen_box, out.eri->description,
                                       *grid_, seg, rsn, options_.msr, &local));
      out.mask = out.msr->mask;
    }
    return core::Status::Ok();
  }();
  if (trace != nullptr) {
    for (const CallTrace::Entry& e : local.entries()) {
      trace->Add(e.component, e.method, e.input, e.output, e.ms);
    }
  }
  RETURN_IF_ERROR(status);
  out.calls =
      CallCounts{local.Calls("segmenter"), local.Calls("reasoner"), local.Calls("features")};
  return out;
}

core::StatusOr<QueryResult> RunQuery(const Image& image, const std::string& query,
                                     Segmenter& segmenter, Reasoner& reasoner,
                                     const FeatureExtractor* features,
                                     const PipelineOptions& options, CallTrace* trace) {
  TarotPipeline pipeline(segmenter, reasoner, features, options);
  RETURN_IF_ERROR(pipeline.SetImage(image, trace));
  return pipeline.Run(query, trace);
}

}  // namespace tessera::tarot
