// AbuseSuite: what a system supplies to the serving core's abuse tool (abuse.h): its table of
// abuse kinds (bad requests of every sort, and a share of valid ones), each with the HTTP
// status its server's contract gives it; the raw bytes of one case of a kind; and the check
// of a reply to a valid case. PlanAbuse draws a seeded plan of N cases from a suite.
// Xema's diffusion suite is xema/serve/abuse_cases.h.
//
// Groups a kind may belong to: malformed_json, wrong_type, absurd_value, too_large, route,
// method (each answered with an error status), disconnect (the client closes first: no
// reply; sent with kCloseAfterSend), valid (answered 200, the body checked by CheckValid, a
// 429 retried by the tool).
//
// Plan: the first cases are one of each enabled kind in table order (so a short run and its
// warm-up touch every kind), the rest are drawn by weight from a seeded core::Rng that is
// then handed to MakeCase; the same seed, suite and context give the same bytes.
// Errors: PlanAbuse returns InvalidArgument for n < 1 or a max_body_bytes under 1 KiB.
// Thread-safety: PlanAbuse is reentrant; a suite's CheckValid is called from many client
// threads at once and must be safe for that; its other methods from one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/status.h"
#include "serve/raw_http.h"

namespace tessera::serve {

enum class AbuseGroup {
  kMalformedJson,
  kWrongType,
  kAbsurdValue,
  kTooLarge,
  kRoute,
  kMethod,
  kDisconnect,
  kValid
};
const char* AbuseGroupName(AbuseGroup group);

enum class AbuseAction {
  kExchange,        // send the request, read the reply
  kCloseAfterSend,  // send the (possibly partial or empty) request, then close at once
};

struct AbuseKind {
  const char* name;
  AbuseGroup group;
  int expected_status;  // 0: none, the client closes first
  int weight;           // relative share of drawn cases, > 0
  const char* what;     // one line for tables
};

struct AbuseCase {
  int kind = 0;  // index into the suite's Kinds()
  AbuseAction action = AbuseAction::kExchange;
  std::string request;  // the raw bytes sent
  // Valid kinds: the body and its route path (the reply is checked against them).
  std::string body;
  std::string path;
};

struct AbusePlanContext {
  std::string host = "127.0.0.1";  // for the Host header
  int port = 80;
  int64_t max_body_bytes = 64 * 1024;  // the server's body limit (bytes)
  int64_t budget_bytes = 0;  // per device, from GET /v1/metrics "budget_bytes"; 0: unknown
};

class AbuseSuite {
 public:
  virtual ~AbuseSuite() = default;
  // The table, in a fixed order (AbuseCase::kind indexes it).
  virtual const std::vector<AbuseKind>& Kinds() const = 0;
  // Whether a kind is sent under `context` (e.g. one that needs a known budget).
  virtual bool KindEnabled(int kind, const AbusePlanContext& context) const = 0;
  // Sets c->request (and c->body, c->path for a valid kind) for a case of `kind`, drawing
  // its variant from `rng`.
  virtual void MakeCase(int kind, core::Rng& rng, const AbusePlanContext& context,
                        AbuseCase* c) const = 0;
  // Empty when `reply` (status 200) is a correct answer to the valid case `c`, else why not.
  // *fingerprint: what must be equal in every correct reply to the same body (e.g. the data).
  virtual std::string CheckValid(const AbuseCase& c, const HttpReply& reply,
                                 std::string* fingerprint) const = 0;
};

core::StatusOr<std::vector<AbuseCase>> PlanAbuse(const AbuseSuite& suite, int64_t n, uint64_t seed,
                                                 const AbusePlanContext& context);

}  // namespace tessera::serve
