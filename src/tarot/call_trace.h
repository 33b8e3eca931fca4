// CallTrace: the record of every call Tarot-SAM3 makes to its segmenter, reasoner and feature
// backends, in order: which backend, which method, what went in and what came out, each as a
// short deterministic text (phrases, boxes to 0.1 px, mask areas and boxes, yes/no answers),
// plus the decisions of the algorithm itself (the box vote, MSR's branch). Two runs of the same
// query over the same backends give equal traces; golden tests compare them whole. Timing is
// kept apart (Entry::ms) and never part of ToJson(deterministic = true).
// Thread-safety: none; one trace per query.
#pragma once

#include <string>
#include <vector>

#include "core/json_util.h"

namespace tessera::tarot {

class CallTrace {
 public:
  struct Entry {
    std::string component;  // "segmenter", "reasoner", "features", "eri", "msr"
    std::string method;     // "Text", "Parse", "vote", ...
    std::string input;
    std::string output;
    double ms = 0;  // measured wall time of the call (0 for decisions)
  };
  void Add(std::string component, std::string method, std::string input, std::string output,
           double ms = 0);
  const std::vector<Entry>& entries() const { return entries_; }
  // Entries of `component`: calls for a backend ("segmenter", "reasoner", "features"); the
  // algorithm's decisions are recorded under "eri" and "msr", never under a backend.
  int Calls(const std::string& component) const;
  // {"calls": {component: count, ...} (by name), "entries": [{"component", "method", "input",
  // "output"[, "ms"]}, ...] (call order)}; "ms" only when !deterministic.
  core::Json ToJson(bool deterministic) const;

 private:
  std::vector<Entry> entries_;
};

}  // namespace tessera::tarot
