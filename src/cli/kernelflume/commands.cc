// `tessera kernelflume ...`: the group; each subcommand lives in its own file of this folder
// and is added here with one line.
#include "cli/command.h"

namespace tessera::cli {

void AddKernelFlumeCommands(CLI::App& root, Action* action) {
  CLI::App* k = root.add_subcommand(
      "kernelflume", "KernelFlume: LLM decoding with core attention on weightless attention nodes");
  k->require_subcommand(1);
  AddKernelFlumeGenerate(k, action);
  AddKernelFlumeAttnNode(k, action);
  AddKernelFlumeLoadModel(k, action);
  CLI::App* bench = k->add_subcommand("bench", "KernelFlume's benchmarks (measured here)");
  bench->require_subcommand(1);
  AddKernelFlumeBenchElastic(bench, action);
}

}  // namespace tessera::cli
