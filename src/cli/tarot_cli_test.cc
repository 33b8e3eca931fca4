// `tessera tarot scenes|run|bench` end to end.
#include <gtest/gtest.h>

#include "cli/cli_test_util.h"

namespace tessera::cli {
namespace {

using testing::RunTessera;

TEST(TarotCli, HelpListsTheSubcommands) {
  auto r = RunTessera("tarot --help");
  EXPECT_EQ(r.code, 0) << r.out;
}

}  // namespace
}  // namespace tessera::cli
