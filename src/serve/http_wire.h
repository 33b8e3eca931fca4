// The bytes on the wire of the HTTP shell's replies (http_session.h) and its lingering close:
// a reply with Content-Length (and Connection: close when asked), the JSON error reply of
// reply.h, and WriteThenLinger: write a refusal, shut the sending side, then read and drop
// what the client still sends (at most 1 MiB or 2 s) before closing, so that the client
// reads the refusal rather than a reset. Also the two error-code questions the session asks.
// Errors: none. Thread-safety: ReplyBytes and ErrorBytes are reentrant; the rest run on the
// I/O thread.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <string>

#include "serve/http_session.h"

namespace tessera::serve::http_internal {

std::string ReplyBytes(int status, const std::string& content_type, const std::string& body,
                       bool close, const std::string& extra_headers = "");
std::string ErrorBytes(int status, const std::string& message,
                       const std::string& extra_headers = "");

// Writes `bytes` on `socket`, then lingers (above) and closes; tracked in st.lingering.
void WriteThenLinger(ShellState& st, boost::asio::ip::tcp::socket socket, std::string bytes);
// Lingers and closes `socket` (after a complete reply with Connection: close).
void LingerAndClose(ShellState& st, boost::asio::ip::tcp::socket socket);

// Closes every lingering socket at once (Stop).
void CloseAllLingering(ShellState& st);

// Whether every Content-Length in the unparsed head is a decimal number of 20 digits or more
// (Beast refuses one past 2^64 - 1 as malformed; it is a body over any limit: 413).
bool ContentLengthsAreHugeNumbers(const boost::beast::flat_buffer& buf);

// Whether `ec` means the client closed or reset its connection.
bool IsClientGone(const boost::system::error_code& ec);

}  // namespace tessera::serve::http_internal
