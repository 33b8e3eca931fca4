// The shared option rules (cli/options.h): every numeric option of every subcommand carries
// a rule and every output option is recorded, so commands added later cannot skip them; and
// the rules refuse what the issue found accepted (negative seeds, nan, inf, 1e400, octal).
#include "cli/options.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace tessera::cli {
namespace {

// Every subcommand below `app`, depth first.
void Collect(CLI::App* app, std::vector<CLI::App*>* out) {
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
    out->push_back(sub);
    Collect(sub, out);
  }
}

bool HasRule(CLI::Option* opt, const char* rule) {
  try {
    return opt->get_validator(rule) != nullptr;
  } catch (const CLI::OptionNotFound&) {
    return false;
  }
}

TEST(OptionsTest, EveryNumericOptionHasARuleAndEveryOutputIsRecorded) {
  CLI::App root{"t"};
  Action action;
  AddAllCommands(root, &action);
  std::vector<CLI::App*> apps;
  Collect(&root, &apps);
  ASSERT_GE(apps.size(), 5u);
  int numeric = 0, outputs = 0;
  for (CLI::App* app : apps) {
    for (CLI::Option* opt : app->get_options()) {
      const std::string type = opt->get_type_name();
      const std::string where = app->get_name() + " " + opt->get_name();
      if (type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0 || type.rfind("FLOAT", 0) == 0) {
        ++numeric;
        EXPECT_TRUE(HasRule(opt, kNumberRule)) << where << " (" << type << ") has no rule";
      }
      const std::string name = opt->get_name();
      if (name == "--json" || name == "--out" || name.rfind("--save-", 0) == 0) {
        ++outputs;
        EXPECT_TRUE(HasRule(opt, kOutputRule)) << where << " is not a recorded output";
      }
      // --trace is a Chrome trace written (zellige) or a memory trace read (xema): either
      // way a recorded file.
      if (name == "--trace") {
        EXPECT_TRUE(HasRule(opt, kOutputRule) || HasRule(opt, kInputRule))
            << where << " is not a recorded output or input";
      }
    }
  }
  EXPECT_GT(numeric, 20);
  EXPECT_GT(outputs, 5);
}

