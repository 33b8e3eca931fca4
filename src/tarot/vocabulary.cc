#include "tarot/vocabulary.h"

#include <algorithm>
#include <cctype>

#include "core/check.h"

namespace tessera::tarot {
namespace {

std::vector<CategoryInfo> BuildCategories() {
  const std::vector<std::string> all = {"red",    "orange", "yellow", "green", "blue",
                                        "purple", "pink",   "brown",  "gray",  "black"};
  std::vector<CategoryInfo> c;
  auto shape = [&](std::string name, std::string plural, std::vector<std::string> syn) {
    c.push_back({std::move(name), std::move(plural), std::move(syn), true, {}, all, {}});
  };
  shape("circle", "circles", {"disc", "disk"});
  shape("square", "squares", {});
  shape("triangle", "triangles", {});
  shape("star", "stars", {});
  shape("diamond", "diamonds", {"rhombus"});
  shape("hexagon", "hexagons", {});
  shape("cross", "crosses", {});
  c.push_back({"house",
               "houses",
               {"cottage"},
               false,
               {"body", "roof", "door"},
               {"red", "orange", "yellow", "green", "blue", "purple", "pink", "gray"},
               {{"red", "brown", "gray", "black", "blue"}, {"brown", "black", "green", "purple"}}});
  c.push_back({"tree",
               "trees",
               {},
               false,
               {"crown", "trunk"},
               {"green", "orange", "yellow", "red"},
               {{"brown"}}});
  c.push_back({"cup",
               "cups",
               {"mug"},
               false,
               {"body", "handle"},
               {"red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "gray"},
               {{"same"}}});
  c.push_back({"umbrella",
               "umbrellas",
               {"parasol"},
               false,
               {"canopy", "handle"},
               {"red", "orange", "yellow", "green", "blue", "purple", "pink"},
               {{"black", "gray", "brown"}}});
  c.push_back({"mushroom",
               "mushrooms",
               {"toadstool"},
               false,
               {"cap", "stem"},
               {"red", "brown", "orange", "purple"},
               {{"gray", "yellow", "orange"}}});
  // The fashion family, in Fashion-MNIST label order; every palette colour.
  auto item = [&](std::string name, std::string plural, std::vector<std::string> syn) {
    c.push_back({std::move(name),
                 std::move(plural),
                 std::move(syn),
                 true,
                 {},
                 all,
                 {},
                 CategoryFamily::kFashion});
  };
  item("t-shirt", "t-shirts", {"tee"});
  item("trouser", "trousers", {"pant"});
  item("pullover", "pullovers", {"sweater", "jumper"});
  item("dress", "dresses", {"gown"});
  item("coat", "coats", {"jacket"});
  item("sandal", "sandals", {});
  item("shirt", "shirts", {"blouse"});
  item("sneaker", "sneakers", {"trainer"});
  item("bag", "bags", {"handbag"});
  item("boot", "boots", {});
  return c;
}

std::vector<Fact> BuildFacts() {
  using K = FactKind;
  return {
      {K::kObject, "where a family lives", "house", "", ""},
      {K::kObject, "what you drink coffee from", "cup", "", ""},
      {K::kObject, "what birds build their nests in", "tree", "", ""},
      {K::kObject, "what you open when it rains", "umbrella", "", ""},
      {K::kObject, "what springs up in a damp forest", "mushroom", "", ""},
      {K::kPart, "where rain can't reach you", "house", "roof", ""},
      {K::kPart, "where you knock to get in", "house", "door", ""},
      {K::kPart, "where the rooms are", "house", "body", ""},
      {K::kPart, "what gives shade", "tree", "crown", ""},
      {K::kPart, "what you could carve your initials into", "tree", "trunk", ""},
      {K::kPart, "what you hold a hot drink by", "cup", "handle", ""},
      {K::kPart, "where the coffee goes", "cup", "body", ""},
      {K::kPart, "what the raindrops drum on", "umbrella", "canopy", ""},
      {K::kPart, "what you grip on a stormy walk", "umbrella", "handle", ""},
      {K::kPart, "what looks like a hat in the woods", "mushroom", "cap", ""},
      {K::kPart, "what the fungus stands on", "mushroom", "stem", ""},
      {K::kShape, "the shape with no corners", "circle", "", ""},
      {K::kShape, "the shape like a window pane", "square", "", ""},
      {K::kShape, "the shape with three corners", "triangle", "", ""},
      {K::kShape, "the shape with five points", "star", "", ""},
      {K::kShape, "the shape standing on one corner", "diamond", "", ""},
      {K::kShape, "the shape with six sides", "hexagon", "", ""},
      {K::kShape, "the shape like a plus sign", "cross", "", ""},
      {K::kColour, "the colour of a fire truck", "", "", "red"},
      {K::kColour, "the colour of a carrot", "", "", "orange"},
      {K::kColour, "the colour of a banana", "", "", "yellow"},
      {K::kColour, "the colour of grass", "", "", "green"},
      {K::kColour, "the colour of the sky", "", "", "blue"},
      {K::kColour, "the colour of a plum", "", "", "purple"},
      {K::kColour, "the colour of a flamingo", "", "", "pink"},
      {K::kColour, "the colour of chocolate", "", "", "brown"},
      {K::kColour, "the colour of an elephant", "", "", "gray"},
      {K::kColour, "the colour of coal", "", "", "black"},
      {K::kPartFunction, "the part you hold", "cup", "handle", ""},
      {K::kPartFunction, "the part you hold", "umbrella", "handle", ""},
      {K::kPartFunction, "the top part", "house", "roof", ""},
      {K::kPartFunction, "the top part", "tree", "crown", ""},
      {K::kPartFunction, "the top part", "umbrella", "canopy", ""},
      {K::kPartFunction, "the top part", "mushroom", "cap", ""},
      {K::kPartFunction, "the part it stands on", "tree", "trunk", ""},
      {K::kPartFunction, "the part it stands on", "mushroom", "stem", ""},
      {K::kPartFunction, "the part you walk through", "house", "door", ""},
      // The fashion items: one object fact per class, naming that class alone.
      {K::kObject, "what has short sleeves and no collar", "t-shirt", "", ""},
      {K::kObject, "what has two legs and a waistband", "trouser", "", ""},
      {K::kObject, "what grandma knits from wool for winter", "pullover", "", ""},
      {K::kObject, "what a bride walks down the aisle in", "dress", "", ""},
      {K::kObject, "what you button up against the cold", "coat", "", ""},
      {K::kObject, "what you wear on your feet at the beach", "sandal", "", ""},
      {K::kObject, "what you wear with a tie", "shirt", "", ""},
      {K::kObject, "what you lace up to go running", "sneaker", "", ""},
      {K::kObject, "what you carry your shopping in", "bag", "", ""},
      {K::kObject, "what keeps your feet dry in the snow", "boot", "", ""},
  };
}

}  // namespace

const char* CategoryFamilyName(CategoryFamily f) {
  return f == CategoryFamily::kRefscenes ? "refscenes" : "fashion";
}

const std::vector<CategoryInfo>& Categories() {
  static const std::vector<CategoryInfo> c = BuildCategories();
  return c;
}

bool HasSilhouette(int c) {
  return c >= 0 && c < static_cast<int>(Categories().size()) &&
         Categories()[c].family == CategoryFamily::kRefscenes;
}

int FashionCategory(int label) {
  static const int first = [] {
    const auto& c = Categories();
    for (size_t i = 0; i < c.size(); ++i)
      if (c[i].family == CategoryFamily::kFashion) return static_cast<int>(i);
    return -1;
  }();
  CHECK(label >= 0 && label < 10 && first >= 0) << "fashion label " << label;
  return first + label;
}

int FashionLabel(std::string_view name) {
  const int ci = CategoryIndex(name);
  if (ci < 0 || Categories()[ci].family != CategoryFamily::kFashion) return -1;
  return ci - FashionCategory(0);
}

int CategoryIndex(std::string_view name) {
  const auto& c = Categories();
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i].name == name) return static_cast<int>(i);
  return -1;
}

