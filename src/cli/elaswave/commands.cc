// `tessera elaswave ...`: the group; each subcommand lives in its own file of this folder and is
// added here with one line. `worker` and `coordinator` are the processes `run` starts,
// `comm-bench-peer` those of `comm-bench`.
#include "cli/command.h"

namespace tessera::cli {

void AddElasWaveCommands(CLI::App& root, Action* action) {
  CLI::App* e = root.add_subcommand(
      "elaswave", "ElasWave: elastic hybrid-parallel training that survives losing ranks");
  e->require_subcommand(1);
  AddElasWaveRun(e, action);
  AddElasWaveBench(e, action);
  AddElasWaveCommBench(e, action);
  AddElasWavePlan(e, action);
  AddElasWaveProcesses(e, action);
}

}  // namespace tessera::cli
