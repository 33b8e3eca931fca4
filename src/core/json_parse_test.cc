// core::ParseJson and the typed getters on hostile documents: never an exception, always a
// message naming where.
#include <gtest/gtest.h>

#include <string>

#include "core/json_util.h"

namespace tessera::core {
namespace {

std::string Error(const std::string& text) {
  auto r = ParseJson(text, "f.json");
  return r.ok() ? "" : r.status().message();
}

TEST(JsonParseTest, DuplicateKeysAreRefusedWithTheirPath) {
  EXPECT_EQ(Error(R"({"a": 1, "a": 2})"),
            "f.json: a: duplicate key (each key may appear once "
            "in an object)");
  EXPECT_NE(Error(R"({"b": {"c": [1, {"d": 2, "d": 3}]}})").find("f.json: b.c[1].d: duplicate"),
            std::string::npos);
  EXPECT_EQ(Error(R"({"a": {"x": 1}, "b": {"x": 1}})"), "");  // same key in two objects is fine
  EXPECT_EQ(Error(R"([{"x": 1}, {"x": 2}])"), "");
}

TEST(JsonParseTest, NumbersOutOfRangeAndMalformedText) {
  EXPECT_EQ(Error(R"({"name": 1e400})"),
            "f.json: number out of range: '1e400' (JSON numbers must fit a double)");
  EXPECT_NE(Error("{\"a\": ").find("malformed JSON (byte"), std::string::npos);
  EXPECT_NE(Error("").find("malformed JSON"), std::string::npos);
  EXPECT_NE(Error("\xff\xfe").find("malformed JSON"), std::string::npos);
}

TEST(JsonParseTest, DeepNestingIsRefused) {
  EXPECT_NE(Error(std::string(100000, '[') + std::string(100000, ']')).find("nested deeper"),
            std::string::npos);
  EXPECT_EQ(Error(std::string(100, '[') + std::string(100, ']')), "");
}

TEST(JsonParseTest, IntegersAreRangeCheckedBeforeNarrowing) {
  Json j = *ParseJson(R"({"big": 9223372036854775808, "max": 9223372036854775807,
                          "n": 5, "f": 2.5, "neg": -3})",
                      "x");
  auto big = GetPositiveInt(j, "c", "big");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().message(),
            "c.big: got 9223372036854775808, must be <= 9223372036854775807");
  EXPECT_TRUE(GetPositiveInt(j, "c", "max").ok());
  EXPECT_EQ(*GetIntInRange(j, "", "n", 1, 5), 5);
  EXPECT_EQ(GetIntInRange(j, "", "n", 6, 9).status().message(), "n: got 5, must be in [6, 9]");
  EXPECT_FALSE(GetIntInRange(j, "", "f", 0, 9).ok());
  EXPECT_FALSE(GetNonNegativeInt(j, "", "neg").ok());
  EXPECT_DOUBLE_EQ(*GetDoubleInRange(j, "", "f", 0, 3), 2.5);
  EXPECT_FALSE(GetDoubleInRange(j, "", "f", 3, 4).ok());
}

}  // namespace
}  // namespace tessera::core

namespace tessera::core {
namespace {

TEST(JsonParseTest, MessagesQuoteAtMostAShortPieceOfAValue) {
  Json j = {{"list", Json::array()}, {"bad_utf8", std::string("\xff\xfe")}};
  for (int i = 0; i < 20000; ++i) j["list"].push_back("a long string element");
  auto r = GetString(j, "doc", "list");
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.status().message().size(), 140u) << r.status().message();
  EXPECT_NE(r.status().message().find("..."), std::string::npos);
  // Invalid UTF-8 in a value is shown, not thrown (nlohmann's dump throws on it by default).
  auto n = GetPositiveDouble(j, "doc", "bad_utf8");
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("must be a number"), std::string::npos);
}

