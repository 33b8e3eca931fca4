// StreamWriter: how a streaming route's handler (HttpServer::PostStream) sends its reply in
// pieces: a chunked 200 reply, by default text/event-stream (server-sent events), written as
// the handler produces it, and the way the handler learns that the client went away (or the
// server is stopping) so that it can cancel its work.
//
// The first Write starts the reply (status 200, content_type); a handler that writes nothing
// answers with the Reply it returns instead (an error before streaming, say). Write blocks
// while more than kMaxStreamBufferBytes wait to be sent (a slow reader slows the handler, it
// does not grow the server's memory). Write and Event return false once the client closed its
// connection or the server stopped: nothing more is sent; open() says the same without writing.
// Errors: none (false). Thread-safety: one handler thread writes; open() from any thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/json_util.h"

namespace tessera::serve {

inline constexpr int64_t kMaxStreamBufferBytes = int64_t{1} << 20;

class StreamWriter {
 public:
  virtual ~StreamWriter() = default;
  virtual bool Write(std::string_view bytes) = 0;
  // One server-sent event: "data: <compact JSON>\n\n".
  bool Event(const core::Json& data);
  // "data: [DONE]\n\n", the end mark OpenAI-style streams send.
  bool Done();
  virtual bool open() = 0;
};

}  // namespace tessera::serve
