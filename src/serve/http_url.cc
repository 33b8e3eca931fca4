#include "serve/http_url.h"

#include <cctype>

#include "core/parse_number.h"

namespace tessera::serve {

core::Status ParseHttpUrl(const std::string& url, std::string* host, int* port) {
  auto bad = [&] {
    const std::string shown = url.size() > 60 ? url.substr(0, 60) + "..." : url;
    return core::InvalidArgument("url: got '" + shown +
                                 "', must be http://HOST:PORT (e.g. http://127.0.0.1:8000)");
  };
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return bad();
  std::string rest = url.substr(scheme.size());
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad();
  const std::string h = rest.substr(0, colon);
  for (char c : h) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) {
      return bad();
    }
  }
  auto p = core::ParseInteger(rest.substr(colon + 1), 1, 65535);
  if (!p.ok()) return bad();
  *host = h;
  *port = static_cast<int>(*p);
  return core::Status::Ok();
}

}  // namespace tessera::serve
