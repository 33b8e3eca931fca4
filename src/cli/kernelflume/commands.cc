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
  AddKernelFlumeServe(k, action);
  AddKernelFlumeAbuse(k, action);
  AddKernelFlumeCost(k, action);
  AddKernelFlumeTrace(k, action);
  AddKernelFlumeSimulate(k, action);
  AddKernelFlumeReplay(k, action);
  // `tessera kernelflume bench <name>`: one line per benchmark.
  CLI::App* bench = k->add_subcommand("bench", "KernelFlume benchmarks, measured on this machine");
  bench->require_subcommand(1);
  AddKernelFlumeBenchPipeline(bench, action);
  AddKernelFlumeBenchElastic(bench, action);
  AddKernelFlumeBenchScale(bench, action);
}

}  // namespace tessera::cli
