#include "core/registry.h"

#include <gtest/gtest.h>

namespace tessera::core {
namespace {

class Shape {
 public:
  virtual ~Shape() = default;
  virtual int Sides() const = 0;
};
class Triangle : public Shape {
 public:
  int Sides() const override { return 3; }
};
class Square : public Shape {
 public:
  int Sides() const override { return 4; }
};
std::unique_ptr<Shape> NewTriangle() { return std::make_unique<Triangle>(); }

struct Traits {
  bool regular = false;
};
struct Weight {
  int weight = 0;
};

using ShapeRegistry = Registry<Shape, Traits, Weight>;

ShapeRegistry MakeShapes() {
  ShapeRegistry r("shape", {"all"});
  r.Add({{.regular = false}, {.weight = 1}, "triangle", "three sides", &NewTriangle, {}})
      .Add({{.regular = true},
            {.weight = 2},
            "square",
            "four equal sides",
            [] { return std::make_unique<Square>(); },
            {{"square.size", "side length"}, {"square.color", "fill"}}});
  return r;
}

TEST(RegistryTest, EntriesInRegistrationOrderWithExtraFields) {
  const ShapeRegistry r = MakeShapes();
  EXPECT_EQ(r.Names(), (std::vector<std::string>{"triangle", "square"}));
  ASSERT_EQ(r.entries().size(), 2u);
  const auto& sq = r.entries()[1];
  EXPECT_TRUE(sq.regular);
  EXPECT_EQ(sq.weight, 2);
  EXPECT_EQ(sq.description, "four equal sides");
  EXPECT_EQ(sq.make()->Sides(), 4);
  int n = 0;
  for (const auto& e : r) n += e.make()->Sides();
  EXPECT_EQ(n, 7);
}

TEST(RegistryTest, FindReturnsTheEntryOrNotFoundListingTheNames) {
  const ShapeRegistry r = MakeShapes();
  auto t = r.Find("triangle");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->make()->Sides(), 3);
  auto x = r.Find("circle");
  EXPECT_EQ(x.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(x.status().message(), "shape: got 'circle', must be one of triangle, square or all");
  Registry<Shape> plain("shape");
  plain.Add({"triangle", "three sides", &NewTriangle, {}});
  EXPECT_EQ(plain.Find("x").status().message(), "shape: got 'x', must be one of triangle");
  EXPECT_EQ(Registry<Shape>("shape").Find("x").status().message(),
            "shape: got 'x', must be one of (none registered)");
}

TEST(RegistryTest, ValidatesOptionsAgainstDeclaredKeys) {
  const ShapeRegistry r = MakeShapes();
  const auto& tri = *r.Find("triangle").value();
  const auto& sq = *r.Find("square").value();
  EXPECT_TRUE(r.ValidateOptions(sq, {{"square.size", "2"}}).ok());
  EXPECT_TRUE(r.ValidateOptions(tri, {}).ok());
  Status bad = r.ValidateOptions(sq, {{"square.size", "2"}, {"square.sise", "3"}});
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(),
            "shape 'square': got option 'square.sise', must be one of square.size, square.color");
  EXPECT_EQ(r.ValidateOptions(tri, {{"square.size", "2"}}).message(),
            "shape 'triangle': got option 'square.size', takes no options");
  // Shared option maps: a key is fine when some entry declares it.
  EXPECT_TRUE(r.ValidateOptionsForAny({{"square.color", "red"}}).ok());
  EXPECT_EQ(r.ValidateOptionsForAny({{"circle.radius", "1"}}).message(),
            "shape options: got 'circle.radius', must be one of square.size, square.color");
}

TEST(RegistryTest, MalformedTablesAreProgrammingErrors) {
  EXPECT_DEATH(MakeShapes().Add({{}, {}, "square", "again", &NewTriangle, {}}),
               "'square' registered twice");
  EXPECT_DEATH(ShapeRegistry("shape").Add({{}, {}, "", "no name", &NewTriangle, {}}), "empty name");
  EXPECT_DEATH(ShapeRegistry("shape").Add({{}, {}, "t", "no factory", nullptr, {}}), "no factory");
  EXPECT_DEATH(ShapeRegistry("shape").Add({{}, {}, "t", "d", &NewTriangle, {{"k", ""}, {"k", ""}}}),
               "declares option 'k' twice");
}

}  // namespace
}  // namespace tessera::core