// Parses `args` (as typed, after the program name) on `app`; the error text, or "".
std::string ParseError(CLI::App& app, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

// Parses `value` for one option carrying `rule`; the error text, or "" when accepted.
template <typename T>
std::string Try(CLI::Validator rule, const std::string& value, T* out, bool transform) {
  CLI::App app{"t"};
  CLI::Option* opt = app.add_option("--x", *out);
  if (transform) {
    opt->transform(rule);
  } else {
    opt->check(rule);
  }
  return ParseError(app, {"--x", value});
}

TEST(OptionsTest, IntegerAndSeedRules) {
  uint64_t seed = 0;
  EXPECT_EQ(Try(Seed(), "7", &seed, true), "");
  EXPECT_EQ(seed, 7u);
  EXPECT_EQ(Try(Seed(), "010", &seed, true), "");
  EXPECT_EQ(seed, 10u) << "decimal, not octal";
  EXPECT_NE(Try(Seed(), "-1", &seed, true).find("got '-1', must be an integer from 0"),
            std::string::npos);
  EXPECT_NE(Try(Seed(), "0x10", &seed, true), "");
  EXPECT_NE(Try(Seed(), "99999999999999999999", &seed, true), "");
  EXPECT_NE(Try(Seed(), "", &seed, true), "");
  int steps = 0;
  EXPECT_NE(Try(Integer(1, 100), "0", &steps, true), "");
  EXPECT_NE(Try(Integer(1, 100), "101", &steps, true), "");
  EXPECT_NE(Try(Integer(1, 100), "1.5", &steps, true), "");
  EXPECT_EQ(Try(Integer(1, 100), "+100", &steps, true), "");
  EXPECT_EQ(steps, 100);
}

TEST(OptionsTest, ByteSizeRule) {
  int64_t bytes = 0;
  EXPECT_EQ(Try(ByteSize(1, int64_t{1} << 50), "512MiB", &bytes, true), "");
  EXPECT_EQ(bytes, int64_t{512} << 20);
  EXPECT_EQ(Try(ByteSize(1, int64_t{1} << 50), "80GB", &bytes, true), "");
  EXPECT_EQ(bytes, 80'000'000'000);
  EXPECT_NE(Try(ByteSize(1, int64_t{1} << 50), "0", &bytes, true).find("got '0', must be a size"),
            std::string::npos);
  EXPECT_NE(Try(ByteSize(1, int64_t{1} << 50), "12XB", &bytes, true), "");
}

TEST(OptionsTest, NumberRules) {
  double x = 0;
  for (const char* bad : {"nan", "inf", "-inf", "1e400", "-1", "0", "abc", "", "0x1p3", "1e-400"}) {
    EXPECT_NE(Try(PositiveNumber(600), bad, &x, false), "") << bad;
  }
  EXPECT_EQ(Try(PositiveNumber(600), "1e-3", &x, false), "");
  EXPECT_DOUBLE_EQ(x, 1e-3);
  EXPECT_EQ(Try(Number(0, 10), "0", &x, false), "");
  EXPECT_NE(Try(Number(0, 10), "10.5", &x, false), "");
}

// Parses `args` (as typed, after the program name) on the whole command tree; the error, or "".
std::string ParseAll(std::vector<std::string> args) {
  CLI::App root{"t"};
  Action action;
  AddAllCommands(root, &action);
  return ParseError(root, std::move(args));
}

// An explicitly empty value is refused naming the option; it used to mean the default
// (`--cluster ''` planned on a800x16) or was dropped (`--mixes v50,,v60`).
TEST(OptionsTest, EveryOptionThatTakesAValueRefusesAnEmptyOne) {
  CLI::App root{"t"};
  Action action;
  AddAllCommands(root, &action);
  std::vector<CLI::App*> apps;
  Collect(&root, &apps);
  int checked = 0;
  for (CLI::App* app : apps) {
    for (CLI::Option* opt : app->get_options()) {
      if (opt->get_type_size_max() == 0 || opt->get_expected_max() == 0) continue;  // a flag
      ++checked;
      EXPECT_TRUE(HasRule(opt, kNonEmptyRule) || HasRule(opt, kEmptyAllowedRule))
          << app->get_name() << " " << opt->get_name() << " takes '' silently";
    }
  }
  EXPECT_GT(checked, 100);
  EXPECT_EQ(ParseAll({"zellige", "plan", "--cluster", ""}),
            "--cluster: got an empty value; give a value or leave the option out");
  EXPECT_EQ(ParseAll({"zellige", "plan", "--workload="}).rfind("--workload: ", 0), 0u);
  EXPECT_EQ(ParseAll({"compass", "plan", "--profile", ""}),
            "--profile: got an empty value; give a value or leave the option out");
  EXPECT_EQ(ParseAll({"xema", "trace", "--analytic", ""}),
            "--analytic: got an empty value; give a value or leave the option out");
  EXPECT_EQ(ParseAll({"kernelflume", "attn-node", "--connect", "h:1", "--fingerprint", ""}),
            "--fingerprint: got an empty value; give a value or leave the option out");
  // An empty diffusion prompt is a prompt.
  EXPECT_EQ(ParseAll({"xema", "check", "--prompt", ""}), "");
  EXPECT_EQ(ParseAll({"zellige", "plan", "--cluster", "a800x8"}), "");
}

TEST(OptionsTest, ListOptionsRefuseEmptyElementsAndCheckEachOne) {
  EXPECT_EQ(ParseAll({"zellige", "bench-planner", "--mixes", "v50,,v60"}),
            "--mixes: got 'v50,,v60': element 2 is empty; separate the values with single "
            "commas");
  EXPECT_NE(ParseAll({"zellige", "bench-planner", "--mixes", "v50,"}).find("element 2 is empty"),
            std::string::npos);
  EXPECT_NE(ParseAll({"zellige", "bench-planner", "--mixes", ","}).find("element 1 is empty"),
            std::string::npos);
  EXPECT_EQ(ParseAll({"zellige", "bench-planner", "--mixes", ""}),
            "--mixes: got an empty value; give a value or leave the option out");
#ifdef TESSERA_HAVE_RUNTIME
  EXPECT_EQ(ParseAll({"compass", "links", "--sizes-kib", "8,-1"}),
            "--sizes-kib: got '-1', must be an integer from 1 to 1048576 (element 2 of '8,-1')");
#endif
  EXPECT_EQ(ParseAll({"xema", "bench", "--budgets", "1MiB", "--mix", "m", "--rates", "1,nan"}),
            "--rates: got 'nan', must be a finite number > 0 and <= 10000 (element 2 of '1,nan')");

  // Values: split, checked (and canonicalised: 010 is ten), the first value replacing the
  // default and a repeat appending.
  CLI::App app{"t"};
  std::vector<int64_t> sizes = {256, 1024};
  ListOption(app.add_subcommand("s"), "--sizes", &sizes, "sizes", Integer(1, 100));
  std::vector<std::string> args = {"3", "--sizes", "010,2", "--sizes", "s"};  // reversed
  app.parse(args);
  EXPECT_EQ(sizes, (std::vector<int64_t>{10, 2, 3}));
  EXPECT_EQ(SplitList("a,,b"), (std::vector<std::string>{"a", "", "b"}));
}

TEST(OptionsTest, NameFlagsRenamesALeadingField) {
  const core::Status s = core::InvalidArgument("ranks: got 9, must be in [2, 8] for a6000x8");
  const core::Status named = NameFlags(s, {{"tp", "--tp"}, {"ranks", "--ranks"}});
  EXPECT_EQ(named.code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(named.message(), "--ranks: got 9, must be in [2, 8] for a6000x8");
  // Only a whole leading field followed by ':' is renamed.
  EXPECT_EQ(NameFlags("ranks_per_node: got 0", {{"ranks", "--ranks"}}), "ranks_per_node: got 0");
  EXPECT_EQ(NameFlags("the ranks: got 0", {{"ranks", "--ranks"}}), "the ranks: got 0");
  EXPECT_TRUE(NameFlags(core::Status::Ok(), {{"ranks", "--ranks"}}).ok());
  core::StatusOr<int> v = NameFlags(core::StatusOr<int>(3), {{"ranks", "--ranks"}});
  EXPECT_EQ(*v, 3);
}

}  // namespace
}  // namespace tessera::cli
