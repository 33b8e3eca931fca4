#include "xema/timeline.h"

#include <fmt/format.h>

#include <cstdint>
#include <vector>

namespace tessera::xema {
namespace {

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string TimelineCsv(const MemoryTrace& trace, const ExpandedTrace& x) {
  const std::vector<int64_t> live = LiveBytes(x, true);
  const std::vector<int64_t> acts = LiveBytes(x, false);
  const int64_t weights = WeightBytes(x);
  std::string out =
      "op,name,section,step,phase,live_bytes,weight_bytes,activation_bytes,time_s,flops\n";
  for (size_t i = 0; i < x.ops.size(); ++i) {
    const FlatOp& f = x.ops[i];
    const TraceOp& op = trace.op(f.template_op);
    out += fmt::format("{},{},{},{},{},{},{},{},{:.9g},{:.9g}\n", i, CsvField(FlatOpName(trace, f)),
                       SectionName(trace.SectionOf(f.template_op)), f.step, PhaseName(op.phase),
                       live[i], weights, acts[i], op.time_s, op.flops);
  }
  return out;
}

}  // namespace tessera::xema
