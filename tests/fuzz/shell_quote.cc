#include "shell_quote.h"

#include <cstdio>

namespace tessera::fuzz {
namespace {

bool Plain(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
         c == '.' || c == '_' || c == '-' || c == '=' || c == ',' || c == '+' || c == ':' ||
         c == '@';
}

// Length of the valid UTF-8 sequence starting at s[i] (0 when it is not one).
size_t Utf8Length(const std::string& s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return 0;
  return n;
}

// One piece without long runs.
std::string QuotePiece(const std::string& s) {
  if (s.empty()) return "";
  bool plain = true, needs_ansi = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (!Plain(s[i])) plain = false;
    if (c < 0x20 || c == 0x7f) needs_ansi = true;
    if (c >= 0x80) {
      size_t n = Utf8Length(s, i);
      if (n == 0) {
        needs_ansi = true;
      } else {
        i += n - 1;
      }
    }
  }
  if (plain) return s;
  if (!needs_ansi) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  }
  std::string q = "$'";
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f || ch == '\'' || ch == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      q += buf;
    } else {
      q += ch;
    }
  }
  return q + "'";
}

}  // namespace

std::string ShellQuote(const std::string& arg) {
  if (arg.empty()) return "''";
  std::string out, piece;
  size_t i = 0;
  while (i < arg.size()) {
    size_t j = i;
    while (j < arg.size() && arg[j] == arg[i]) ++j;
    const unsigned char c = static_cast<unsigned char>(arg[i]);
    if (j - i >= 64 && c > 0x20 && c < 0x7f && arg[i] != '\'' && arg[i] != '%' && arg[i] != '\\') {
      out += QuotePiece(piece);
      piece.clear();
      out += "\"$(printf '%" + std::to_string(j - i) + "s' '' | tr ' ' '" + std::string(1, arg[i]) +
             "')\"";
    } else {
      piece.append(arg, i, j - i);
    }
    i = j;
  }
  return out + QuotePiece(piece);
}

std::string Printable(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f || (c >= 0x80 && Utf8Length(text, i) == 0)) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else if (c >= 0x80) {
      const size_t n = Utf8Length(text, i);
      out.append(text, i, n);
      i += n - 1;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string ShellJoin(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : args) {
    if (!out.empty()) out += ' ';
    out += ShellQuote(a);
  }
  return out;
}

}  // namespace tessera::fuzz
