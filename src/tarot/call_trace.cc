#include "tarot/call_trace.h"

#include <map>
#include <utility>

namespace tessera::tarot {

void CallTrace::Add(std::string component, std::string method, std::string input,
                    std::string output, double ms) {
  entries_.push_back(
      Entry{std::move(component), std::move(method), std::move(input), std::move(output), ms});
}

int CallTrace::Calls(const std::string& component) const {
  int n = 0;
  for (const Entry& e : entries_) n += e.component == component ? 1 : 0;
  return n;
}

core::Json CallTrace::ToJson(bool deterministic) const {
  // {"calls": {component: count, ...} (sorted by name), "entries": [{component, method, input,
  // output[, ms]}, ...] in call order}. With deterministic = true no timing appears, so two runs
  // of one query give byte-equal JSON.
  std::map<std::string, int> counts;
  core::Json entries = core::Json::array();
  for (const Entry& e : entries_) {
    ++counts[e.component];
    core::Json j = {
        {"component", e.component}, {"method", e.method}, {"input", e.input}, {"output", e.output}};
    if (!deterministic) j["ms"] = e.ms;
    entries.push_back(std::move(j));
  }
  core::Json calls = core::Json::object();
  for (const auto& [component, n] : counts) calls[component] = n;
  return core::Json{{"calls", std::move(calls)}, {"entries", std::move(entries)}};
}

}  // namespace tessera::tarot
