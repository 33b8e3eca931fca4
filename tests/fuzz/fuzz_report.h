// FuzzReport: what the CLI fuzz harness found, as it prints it at the end: cases run per
// family and subcommand, how they exited, and the failures grouped by class (invariants.h),
// each class with its count, its most frequent case signatures and up to `examples`
// reproducible command lines (distinct signatures first).
// Not thread-safe.
#pragma once

#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "case_runner.h"
#include "fuzz_case.h"

namespace tessera::fuzz {

class FuzzReport {
 public:
  explicit FuzzReport(int examples) : examples_(examples) {}

  // `repro`: a command line that reruns the case.
  void Add(const FuzzCase& c, const CaseOutcome& o, const std::string& repro);

  void Print(std::FILE* out) const;
  int cases() const { return cases_; }
  int failing_cases() const { return failing_cases_; }

 private:
  struct Example {
    std::string signature, what, detail, repro;
  };
  struct ClassStats {
    int cases = 0;
    std::map<std::string, int> by_signature;
    std::vector<Example> examples;  // kept: first per signature, then in order
  };
  int examples_;
  int cases_ = 0, failing_cases_ = 0, reached_mpiexec_ = 0;
  std::map<std::string, std::array<int, 2>> by_family_;      // cases, failing
  std::map<std::string, std::array<int, 2>> by_subcommand_;  // cases, failing
  std::map<std::string, int> by_exit_;                       // "exit 0", "exit 1", ...
  std::array<ClassStats, kNumFailureClasses> classes_;
  std::vector<std::string> mpiexec_examples_;
};

}  // namespace tessera::fuzz
