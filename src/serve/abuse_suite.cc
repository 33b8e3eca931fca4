#include "serve/abuse_suite.h"

#include <fmt/format.h>

namespace tessera::serve {

const char* AbuseGroupName(AbuseGroup group) {
  switch (group) {
    case AbuseGroup::kMalformedJson:
      return "malformed_json";
    case AbuseGroup::kWrongType:
      return "wrong_type";
    case AbuseGroup::kAbsurdValue:
      return "absurd_value";
    case AbuseGroup::kTooLarge:
      return "too_large";
    case AbuseGroup::kRoute:
      return "route";
    case AbuseGroup::kMethod:
      return "method";
    case AbuseGroup::kDisconnect:
      return "disconnect";
    case AbuseGroup::kValid:
      return "valid";
  }
  return "?";
}

core::StatusOr<std::vector<AbuseCase>> PlanAbuse(const AbuseSuite& suite, int64_t n, uint64_t seed,
                                                 const AbusePlanContext& context) {
  if (n < 1) return core::InvalidArgument(fmt::format("requests: got {}, must be >= 1", n));
  if (context.max_body_bytes < 1024) {
    return core::InvalidArgument(
        fmt::format("max body: got {} bytes, must be >= 1024", context.max_body_bytes));
  }
  const std::vector<AbuseKind>& kinds = suite.Kinds();
  std::vector<int> enabled;
  int total_weight = 0;
  for (int k = 0; k < static_cast<int>(kinds.size()); ++k) {
    if (!suite.KindEnabled(k, context)) continue;
    enabled.push_back(k);
    total_weight += kinds[static_cast<size_t>(k)].weight;
  }
  if (enabled.empty()) return core::InvalidArgument("abuse suite: no kind is enabled");
  core::Rng rng(seed);
  std::vector<AbuseCase> cases;
  cases.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int k = 0;
    if (i < static_cast<int64_t>(enabled.size())) {
      k = enabled[static_cast<size_t>(i)];
    } else {
      int64_t u = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(total_weight)));
      for (int e : enabled) {
        u -= kinds[static_cast<size_t>(e)].weight;
        if (u < 0) {
          k = e;
          break;
        }
      }
    }
    AbuseCase c;
    c.kind = k;
    c.action = kinds[static_cast<size_t>(k)].group == AbuseGroup::kDisconnect
                   ? AbuseAction::kCloseAfterSend
                   : AbuseAction::kExchange;
    suite.MakeCase(k, rng, context, &c);
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace tessera::serve
