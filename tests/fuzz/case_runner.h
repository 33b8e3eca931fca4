// CaseRunner: runs one FuzzCase against the tessera binary in the harness's work folder and
// judges it (invariants.h): it snapshots the folder, runs the command (stdin and stdout on
// /dev/null, stderr captured, the case timeout), then compares the folder with the snapshot.
// Whatever the case changed is reported (kInputChanged) and put back, except a regular file
// it was asked to write (named by an output option, or the file a symlink so named points to)
// that it does not also read: replacing that is what an output does; likewise files inside a
// folder it was asked to fill (FuzzCase::output_dirs), and that folder. Whatever it left that it
// was not asked to write is reported (kStrayFile) and removed; the outputs it was asked to
// write are removed silently. So every case starts from the same pristine folder.
// Not thread-safe: one runner owns the work folder.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "fuzz_case.h"
#include "invariants.h"
#include "process_runner.h"
#include "sample_files.h"

namespace tessera::fuzz {

struct CaseOutcome {
  ProcessResult process;
  std::vector<Failure> failures;
  bool reached_mpiexec = false;  // an MPI-relaunching case got past its checks (harness note)
};

class CaseRunner {
 public:
  // timeout_s: the CPU seconds a case may use; it may take kWallFactor times that in wall time.
  CaseRunner(std::string bin, const SampleFiles& s, double timeout_s);
  static constexpr double kWallFactor = 15;

  CaseOutcome Run(const FuzzCase& c) const;

  // Folders under the work folder the checks leave alone (the harness's own files).
  static const std::set<std::string>& SkippedFolders();

 private:
  std::string bin_;
  const SampleFiles& s_;
  double timeout_s_;
};

}  // namespace tessera::fuzz
