// tessera: plans, models and runs distributed deep-learning training and serving.
//
// Exit codes: 0 OK; 1 a user error (bad option or input, infeasible request, failed check),
// reported as one line "tessera: ..." on stderr; 2 an internal error. Under MPI a user error
// is reached alike by every rank (inputs are checked before MPI starts or loaded on rank 0
// and broadcast; command.h), so only rank 0 prints it and exits 1, the job's exit code; the
// other ranks exit 0. Communication failures and internal errors may be rank-local and are
// printed by the rank that saw them.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>

#include "cli/command.h"
#ifdef TESSERA_HAVE_RUNTIME
#include "cli/mpi_launch.h"
#endif

namespace {

// The rank this process has in an MPI job from the launcher's environment (0 outside one).
int LauncherRank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if (const char* v = std::getenv(var); v != nullptr) return std::atoi(v);
  }
  return 0;
}

bool SameOnEveryRank(tessera::core::StatusCode code) {
  using tessera::core::StatusCode;
  return code == StatusCode::kInvalidArgument || code == StatusCode::kNotFound ||
         code == StatusCode::kInfeasible;
}

// One line: newlines inside a message (a CLI11 text, an exception's what()) become spaces,
// and a line longer than 2000 characters is cut.
void PrintError(const std::string& message) {
  std::string line = message;
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  // Messages cut the values they quote; this bounds whatever a library did not.
  constexpr size_t kMaxLine = 2000;
  if (line.size() > kMaxLine) line = line.substr(0, kMaxLine) + "...";
  std::fprintf(stderr, "tessera: %s\n", line.c_str());
}

int Run(int argc, char** argv) {
#ifdef TESSERA_HAVE_RUNTIME
  tessera::cli::SetProgramArgs(argc, argv);  // profile/validate/compare relaunch under MPI
#endif
  CLI::App app{"tessera: plan, model and run distributed deep-learning training and serving"};
  app.require_subcommand(1);
  tessera::cli::Action action;
  tessera::cli::AddAllCommands(app, &action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    if (LauncherRank() != 0) return 0;  // rank 0 reports it; see below
    PrintError(std::string(e.what()) + " (see --help)");
    return 1;
  }
  if (!action) return 0;
  const tessera::core::Status st = action();
  if (st.ok()) return 0;
  const auto code = st.code();
  // A user error every rank reached: rank 0 prints it and exits 1; the other ranks exit 0
  // silently, since mpirun ends the whole job at the first non-zero exit and could kill rank
  // 0 before it has printed.
  if (LauncherRank() != 0 && SameOnEveryRank(code)) return 0;
  PrintError(st.message());
  return code == tessera::core::StatusCode::kInternal ? 2 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Last resort: an exception that escaped a library (a bug) ends with one line and exit 2,
  // not an abort with a backtrace; running out of memory is reported as such.
  try {
    return Run(argc, argv);
  } catch (const std::bad_alloc&) {
    PrintError("out of memory; try a smaller workload or fewer ranks per machine");
    return 1;
  } catch (const std::exception& e) {
    PrintError(std::string("internal error: ") + e.what());
    return 2;
  }
}
