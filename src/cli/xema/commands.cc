// `tessera xema ...`: the group; each subcommand lives in its own file of this folder and is
// added here with one line.
#include "cli/command.h"

namespace tessera::cli {

void AddXemaCommands(CLI::App& root, Action* action) {
  CLI::App* x =
      root.add_subcommand("xema", "Xema: memory-planned diffusion serving under a memory budget");
  x->require_subcommand(1);
  AddXemaIntervals(x, action);
  AddXemaLayout(x, action);
  AddXemaAllocsim(x, action);
  AddXemaTrace(x, action);
  AddXemaCheck(x, action);
  AddXemaMitigate(x, action);
  AddXemaServe(x, action);
  AddXemaLoadgen(x, action);
  AddXemaBench(x, action);
  AddXemaAbuse(x, action);
  AddXemaPlan(x, action);
  AddXemaDeployed(x, action);
}

}  // namespace tessera::cli
