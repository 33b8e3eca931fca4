// The tarot backend registries (core/registry.h): segmenters ("tarot.segmenter"), reasoners
// ("tarot.reasoner") and feature extractors ("tarot.features"), each entry constructed by name
// from a BackendContext: its options (key=value strings, each key declared by the entry and
// range-checked by it) and, for the backends that read ground truth, the scene.
//
//   segmenter  synthetic    reads the scene; SAM3-like text/box/point prompts with seeded error
//                           knobs (synthetic_segmenter.h)
//   reasoner   oracle       reads the scene program; always right (scene_reasoner.h)
//              noisy        the oracle with seeded per-skill error rates (scene_reasoner.h)
//              rule         a grammar parser plus pixel judges; no ground truth (rule_reasoner.h)
//   features   handcrafted  per 8x8 patch: Lab mean/std, gradient orientation and LBP histograms
//                           (handcrafted_features.h)
//
// Make* checks the name (NotFound listing the names), the option keys (InvalidArgument naming
// the key and the declared ones), the values (InvalidArgument "segmenter 'synthetic':
// synthetic.over_seg: got '2', must be ..."), and that a scene-reading backend got a scene
// (FailedPrecondition). An entry's plain `make` builds it with default options and no scene (a
// scene-reading one then refuses SetImage).
// Adding a backend: its file (class, options parser, entry function) and one line in
// backends.cc. Registries are built once; thread-safe to read.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/registry.h"
#include "core/status.h"
#include "tarot/features.h"
#include "tarot/reasoner.h"
#include "tarot/scene.h"
#include "tarot/segmenter.h"

namespace tessera::tarot {

struct BackendContext {
  core::RegistryOptions options;
  std::shared_ptr<const Scene> scene;  // read by synthetic, oracle and noisy; may be null
  // The benchmark set the images come from (refscenes or fmnist): the vocabulary the
  // pixels-only backends (classical, rule) read pixels with -- silhouettes or the fashion-item
  // classifier. Not ground truth: it names the label space, as a prompt's nouns do.
  std::string set = kSetRefscenes;
};

template <typename Interface>
struct BackendMaker {
  bool reads_scene = false;
  std::function<core::StatusOr<std::unique_ptr<Interface>>(const BackendContext&)> create;
};

using SegmenterRegistry = core::Registry<Segmenter, BackendMaker<Segmenter>>;
using ReasonerRegistry = core::Registry<Reasoner, BackendMaker<Reasoner>>;
using FeaturesRegistry = core::Registry<FeatureExtractor, BackendMaker<FeatureExtractor>>;

const SegmenterRegistry& Segmenters();
const ReasonerRegistry& Reasoners();
const FeaturesRegistry& FeatureExtractors();

core::StatusOr<std::unique_ptr<Segmenter>> MakeSegmenter(const std::string& name,
                                                         const BackendContext& context);
core::StatusOr<std::unique_ptr<Reasoner>> MakeReasoner(const std::string& name,
                                                       const BackendContext& context);
core::StatusOr<std::unique_ptr<FeatureExtractor>> MakeFeatureExtractor(
    const std::string& name, const BackendContext& context);

// Entries, one per backend file.
SegmenterRegistry::Entry SyntheticSegmenterEntry();
ReasonerRegistry::Entry OracleReasonerEntry();
ReasonerRegistry::Entry NoisyReasonerEntry();
ReasonerRegistry::Entry RuleReasonerEntry();
FeaturesRegistry::Entry HandcraftedFeaturesEntry();

// Option helpers for the backends: the value of `key` parsed as a number in [lo, hi] (or
// `fallback` when absent); errors read "<kind> '<name>': <key>: got '...', must be ...".
core::StatusOr<double> OptionNumber(const core::RegistryOptions& options, const std::string& who,
                                    const std::string& key, double fallback, double lo, double hi);
core::StatusOr<uint64_t> OptionSeed(const core::RegistryOptions& options, const std::string& who,
                                    const std::string& key);

}  // namespace tessera::tarot
