// TraceWriter: collects complete ("X") events and writes a Chrome/Perfetto trace JSON
// (load it in ui.perfetto.dev or chrome://tracing). One process, one track (tid) per
// rank. Times are in seconds at the API and microseconds in the file. Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"

namespace tessera::core {

class TraceWriter {
 public:
  // Names track `tid` (e.g. "rank 3").
  void NameTrack(int tid, const std::string& name);
  // A span on track `tid` from start_s for dur_s; `args` is shown in the UI.
  void Span(int tid, const std::string& name, const std::string& category, double start_s,
            double dur_s, Json args = Json::object());
  size_t size() const { return events_.size(); }
  Json ToJson() const;
  Status Write(const std::string& path) const;

 private:
  std::vector<Json> events_;
};

}  // namespace tessera::core
