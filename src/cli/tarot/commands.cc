// `tessera tarot ...`: the group; each subcommand lives in its own file of this folder and is
// added here with one line.
#include "cli/command.h"

namespace tessera::cli {

void AddTarotCommands(CLI::App& root, Action* action) {
  CLI::App* t = root.add_subcommand(
      "tarot", "Tarot-SAM3: training-free referring-expression segmentation (ERI + MSR)");
  t->require_subcommand(1);
  AddTarotScenes(t, action);
  AddTarotRun(t, action);
  AddTarotBench(t, action);
}

}  // namespace tessera::cli
