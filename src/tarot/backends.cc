#include "tarot/backends.h"

#include <limits>

#include "core/parse_number.h"
#include "tarot/classical_segmenter.h"

namespace tessera::tarot {
namespace {

template <typename Registry>
auto MakeFrom(const Registry& registry, const std::string& name, const BackendContext& context)
    -> decltype(registry.entries()[0].create(context)) {
  ASSIGN_OR_RETURN(const auto* entry, registry.Find(name));
  RETURN_IF_ERROR(registry.ValidateOptions(*entry, context.options));
  if (entry->reads_scene && context.scene == nullptr) {
    return core::FailedPrecondition(registry.kind() + " '" + name +
                                    "' reads the scene's ground truth: give it a scene");
  }
  return entry->create(context);
}

}  // namespace

const SegmenterRegistry& Segmenters() {
  static const SegmenterRegistry r = [] {
    SegmenterRegistry reg("tarot.segmenter");
    reg.Add(SyntheticSegmenterEntry());
    reg.Add(ClassicalSegmenterEntry());
    return reg;
  }();
  return r;
}

const ReasonerRegistry& Reasoners() {
  static const ReasonerRegistry r = [] {
    ReasonerRegistry reg("tarot.reasoner");
    reg.Add(OracleReasonerEntry());
    reg.Add(NoisyReasonerEntry());
    reg.Add(RuleReasonerEntry());
    return reg;
  }();
  return r;
}

const FeaturesRegistry& FeatureExtractors() {
  static const FeaturesRegistry r = [] {
    FeaturesRegistry reg("tarot.features");
    reg.Add(HandcraftedFeaturesEntry());
    return reg;
  }();
  return r;
}

core::StatusOr<std::unique_ptr<Segmenter>> MakeSegmenter(const std::string& name,
                                                         const BackendContext& context) {
  return MakeFrom(Segmenters(), name, context);
}

core::StatusOr<std::unique_ptr<Reasoner>> MakeReasoner(const std::string& name,
                                                       const BackendContext& context) {
  return MakeFrom(Reasoners(), name, context);
}

core::StatusOr<std::unique_ptr<FeatureExtractor>> MakeFeatureExtractor(
    const std::string& name, const BackendContext& context) {
  return MakeFrom(FeatureExtractors(), name, context);
}

core::StatusOr<double> OptionNumber(const core::RegistryOptions& options, const std::string& who,
                                    const std::string& key, double fallback, double lo, double hi) {
  auto it = options.find(key);
  if (it == options.end()) return fallback;
  auto v = core::ParseNumber(it->second, lo, hi);
  if (!v.ok()) return v.status().WithPrefix(who + ": " + key);
  return *v;
}

core::StatusOr<uint64_t> OptionSeed(const core::RegistryOptions& options, const std::string& who,
                                    const std::string& key) {
  auto it = options.find(key);
  if (it == options.end()) return uint64_t{0};
  auto v = core::ParseInteger(it->second, 0, std::numeric_limits<int64_t>::max());
  if (!v.ok()) return v.status().WithPrefix(who + ": " + key);
  return static_cast<uint64_t>(*v);
}

}  // namespace tessera::tarot
