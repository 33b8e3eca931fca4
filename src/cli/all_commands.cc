// The whole command tree: one line per system.
#include "cli/command.h"
#include "cli/options.h"

namespace tessera::cli {

void AddAllCommands(CLI::App& root, Action* action) {
  AddZelligeCommands(root, action);
  AddCompassCommands(root, action);
  AddXemaCommands(root, action);
  AddKernelFlumeCommands(root, action);
  RefuseEmptyValues(&root);  // after every option exists (cli/options.h)
}

}  // namespace tessera::cli
