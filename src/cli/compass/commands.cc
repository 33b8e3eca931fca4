// `tessera compass ...`: the group; each subcommand lives in its own file of this folder and
// is added here with one line.
#include "cli/command.h"

namespace tessera::cli {

void AddCompassCommands(CLI::App& root, Action* action) {
  CLI::App* c =
      root.add_subcommand("compass", "Compass: overlap tensor-parallel communication with GEMMs");
  c->require_subcommand(1);
  AddCompassTopo(c, action);
  AddCompassPlan(c, action);
  AddCompassGrid(c, action);
#ifdef TESSERA_HAVE_RUNTIME
  AddCompassLinks(c, action);
  AddCompassBench(c, action);
  AddCompassProfile(c, action);
  AddCompassRun(c, action);
#endif
}

}  // namespace tessera::cli
