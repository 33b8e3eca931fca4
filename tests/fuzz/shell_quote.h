// ShellQuote: one argument written so that bash passes it back byte for byte, for the
// reproducible command lines the CLI fuzz harness prints. Plain words stay as they are; others
// are single-quoted; control characters and bytes that are not UTF-8 use $'\xHH'; a run of 64
// or more of one printable character becomes $(printf ...) so a 70,000-character argument
// still prints as one short line. Pure function.
#pragma once

#include <string>
#include <vector>

namespace tessera::fuzz {

std::string ShellQuote(const std::string& arg);

// `text` for a one-line message: newline, tab and other control bytes, and bytes that are not
// UTF-8, written as \n, \t, \xHH.
std::string Printable(const std::string& text);

// The arguments quoted and joined by spaces.
std::string ShellJoin(const std::vector<std::string>& args);

}  // namespace tessera::fuzz