TEST(JsonParseTest, MessagesAreCutBetweenUtf8Characters) {
  const std::string e = "\xC3\xA9";  // é, two bytes
  EXPECT_EQ(Utf8Prefix("ab" + e, 3), "ab");
  EXPECT_EQ(Utf8Prefix("ab" + e, 4), "ab" + e);
  EXPECT_EQ(Utf8Prefix("ab" + e + "c", 4), "ab" + e);
  EXPECT_EQ(Utf8Prefix("\xE2\x82\xAC!", 2), "");  // inside a three-byte character
  EXPECT_EQ(Utf8Prefix("abc", 10), "abc");
  // A long multibyte value cut for a message still dumps as JSON.
  std::string text = "x";
  for (int i = 0; i < 100; ++i) text += e;
  auto r = GetIntInRange(Json{{"k", text}}, "", "k", 0, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NO_THROW((void)Json(r.status().message()).dump());
}

}  // namespace
}  // namespace tessera::core

namespace tessera::core {
namespace {

TEST(JsonParseTest, CheckKindAndVersionNamesWhatIsWrong) {
  const Json ok = {{"kind", "compass-model"}, {"version", 1}};
  EXPECT_TRUE(CheckKindAndVersion(ok, "m.json", "compass-model", 1).ok());
  EXPECT_EQ(CheckKindAndVersion(ok, "m.json", "compass-grid", 1).message(),
            "m.json: kind: got 'compass-model', must be compass-grid");
  EXPECT_EQ(CheckKindAndVersion(ok, "m.json", "compass-model", 2).message(),
            "m.json: version: got 1, this tessera reads version 2");
  EXPECT_FALSE(CheckKindAndVersion(Json{{"version", 1}}, "m.json", "x", 1).ok());
}

TEST(JsonParseTest, CheckKnownKeysNamesTheKeyAndWhere) {
  EXPECT_TRUE(CheckKnownKeys(Json{{"a", 1}}, "x", {"a", "b"}).ok());
  EXPECT_EQ(CheckKnownKeys(Json{{"c", 1}}, "x[2]", {"a", "b"}).message(),
            "x[2]: unknown key 'c', must be one of a, b");
  // At the top level the caller's prefix (the file) names it: no empty field before the colon.
  EXPECT_EQ(CheckKnownKeys(Json{{"c", 1}}, "", {"a"}).message(),
            "unknown key 'c', must be one of a");
  EXPECT_EQ(CheckKnownKeys(Json::array(), "", {"a"}).message(), "got [], must be an object");
  const std::string long_key(5000, 'k');
  EXPECT_LT(CheckKnownKeys(Json{{long_key, 1}}, "x", {"a"}).message().size(), 120u);
}

TEST(Utf8Escaped, KeepsWellFormedCharactersAndEscapesEveryBadByte) {
  const std::string e = "\xC3\xA9";              // U+00E9, 2 bytes
  const std::string euro = "\xE2\x82\xAC";       // U+20AC, 3 bytes
  const std::string smile = "\xF0\x9F\x98\x80";  // U+1F600, 4 bytes
  EXPECT_EQ(Utf8Escaped("plain " + e + euro + smile), "plain " + e + euro + smile);
  EXPECT_EQ(Utf8Escaped("a\x80"
                        "b"),
            "a\\x80b");                                                // stray continuation
  EXPECT_EQ(Utf8Escaped("\xC3"), "\\xC3");                             // truncated at the end
  EXPECT_EQ(Utf8Escaped("\xE2\x82z"), "\\xE2\\x82z");                  // truncated in the middle
  EXPECT_EQ(Utf8Escaped("\xC0\xAF"), "\\xC0\\xAF");                    // overlong '/'
  EXPECT_EQ(Utf8Escaped("\xE0\x80\xAF"), "\\xE0\\x80\\xAF");           // overlong, 3 bytes
  EXPECT_EQ(Utf8Escaped("\xED\xA0\x80"), "\\xED\\xA0\\x80");           // a surrogate
  EXPECT_EQ(Utf8Escaped("\xF4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(Utf8Escaped("\xFF"), "\\xFF");
  EXPECT_EQ(Utf8Escaped(std::string("a\0b", 3)), std::string("a\0b", 3));
  // Whatever the bytes, the result is valid JSON text.
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  EXPECT_NO_THROW(Json(Utf8Escaped(all)).dump());
}

}  // namespace
}  // namespace tessera::core
