#include "core/trace.h"

namespace tessera::core {

void TraceWriter::NameTrack(int tid, const std::string& name) {
  events_.push_back(Json{
      {"ph", "M"}, {"pid", 0}, {"tid", tid}, {"name", "thread_name"}, {"args", {{"name", name}}}});
}

void TraceWriter::Span(int tid, const std::string& name, const std::string& category,
                       double start_s, double dur_s, Json args) {
  events_.push_back(Json{{"ph", "X"},
                         {"pid", 0},
                         {"tid", tid},
                         {"name", name},
                         {"cat", category},
                         {"ts", start_s * 1e6},
                         {"dur", dur_s * 1e6},
                         {"args", std::move(args)}});
}

Json TraceWriter::ToJson() const {
  return Json{{"traceEvents", events_}, {"displayTimeUnit", "ms"}};
}

Status TraceWriter::Write(const std::string& path) const { return WriteJsonFile(path, ToJson()); }

}  // namespace tessera::core
