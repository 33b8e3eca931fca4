// The diffusion abuse suite (serve/abuse_suite.h): every kind of bad request (and a share of
// good ones) that the serving core's abuse tool (serve/abuse.h, run by abuse.h) sends to a
// DiffusionServer, each with the HTTP status that the server's contract (server.h,
// request_json.h) gives it, and the check of a valid reply: a body whose `data` holds one PNG
// per frame of the requested size (none with response_format none) and whose `template`
// names the request; its fingerprint is the data.
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
//                        2^64 - 1 or more (refused from the head alone), and
//                        32 KiB of gzip that decode to 32 MiB (the limit is on decoded bytes)
//   route           404  unknown paths, paths with bytes that are not UTF-8 (%FF, raw 0x80..);
//                   414  a request line over 8 KiB (serve/http_options.h)
//   method          404  a known path with another method (the route is method + path);
//                   400  unknown methods, malformed request lines, a Content-Length of "abc"
//                        or -5;
//                   415  a Content-Encoding other than gzip, brotli or deflate
//   disconnect        -  the client closes: right after connecting, after the headers, after
//                        half the body, or after a whole valid request before the reply
//   valid           200  small images (16x16 CFG off, 32x16 CFG on, 16x16 response_format
//                        none; 1 step) and a 16x16 5-frame video, seeds 1..3: identical bodies
//                        must get identical data (one kind each, so the warm-up runs them all)
//
// Plan: serve::PlanAbuse (one of each enabled kind in table order, then drawn by weight, seeded).
// Requests carry "Connection: close"; the HTTP-level ones (chunked, lying Content-Length,
// gzip, bad request lines, cut-off requests) come from serve/abuse_requests.h.
// Errors: InvalidArgument for n < 1 or a max_body_bytes under 1 KiB. Thread-safety: reentrant;
// the suite is immutable.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "serve/abuse_suite.h"

namespace tessera::xema {

using serve::AbuseAction;
using serve::AbuseCase;
using serve::AbuseGroup;
using serve::AbuseGroupName;
using serve::AbuseKind;
using serve::AbusePlanContext;

// The suite (one instance, built on first use).
const serve::AbuseSuite& DiffusionAbuseSuite();

// Its table, in a fixed order (AbuseCase::kind indexes it).
const std::vector<AbuseKind>& AbuseKinds();

// Whether a kind is sent under `context` (the 507 kind needs a budget its request exceeds).
bool AbuseKindEnabled(int kind, const AbusePlanContext& context);

// serve::PlanAbuse of the suite.
core::StatusOr<std::vector<AbuseCase>> PlanAbuse(int64_t n, uint64_t seed,
                                                 const AbusePlanContext& context);

}  // namespace tessera::xema
