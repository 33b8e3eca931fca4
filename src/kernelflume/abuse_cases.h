// The completion abuse suite (serve/abuse_suite.h): every kind of bad request (and a share of
// good ones) that the serving core's abuse tool (serve/abuse.h) sends to a CompletionServer's
// POST /v1/completions, each with the HTTP status that the server's contract
// (completion_server.h, completion_request.h) gives it, and the check of a valid reply.
//
// Groups and the status each kind must get (the variants of a kind are drawn per case):
//   malformed_json  400  truncated bodies, random bytes, nesting deeper than 256 (up to the
//                        body limit), numbers that fit no double, NaN / Infinity / hex /
//                        leading-zero literals, non-objects, duplicate keys, bad UTF-8, a body
//                        said to be gzip that is not
//   wrong_type      400  a string / array / object / bool / null / float where another type
//                        is due (prompt, max_tokens, temperature, seed, stream, stop_at_eos,
//                        model), unknown keys
//   absurd_value    400  max_tokens 0 / -1 / over the context / 2^63 - 1, prompts over the
//                        context (ids or text), empty prompts, temperature < 0 or > 100, token
//                        ids outside the vocabulary, negative or 2^64 seeds, unknown models
//   too_large       413  bodies over max_body_bytes: plain, chunked, a Content-Length of
//                        2^64 - 1 or more, and 32 KiB of gzip that decode to 32 MiB
//   route           404  unknown paths, paths with bytes that are not UTF-8;
//                   414  a request line over 8 KiB
//   method          404  a known path with another method (the route is method + path);
//                   400  unknown methods, malformed request lines, a Content-Length of "abc";
//                   415  a Content-Encoding other than gzip, brotli or deflate
//   disconnect        -  the client closes: right after connecting, after the headers, after
//                        half the body, or after a whole valid request before the reply
//                        (plain, or a 64-token stream the server must cancel)
//   valid           200  greedy completions of small text or id prompts, max_tokens 1..8:
//                        stop_at_eos false (exactly max_tokens ids, finish_reason "length") and
//                        true (max_tokens ids, or fewer ending with "stop"), and streamed
//                        (server-sent events ending with [DONE]); usage must add up.
//                        The fingerprint is the token ids (greedy decoding is deterministic).
//
// The suite assumes what tessera's tiny models have: the byte tokenizer (vocab 259, so text
// prompts are accepted and ids 0..255 are in the vocabulary) and a context under
// (max_body_bytes - 64) / 6 tokens (10,912 at the 64 KiB default), so that the "prompt over
// the context" bodies, which stay under the body limit, are over the context.
// Plan: serve::PlanAbuse (one of each kind in table order, then drawn by weight, seeded).
// Errors: none here (PlanAbuse's). Thread-safety: the suite is immutable; reentrant.
#pragma once

#include <vector>

#include "serve/abuse_suite.h"

namespace tessera::kernelflume {

// The suite (one instance, built on first use).
const serve::AbuseSuite& CompletionAbuseSuite();

}  // namespace tessera::kernelflume
