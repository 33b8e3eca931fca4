// The whole command tree: one line per system. A build configured with a subset of the systems
// (TESSERA_CLI_SYSTEMS, as `make demo` does for speed) still knows the others' names and says
// how to get them.
#include <fmt/format.h>

#include "cli/command.h"
#include "cli/options.h"

namespace tessera::cli {
namespace {

[[maybe_unused]] void AddMissingSystem(CLI::App& root, Action* action, const std::string& name) {
  CLI::App* sub = root.add_subcommand(name,
                                      "(not in this build: configure with "
                                      "TESSERA_CLI_SYSTEMS including it, or `make build`)");
  sub->allow_extras();
  sub->callback([action, name] {
    *action = [name] {
      return core::InvalidArgument(fmt::format(
          "{}: not in this build, which has only the commands `make demo` needs "
          "(TESSERA_CLI_SYSTEMS={}); `make build` builds every command into build/release",
          name, TESSERA_CLI_SYSTEMS_STRING));
    };
  });
}

}  // namespace

void AddAllCommands(CLI::App& root, Action* action) {
#ifdef TESSERA_CLI_ZELLIGE
  AddZelligeCommands(root, action);
#else
  AddMissingSystem(root, action, "zellige");
#endif
#ifdef TESSERA_CLI_COMPASS
  AddCompassCommands(root, action);
#else
  AddMissingSystem(root, action, "compass");
#endif
#ifdef TESSERA_CLI_XEMA
  AddXemaCommands(root, action);
#else
  AddMissingSystem(root, action, "xema");
#endif
#ifdef TESSERA_CLI_KERNELFLUME
  AddKernelFlumeCommands(root, action);
#else
  AddMissingSystem(root, action, "kernelflume");
#endif
#ifdef TESSERA_CLI_ELASWAVE
  AddElasWaveCommands(root, action);
#else
  AddMissingSystem(root, action, "elaswave");
#endif
#ifdef TESSERA_CLI_TAROT
  AddTarotCommands(root, action);
#else
  AddMissingSystem(root, action, "tarot");
#endif
  RefuseEmptyValues(&root);  // after every option exists (cli/options.h)
}

}  // namespace tessera::cli
