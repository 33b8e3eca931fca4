// ParseHttpUrl: the "http://HOST:PORT" a load tool is pointed at (a trailing '/' allowed; HOST
// letters, digits, '.', '-', '_'; PORT in [1, 65535]; no path, no https).
// Errors: InvalidArgument "url: got '...', must be http://HOST:PORT (e.g. ...)", the URL cut
// to 60 characters. Thread-safety: reentrant.
#pragma once

#include <string>

#include "core/status.h"

namespace tessera::serve {

core::Status ParseHttpUrl(const std::string& url, std::string* host, int* port);

}  // namespace tessera::serve
