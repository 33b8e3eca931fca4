#include "serve/stream_writer.h"

namespace tessera::serve {

bool StreamWriter::Event(const core::Json& data) {
  return Write("data: " + data.dump(-1, ' ', false, core::Json::error_handler_t::replace) + "\n\n");
}

bool StreamWriter::Done() { return Write("data: [DONE]\n\n"); }

}  // namespace tessera::serve
