#include "core/log.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <thread>
#include <vector>

namespace tessera::core {
namespace {

TEST(LogTest, ParsesNamesAndNumbers) {
  EXPECT_EQ(*ParseLogLevel("error"), LogLevel::kError);
  EXPECT_EQ(*ParseLogLevel("WARN"), LogLevel::kWarn);
  EXPECT_EQ(*ParseLogLevel("warning"), LogLevel::kWarn);
  EXPECT_EQ(*ParseLogLevel("Info"), LogLevel::kInfo);
  EXPECT_EQ(*ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_EQ(*ParseLogLevel("0"), LogLevel::kError);
  EXPECT_EQ(*ParseLogLevel("3"), LogLevel::kDebug);
  EXPECT_EQ(ParseLogLevel("4").status().message(),
            "TESSERA_LOG: got '4', must be one of error, warn, info, debug or 0-3");
  EXPECT_FALSE(ParseLogLevel("verbose").ok());
  EXPECT_FALSE(ParseLogLevel("").ok());
  EXPECT_STREQ(LogLevelName(LogLevel::kDebug), "debug");
}

TEST(LogTest, EnvironmentValueSelectsTheThreshold) {
  std::string warning;
  EXPECT_EQ(internal::ThresholdFromEnv(nullptr, &warning), LogLevel::kWarn);
  EXPECT_EQ(internal::ThresholdFromEnv("", &warning), LogLevel::kWarn);
  EXPECT_EQ(internal::ThresholdFromEnv("debug", &warning), LogLevel::kDebug);
  EXPECT_EQ(internal::ThresholdFromEnv("2", &warning), LogLevel::kInfo);
  EXPECT_TRUE(warning.empty());
  EXPECT_EQ(internal::ThresholdFromEnv("loud", &warning), LogLevel::kWarn);
  EXPECT_EQ(warning,
            "TESSERA_LOG: got 'loud', must be one of error, warn, info, debug or 0-3 (using warn)");
}

int Touch(int* counter) { return ++*counter; }

TEST(LogTest, DisabledLevelsDoNotEvaluateArguments) {
  const LogLevel saved = GetLogLevel();
  SetLogLevel(LogLevel::kWarn);
  int evaluated = 0;
  testing::internal::CaptureStderr();
  TLOG(kDebug, "never {}", Touch(&evaluated));
  TLOG(kInfo, "never {}", Touch(&evaluated));
  TLOG_STREAM(kDebug) << "never " << Touch(&evaluated);
  EXPECT_EQ(evaluated, 0);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_FALSE(LogEnabled(LogLevel::kDebug));
  EXPECT_TRUE(LogEnabled(LogLevel::kWarn));

  testing::internal::CaptureStderr();
  TLOG(kWarn, "x = {:.2f}", 1.5 + Touch(&evaluated));
  SetLogLevel(LogLevel::kDebug);
  TLOG_STREAM(kDebug) << "y = " << Touch(&evaluated);
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_EQ(evaluated, 2);
  EXPECT_TRUE(std::regex_match(out, std::regex("tessera W log_test\\.cc:[0-9]+: x = 2\\.50\n"
                                               "tessera D log_test\\.cc:[0-9]+: y = 2\n")))
      << out;
  SetLogLevel(saved);
}

TEST(LogTest, ConcurrentLinesDoNotInterleave) {
  const LogLevel saved = GetLogLevel();
  SetLogLevel(LogLevel::kInfo);
  testing::internal::CaptureStderr();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) TLOG(kInfo, "thread {} line {} {}", t, i, std::string(40, 'x'));
    });
  }
  for (auto& th : threads) th.join();
  const std::string out = testing::internal::GetCapturedStderr();
  SetLogLevel(saved);
  std::istringstream lines(out);
  std::string line;
  int count = 0;
  const std::regex want("tessera I log_test\\.cc:[0-9]+: thread [0-3] line [0-9]+ x{40}");
  while (std::getline(lines, line)) {
    ++count;
    EXPECT_TRUE(std::regex_match(line, want)) << line;
  }
  EXPECT_EQ(count, 800);
}

}  // namespace
}  // namespace tessera::core
