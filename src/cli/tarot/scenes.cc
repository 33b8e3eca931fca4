// `tessera tarot scenes`: writes n seeded scenes of a set (refscenes, or fmnist: Fashion-MNIST
// items) -- PNG, the scene program JSON with its expressions, and expressions.tsv -- into a
// folder and lists them. Parses, calls tarot::WriteSceneSet, renders.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/options.h"
#include "core/table.h"
#include "tarot/service.h"

namespace tessera::cli {
namespace {

struct ScenesArgs {
  std::string set = "refscenes";
  uint64_t seed = 1;
  int n = 4;
  std::string out;
};

core::Status RunScenes(const ScenesArgs& a) {
  tarot::SceneGeneratorOptions options;
  options.set = a.set;
  ASSIGN_OR_RETURN(
      tarot::SceneSetSummary s,
      NameFlags(tarot::WriteSceneSet(a.seed, a.n, a.out, options),
                {{"tarot.out", "--out"}, {"tarot.n", "--n"}, {"scenes.set", "--set"}}));
  core::Table table({"scene", "seed", "size", "objects", "expressions", "first expression"});
  for (size_t i = 0; i < s.scenes.size(); ++i) {
    const tarot::Scene& sc = s.scenes[i];
    table.AddRow({std::to_string(i), std::to_string(sc.seed),
                  std::to_string(sc.width) + "x" + std::to_string(sc.height),
                  std::to_string(sc.objects.size()), std::to_string(sc.expressions.size()),
                  sc.expressions.empty() ? "" : sc.expressions[0].text});
  }
  std::printf("%s", table.Render().c_str());
  std::string tiers;
  for (const auto& [tier, n] : s.per_tier) tiers += " " + tier + " " + std::to_string(n);
  std::printf("expressions per tier:%s\n", tiers.c_str());
  std::printf("wrote %zu files to %s (scene_NNNN.png, scene_NNNN.json, expressions.tsv)\n",
              s.files.size(), s.dir.c_str());
  return core::Status::Ok();
}

}  // namespace

void AddTarotScenes(CLI::App* tarot, Action* action) {
  auto a = std::make_shared<ScenesArgs>();
  CLI::App* c = tarot->add_subcommand(
      "scenes",
      "Write seeded scenes (refscenes or fmnist): PNG images, scene programs, expressions");
  c->add_option("--set", a->set,
                "refscenes (shapes and things) or fmnist (Fashion-MNIST items; needs the Debian "
                "package dataset-fashion-mnist)")
      ->capture_default_str();
  c->add_option("--seed", a->seed, "seed of the scene set")->transform(Seed());
  c->add_option("--n", a->n, "number of scenes (default 4)")->transform(Integer(1, 100000));
  CommandPaths paths;
  paths.OutputFolder(c, "--out", &a->out, "folder to write into (created if missing)")->required();
  c->callback([action, a] { *action = [a] { return RunScenes(*a); }; });
}

}  // namespace tessera::cli