int PartIndex(int category, std::string_view part) {
  if (category < 0 || category >= static_cast<int>(Categories().size())) return -1;
  const auto& parts = Categories()[category].parts;
  for (size_t i = 0; i < parts.size(); ++i)
    if (parts[i] == part) return static_cast<int>(i);
  return -1;
}

const std::vector<std::string>& PartNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const CategoryInfo& c : Categories())
      for (const std::string& p : c.parts)
        if (std::find(n.begin(), n.end(), p) == n.end()) n.push_back(p);
    return n;
  }();
  return names;
}

bool IsGenericCategory(std::string_view name) {
  return name == kGenericShape || name == kGenericObject;
}

bool CategoryCovers(std::string_view category, std::string_view concrete) {
  if (category == kGenericObject) return true;
  if (category == kGenericShape) {
    const int i = CategoryIndex(concrete);
    return i >= 0 && Categories()[i].is_shape && HasSilhouette(i);
  }
  return category == concrete;
}

const std::vector<PaletteColour>& Palette() {
  static const std::vector<PaletteColour> p = {
      {"red", {210, 40, 40}},    {"orange", {240, 140, 30}}, {"yellow", {235, 210, 40}},
      {"green", {50, 160, 60}},  {"blue", {40, 90, 210}},    {"purple", {130, 60, 170}},
      {"pink", {235, 120, 180}}, {"brown", {120, 75, 40}},   {"gray", {128, 128, 128}},
      {"black", {30, 30, 30}},
  };
  return p;
}

