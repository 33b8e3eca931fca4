// The whole command tree: one line per system.
#include "cli/command.h"

namespace tessera::cli {

void AddAllCommands(CLI::App& root, Action* action) {
  AddZelligeCommands(root, action);
  AddCompassCommands(root, action);
  AddXemaCommands(root, action);
  AddKernelFlumeCommands(root, action);
}

}  // namespace tessera::cli
