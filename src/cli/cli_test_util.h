// Helpers of the tessera binary's end-to-end tests: run it with arguments (stdout and stderr
// together), per-test temporary paths, and the "user error" expectation (exit 1, one line,
// containing a needle). Test-only; the binary is TESSERA_BIN.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace tessera::cli::testing {

struct Result {
  int code;
  std::string out;
};

inline Result RunTessera(const std::string& args) {
  std::string cmd = std::string(TESSERA_BIN) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  Result r{-1, ""};
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// A per-test path: ctest runs the tests of this file as parallel processes.
inline std::string TempPath(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "/tessera_cli_" + info->name() + "_" + name;
}

inline std::string Write(const std::string& name, const std::string& text) {
  std::string path = TempPath(name);
  std::ofstream(path) << text;
  return path;
}

// The whole file at `path` ("" when it cannot be read).
inline std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline int Lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

inline void ExpectUserError(const std::string& args, const std::string& needle) {
  Result r = RunTessera(args);
  EXPECT_EQ(r.code, 1) << args << "\n" << r.out;
  EXPECT_EQ(Lines(r.out), 1) << args << "\n" << r.out;
  EXPECT_NE(r.out.find(needle), std::string::npos) << args << "\n" << r.out;
}

}  // namespace tessera::cli::testing