int ColourIndex(std::string_view name) {
  const auto& p = Palette();
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i].name == name) return static_cast<int>(i);
  return -1;
}

const std::vector<std::string>& SizeNames() {
  static const std::vector<std::string> s = {"small", "medium", "large"};
  return s;
}

int SizeIndex(std::string_view name) {
  const auto& s = SizeNames();
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] == name) return static_cast<int>(i);
  return -1;
}

double SizeFraction(int size_index) {
  static constexpr double kFractions[kSizeCount] = {0.055, 0.085, 0.12};
  return kFractions[std::clamp(size_index, 0, kSizeCount - 1)];
}

int SizeClassOf(double half_size_fraction) {
  int best = 0;
  for (int i = 1; i < kSizeCount; ++i)
    if (half_size_fraction > 0.5 * (SizeFraction(i - 1) + SizeFraction(i))) best = i;
  return best;
}

const std::vector<Fact>& Facts() {
  static const std::vector<Fact> f = BuildFacts();
  return f;
}

const std::vector<Phrase>& RelationPhrases() {
  static const std::vector<Phrase> r = {
      {"to the left of", "left_of"},
      {"to the right of", "right_of"},
      {"left of", "left_of"},
      {"right of", "right_of"},
      {"above", "above"},
      {"below", "below"},
      {"closest to", "closest_to"},
      {"nearest to", "closest_to"},
  };
  return r;
}

const std::vector<std::string>& RelationWords() {
  static const std::vector<std::string> w = {
      "left", "right",    "above",     "below",   "closest",   "nearest",
      "near", "next",     "beside",    "behind",  "between",   "under",
      "over", "leftmost", "rightmost", "topmost", "bottommost"};
  return w;
}

const std::vector<Phrase>& OrdinalWords() {
  static const std::vector<Phrase> o = {
      {"first", "1"},         {"second", "2"},
      {"third", "3"},         {"fourth", "4"},
      {"fifth", "5"},         {"sixth", "6"},
      {"leftmost", "1 left"}, {"rightmost", "1 right"},
      {"topmost", "1 top"},   {"bottommost", "1 bottom"},
  };
  return o;
}

const std::vector<Phrase>& AxisPhrases() {
  static const std::vector<Phrase> a = {{"from the left", "left"},
                                        {"from the right", "right"},
                                        {"from the top", "top"},
                                        {"from the bottom", "bottom"}};
  return a;
}

const std::vector<Phrase>& SizeWords() {
  static const std::vector<Phrase> s = {
      {"small", "small"},         {"little", "small"}, {"tiny", "small"}, {"medium", "medium"},
      {"medium-sized", "medium"}, {"large", "large"},  {"big", "large"},
  };
  return s;
}

const std::vector<Phrase>& ColourWords() {
  static const std::vector<Phrase> c = [] {
    std::vector<Phrase> v;
    for (const PaletteColour& p : Palette()) v.push_back({p.name, p.name});
    v.push_back({"grey", "gray"});
    return v;
  }();
  return c;
}

const std::vector<std::string>& FillerOpeners() {
  static const std::vector<std::string> o = {
      "in this picture i would like you to find",
      "please look carefully at the image and segment",
      "there is a lot going on here but i only want",
      "your task is to outline",
      "can you carefully mark",
      "look at the whole scene and then pick out",
  };
  return o;
}

const std::vector<std::string>& FillerClosers() {
  static const std::vector<std::string> c = {
      "and nothing else please",
      "making sure its outline is accurate",
      "without including any of the others",
      "thank you very much",
      "as precisely as you can",
  };
  return c;
}

std::string PositionHint(double cx_fraction, double cy_fraction) {
  const char* v = cy_fraction < 1.0 / 3 ? "upper" : cy_fraction < 2.0 / 3 ? "" : "lower";
  const char* h = cx_fraction < 1.0 / 3 ? "left" : cx_fraction < 2.0 / 3 ? "" : "right";
  std::string where = std::string(v) + (*v && *h ? " " : "") + h;
  if (where.empty()) where = "centre";
  return "in the " + where + " area of the picture";
}

std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> words;
  std::string cur;
  for (char ch : text) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (std::isalnum(u) || ch == '\'' || ch == '-') {
      cur.push_back(static_cast<char>(std::tolower(u)));
    } else if (!cur.empty()) {
      words.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  return words;
}

std::string JoinWords(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

}  // namespace tessera::tarot
