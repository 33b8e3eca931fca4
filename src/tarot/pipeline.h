// TarotPipeline: one query through a chosen system, from the image and the expression to a mask,
// with the candidates, votes, MSR decisions and the number of calls per backend.
// Systems (the spec's benchmark list):
//   naive           the query to SegmentText, best score (baselines.h)
//   naive-coupling  Reasoner::Ground(query) -> SegmentBox, best score (baselines.h)
//   text-only       ERI without boxes          } ERI ablations; MSR off, so each compares
//   box-only        ERI without text candidates } with "eri"
//   no-rephrase     ERI with one try per prompt }
//   no-vote         ERI taking best scores      }
//   eri             ERI alone (MSR off)
//   full            ERI then MSR over ERI's mask, its chosen box and its full description; a
//                   group or collection target keeps ERI's mask (our choice: MSR's point
//                   prompt yields one instance)
//   msr-flat-features  full with every patch feature equal (MSR without DINO's evidence)
//   msr-yes-judge      full with JudgeRegion always "part of it" (MSR without the MLLM judge)
//                      (tarot/msr_ablations.h)
// SetImage sets the image on the segmenter and the reasoner and, for `full`, extracts the patch
// features once; Run answers one query about it. RunQuery does both.
// Errors: an empty query, a system that needs features without a FeatureExtractor, and invalid
// options are InvalidArgument naming the field; Run before SetImage is FailedPrecondition;
// backend errors are returned as is.
// Ownership: borrows the backends (they must outlive the pipeline). Thread-safety: one query at
// a time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tarot/call_trace.h"
#include "tarot/eri.h"
#include "tarot/features.h"
#include "tarot/msr.h"
#include "tarot/reasoner.h"
#include "tarot/segmenter.h"
#include "tarot/types.h"

namespace tessera::tarot {

enum class System {
  kNaive,
  kNaiveCoupling,
  kTextOnly,
  kBoxOnly,
  kNoRephrase,
  kNoVote,
  kEri,
  kFull,
  kMsrFlatFeatures,
  kMsrYesJudge
};
// "naive", "naive-coupling", "text-only", "box-only", "no-rephrase", "no-vote", "eri", "full",
// "msr-flat-features", "msr-yes-judge".
const char* SystemName(System s);
// InvalidArgument listing the names for an unknown one.
core::StatusOr<System> ParseSystem(const std::string& name);
const std::vector<System>& AllSystems();
// The ERI options a system runs with: `base` with that system's ablation switch set.
EriOptions EriOptionsFor(System s, const EriOptions& base);
bool UsesEri(System s);
bool UsesMsr(System s);

struct PipelineOptions {
  System system = System::kFull;
  EriOptions eri;
  MsrOptions msr;
};

struct CallCounts {
  int segmenter = 0, reasoner = 0, features = 0;  // calls made by the query (not SetImage)
};

struct QueryResult {
  System system = System::kFull;
  Mask mask;
  std::optional<EriResult> eri;  // systems that run ERI
  std::optional<MsrResult> msr;  // `full`
  CallCounts calls;
};

class TarotPipeline {
 public:
  // `features` may be null for systems without MSR.
  TarotPipeline(Segmenter& segmenter, Reasoner& reasoner, const FeatureExtractor* features,
                PipelineOptions options);
  // Backend calls are recorded in `trace` (may be null).
  core::Status SetImage(const Image& image, CallTrace* trace);
  core::StatusOr<QueryResult> Run(const std::string& query, CallTrace* trace);

 private:
  Segmenter& segmenter_;
  Reasoner& reasoner_;
  const FeatureExtractor* features_;
  PipelineOptions options_;
  int width_ = 0, height_ = 0;
  std::optional<PatchGrid> grid_;
};

core::StatusOr<QueryResult> RunQuery(const Image& image, const std::string& query,
                                     Segmenter& segmenter, Reasoner& reasoner,
                                     const FeatureExtractor* features,
                                     const PipelineOptions& options, CallTrace* trace);

}  // namespace tessera::tarot
