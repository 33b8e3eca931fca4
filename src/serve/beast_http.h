// Boost.Beast's HTTP parser and messages, for the HTTP shell's internals (http_session.cc,
// http_wire.cc), with GCC 12's false -Wmaybe-uninitialized about the boost::optional in
// basic_parser (seen in the sanitizer build) silenced for these headers only.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#pragma GCC diagnostic pop
