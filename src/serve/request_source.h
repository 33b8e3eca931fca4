// RequestSource: what a system supplies to the serving core's load tools (loadgen.h) so they
// can send its requests without knowing them: a fixed list of request templates, each with a
// label, a draw weight, and the request (route path and body) for a given seed. Xema's load
// mix (xema/serve/load_mix.h) is one; a completion server's prompt mix would be another.
//
// Contract: Count() >= 1 for a usable source; Weight(t) > 0 (template t is drawn with
// probability Weight(t) / sum of weights); Request(t, seed) is deterministic in (t, seed).
// Indexes are in [0, Count()); the tools never call with others.
// Errors: none (a source is validated when it is built). Thread-safety: Request is called
// from many client threads at once and must be safe for that; the rest from one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tessera::serve {

// One request to send: POST `path` with `body` of type `content_type`.
struct LoadRequest {
  std::string path;
  std::string body;
  std::string content_type = "application/json";
};

class RequestSource {
 public:
  virtual ~RequestSource() = default;
  virtual size_t Count() const = 0;
  virtual std::string Label(size_t t) const = 0;  // one line, for reports
  virtual double Weight(size_t t) const = 0;
  virtual LoadRequest Request(size_t t, uint64_t seed) const = 0;
};

}  // namespace tessera::serve
