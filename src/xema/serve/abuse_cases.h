// The abuse table: every kind of bad request (and a share of good ones) that RunAbuse
// (abuse.h) sends to a DiffusionServer, each with the HTTP status that the server's contract
// (server.h, request_json.h) gives it, and a seeded plan of N cases drawn from the table.
//
// Groups and the status each kind must get (the variants of a kind are drawn per case):
//   malformed_json  400  truncated bodies, random bytes, nesting deeper than 256 (up to the
//                        body limit), numbers that fit no double or no int64, NaN / Infinity /
//                        hex / leading-zero literals, non-objects, duplicate keys, bad UTF-8,
//                        a body said to be gzip that is not
//   wrong_type      400  a string / array / object / bool / null / float where another type
//                        is due (steps, size, model, prompt, guidance, seed, ...), unknown keys
//   absurd_value    400  size 100000x100000 and malformed sizes, steps 1e9, negative or 2^64
//                        seeds, guidance out of [0, 100], frames 4k + 2, unknown models (paths
//                        included), prompts over kMaxPromptBytes, multibyte text cut in the echo;
//                   507  a size within the limits whose MinimumPeakBytes exceeds the budget
//                        (refused before queueing; the kind is left out when it would fit)
//   too_large       413  bodies over max_body_bytes: plain, chunked, a Content-Length of
//                        2^64 - 5 (the server drops bytes until its 5 s read timeout), and
//                        32 KiB of gzip that decode to 32 MiB (the limit is on decoded bytes)
//   route           404  unknown paths, paths with bytes that are not UTF-8 (%FF, raw 0x80..);
//                   414  a request line over 8 KiB (cpp-httplib's limit)
//   method          404  a known path with another method (the route is method + path);
//                   400  unknown methods, malformed request lines, a Content-Length of "abc";
//                   415  a Content-Encoding other than gzip, brotli or deflate
//   disconnect        -  the client closes: right after connecting, after the headers, after
//                        half the body, or after a whole valid request before the reply
//   valid           200  small images (16x16 CFG off, 32x16 CFG on, 16x16 response_format
//                        none; 1 step) and a 16x16 5-frame video, seeds 1..3: identical bodies
//                        must get identical data (one kind each, so the warm-up runs them all)
//
// Plan: the first cases are one of each enabled kind in table order (so a short run and its
// warm-up touch every kind), the rest are drawn by weight from a seeded Rng; the same seed and
// context give the same bytes. Requests carry "Connection: close".
// Errors: InvalidArgument for n < 1 or a max_body_bytes under 1 KiB. Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "xema/serve/request_json.h"

namespace tessera::xema {

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
  int weight;           // relative share of drawn cases
  const char* what;     // one line for tables
};

// The table, in a fixed order (AbuseCase::kind indexes it).
const std::vector<AbuseKind>& AbuseKinds();

struct AbuseCase {
  int kind = 0;
  AbuseAction action = AbuseAction::kExchange;
  std::string request;  // the raw bytes sent
  // Valid kinds: the JSON body and its route (the reply is checked against them).
  std::string body;
  GenerationKind route = GenerationKind::kImage;
};

struct AbusePlanContext {
  std::string host = "127.0.0.1";  // for the Host header
  int port = 80;
  int64_t max_body_bytes = 64 * 1024;  // the server's body limit (ServerOptions default)
  int64_t budget_bytes = 0;            // per device; 0: unknown (the 507 kind is left out)
};

// Whether a kind is sent under `context` (the 507 kind needs a budget its request exceeds).
bool AbuseKindEnabled(int kind, const AbusePlanContext& context);

core::StatusOr<std::vector<AbuseCase>> PlanAbuse(int64_t n, uint64_t seed,
                                                 const AbusePlanContext& context);

}  // namespace tessera::xema
