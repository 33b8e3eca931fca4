// Base64 (RFC 4648, standard alphabet, '=' padding, no line breaks): the encoding of the PNG
// bytes in a reply's "b64_json". DecodeBase64 refuses anything else with InvalidArgument
// naming the first bad character's position. Pure functions; thread-safe.
#pragma once

#include <string>

#include "core/status.h"

namespace tessera::serve {

std::string EncodeBase64(const std::string& bytes);
core::StatusOr<std::string> DecodeBase64(const std::string& text);

}  // namespace tessera::serve
