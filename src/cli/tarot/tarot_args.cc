#include "cli/tarot/tarot_args.h"

#include "cli/command.h"
#include "cli/options.h"
#include "tarot/backends.h"

namespace tessera::cli {

void AddTarotBackendOptions(CLI::App* c, TarotBackendArgs* a) {
  c->add_option("--segmenter", a->segmenter,
                "segmenter backend: synthetic (reads --scene) or classical (pixels only)");
  c->add_option("--reasoner", a->reasoner,
                "reasoner backend: rule (pixels + grammar), oracle or noisy (read the scene)");
  c->add_option("--features", a->features, "feature backend for MSR: handcrafted");
  c->add_option("--segmenter-option", a->segmenter_options,
                "segmenter option KEY=VALUE (repeatable), e.g. synthetic.over_seg=0.3");
  c->add_option("--reasoner-option", a->reasoner_options,
                "reasoner option KEY=VALUE (repeatable), e.g. noisy.rate=0.2");
  c->add_option("--features-option", a->features_options, "feature option KEY=VALUE (repeatable)");
}

core::StatusOr<tarot::BackendChoice> ToBackendChoice(const TarotBackendArgs& a) {
  tarot::BackendChoice b;
  b.segmenter = a.segmenter;
  b.reasoner = a.reasoner;
  b.features = a.features;
  auto parse = [](const std::vector<std::string>& kvs,
                  const std::string& flag) -> core::StatusOr<core::RegistryOptions> {
    core::RegistryOptions o;
    for (const std::string& kv : kvs) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        return core::InvalidArgument(flag + ": got '" + kv +
                                     "', must be KEY=VALUE (e.g. synthetic.over_seg=0.3)");
      }
      o[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return o;
  };
  ASSIGN_OR_RETURN(b.segmenter_options, parse(a.segmenter_options, "--segmenter-option"));
  ASSIGN_OR_RETURN(b.reasoner_options, parse(a.reasoner_options, "--reasoner-option"));
  ASSIGN_OR_RETURN(b.features_options, parse(a.features_options, "--features-option"));
  return b;
}

core::Status TarotFlags(const core::Status& s) {
  return NameFlags(s, {{"tarot.image", "--image"},
                       {"tarot.query", "--query"},
                       {"tarot.box", "--box"},
                       {"tarot.scene", "--scene"},
                       {"tarot.out", "--out"},
                       {"tarot.system", "--system"},
                       {"tarot.segmenter", "--segmenter"},
                       {"tarot.reasoner", "--reasoner"},
                       {"tarot.features", "--features"},
                       {"tarot.bench.set", "--set"},
                       {"tarot.set", "--set"},
                       {"scenes.set", "--set"},
                       {"tarot.bench.n", "--n"},
                       {"tarot.bench.sweep_skill", "--sweep-skill"},
                       {"msr.rounds", "--msr-rounds"},
                       {"msr.area_fraction", "--msr-area-fraction"},
                       {"msr.area_of", "--msr-area-of"}});
}

}  // namespace tessera::cli
