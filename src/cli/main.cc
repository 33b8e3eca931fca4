// tessera: plans, models and runs distributed deep-learning training and serving.
#include <cstdio>

#include "cli/command.h"
#ifdef TESSERA_HAVE_RUNTIME
#include "cli/mpi_launch.h"
#endif

int main(int argc, char** argv) {
#ifdef TESSERA_HAVE_RUNTIME
  tessera::cli::SetProgramArgs(argc, argv);  // profile/validate/compare relaunch under MPI
#endif
  CLI::App app{"tessera: plan, model and run distributed deep-learning training and serving"};
  app.require_subcommand(1);
  tessera::cli::Action action;
  tessera::cli::AddZelligeCommands(app, &action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 1;
  }
  if (!action) return 0;
  tessera::core::Status st = action();
  if (st.ok()) return 0;
  std::fprintf(stderr, "tessera: %s\n", st.message().c_str());
  return st.code() == tessera::core::StatusCode::kInternal ? 2 : 1;
}
