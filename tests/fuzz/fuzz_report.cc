#include "fuzz_report.h"

#include <algorithm>
#include <set>

#include "shell_quote.h"

namespace tessera::fuzz {
namespace {

std::string ExitKey(const ProcessResult& r) {
  if (!r.started) return "not started";
  if (r.timed_out) return "timed out";
  if (r.signaled) return "signal " + std::to_string(r.signal);
  return "exit " + std::to_string(r.exit_code);
}

}  // namespace

void FuzzReport::Add(const FuzzCase& c, const CaseOutcome& o, const std::string& repro) {
  ++cases_;
  const bool failed = !o.failures.empty();
  if (failed) ++failing_cases_;
  auto& fam = by_family_[FamilyName(c.family)];
  auto& sub = by_subcommand_[c.subcommand];
  ++fam[0];
  ++sub[0];
  if (failed) {
    ++fam[1];
    ++sub[1];
  }
  ++by_exit_[ExitKey(o.process)];
  if (o.reached_mpiexec) {
    ++reached_mpiexec_;
    if (static_cast<int>(mpiexec_examples_.size()) < examples_) {
      mpiexec_examples_.push_back(repro);
    }
  }
  std::set<int> seen;
  for (const Failure& f : o.failures) {
    const int k = static_cast<int>(f.cls);
    if (!seen.insert(k).second) continue;  // one count per case and class
    ClassStats& cs = classes_[k];
    ++cs.cases;
    const bool new_signature = cs.by_signature[c.signature]++ == 0;
    Example e{c.signature, Printable(c.what), f.detail, repro};
    // Keep the first example of each signature, up to a bound, so Print can show variety.
    if (new_signature && cs.examples.size() < 200) cs.examples.push_back(e);
  }
}

void FuzzReport::Print(std::FILE* out) const {
  std::fprintf(out, "cases run: %d, failing: %d\n", cases_, failing_cases_);
  for (const auto& [name, n] : by_family_) {
    std::fprintf(out, "  %-6s fuzz: %5d cases, %5d failing\n", name.c_str(), n[0], n[1]);
  }
  std::string subs;
  for (const auto& [name, n] : by_subcommand_) {
    subs += " " + name + " " + std::to_string(n[0]) + "/" + std::to_string(n[1]);
  }
  std::fprintf(out, "  by subcommand (cases/failing):%s\n", subs.c_str());
  std::string exits;
  for (const auto& [key, n] : by_exit_) exits += " " + key + ": " + std::to_string(n) + ",";
  if (!exits.empty()) exits.pop_back();
  std::fprintf(out, "  endings:%s\n", exits.c_str());
  if (reached_mpiexec_ > 0) {
    std::fprintf(out,
                 "  note: %d MPI-relaunching cases were accepted up to the mpiexec launch (kept "
                 "from starting it); their options are checked only after the launch:\n",
                 reached_mpiexec_);
    for (const std::string& r : mpiexec_examples_) std::fprintf(out, "    %s\n", r.c_str());
  }
  for (int k = 0; k < kNumFailureClasses; ++k) {
    const ClassStats& cs = classes_[k];
    if (cs.cases == 0) continue;
    std::fprintf(out, "\nFAIL [%s]: %d cases, %zu signatures\n",
                 FailureClassName(static_cast<FailureClass>(k)), cs.cases, cs.by_signature.size());
    std::vector<std::pair<int, std::string>> sigs;
    for (const auto& [sig, n] : cs.by_signature) sigs.push_back({-n, sig});
    std::sort(sigs.begin(), sigs.end());
    std::string top;
    for (size_t i = 0; i < sigs.size() && i < 8; ++i) {
      top +=
          (top.empty() ? "" : ", ") + sigs[i].second + " (" + std::to_string(-sigs[i].first) + ")";
    }
    std::fprintf(out, "  most frequent: %s\n", top.c_str());
    // Examples: the most frequent signatures first.
    int shown = 0;
    for (const auto& [neg, sig] : sigs) {
      if (shown >= examples_) break;
      for (const Example& e : cs.examples) {
        if (e.signature != sig) continue;
        std::fprintf(out, "  - %s: %s\n    %s\n    %s\n", e.signature.c_str(), e.what.c_str(),
                     e.detail.c_str(), e.repro.c_str());
        ++shown;
        break;
      }
    }
  }
}

}  // namespace tessera::fuzz
