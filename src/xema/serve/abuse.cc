#include "xema/serve/abuse.h"

#include "xema/serve/abuse_cases.h"

namespace tessera::xema {

core::StatusOr<AbuseReport> RunAbuse(const AbuseOptions& options) {
  return serve::RunAbuse(options, DiffusionAbuseSuite());
}

core::Json ToJson(const AbuseReport& report, const AbuseOptions& options) {
  return serve::ToJson(report, options, "tessera.xema.abuse/1");
}

}  // namespace tessera::xema
