// The vocabulary of the benchmark sets (refscenes and fmnist): everything their scenes and
// expressions are made of and every word their grammar uses, as fixed tables shared by the
// generator, the grammar parser, the synthetic segmenter and the rule reasoner (the rule reasoner
// knows these words and what the categories look like, never a scene's ground truth).
//   categories  two families. refscenes: seven simple shapes (circle, square, ...) and five
//               things with parts (house = body + roof + door, tree = crown + trunk, cup = body +
//               handle, umbrella = canopy + handle, mushroom = cap + stem); the main part first.
//               fashion (the fmnist set): the ten Fashion-MNIST classes in label order (t-shirt,
//               trouser, pullover, dress, coat, sandal, shirt, sneaker, bag, boot), no parts,
//               drawn from dataset items rather than silhouettes. Each has a plural and synonyms
//               ("disc" for circle, "mug" for cup, "sweater" for pullover).
//   generic nouns  "shape" (any refscenes simple shape) and "object"/"thing" (anything), with
//               plurals.
//   palette     ten named colours, each an RGB value; "grey" reads as gray.
//   sizes       small / medium / large, a half-size as a fraction of the image's shorter side;
//               "little", "tiny", "big", "medium-sized" read as those.
//   facts       the fixed fact table of the implicit tiers: phrases that name an object ("what
//               you drink coffee from" -> cup), a part ("where rain can't reach you" -> the
//               house's roof), a shape ("the shape with five points" -> star), a colour ("the
//               colour of grass" -> green) or a part by function ("the part you hold" -> the
//               handle of a cup or an umbrella); fashion items have object facts only ("what you
//               carry your shopping in" -> bag), each naming exactly one class.
//   relation, ordinal and axis phrases, relation words the segmenter cannot follow, and the
//   filler and position-hint phrases of long (E4) expressions (no vocabulary word inside them).
// Thread-safety: immutable tables built on first use; thread-safe to read.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tarot/types.h"

namespace tessera::tarot {

enum class CategoryFamily {
  kRefscenes,  // drawn from a silhouette (tarot/silhouettes.h)
  kFashion,    // drawn from a Fashion-MNIST item (tarot/fashion_mnist.h)
};
// "refscenes" or "fashion".
const char* CategoryFamilyName(CategoryFamily f);

struct CategoryInfo {
  std::string name;    // "star"
  std::string plural;  // "stars"
  std::vector<std::string> synonyms;
  bool is_shape = true;            // no parts (a simple shape or a fashion item) or a thing
                                   // with parts
  std::vector<std::string> parts;  // things: part names, the main part first
  // The part colours a thing may take, per part after the main one (the main part takes the
  // object's colour, one of `colours`); `same` means the main part's colour.
  std::vector<std::string> colours;                    // allowed object colours
  std::vector<std::vector<std::string>> part_colours;  // per part (index 1..), allowed colours
  CategoryFamily family = CategoryFamily::kRefscenes;
};

// In index order (refscenes simple shapes, refscenes things, then the fashion classes); an index
// is stable and used by the silhouettes (refscenes categories only).
const std::vector<CategoryInfo>& Categories();
// Is category index `c` one of the refscenes family (it has a silhouette)?
bool HasSilhouette(int c);
// The fashion category of Fashion-MNIST label `label` (0..9): its index into Categories().
int FashionCategory(int label);
// The Fashion-MNIST label of fashion category `name` (canonical), or -1.
int FashionLabel(std::string_view name);
// The index of category `name` (canonical name only), or -1.
int CategoryIndex(std::string_view name);
// The index of the part `part` of category `category`, or -1.
int PartIndex(int category, std::string_view part);
// Every part name, in first-use order (body, roof, door, crown, ...).
const std::vector<std::string>& PartNames();

// Generic nouns a program may use as its category: any refscenes simple shape, or anything.
inline constexpr const char* kGenericShape = "shape";
inline constexpr const char* kGenericObject = "object";
bool IsGenericCategory(std::string_view name);
// Does `category` (a canonical or generic name) cover the concrete category `concrete`?
bool CategoryCovers(std::string_view category, std::string_view concrete);

struct PaletteColour {
  std::string name;
  Rgb rgb;
};
const std::vector<PaletteColour>& Palette();
// The index of colour `name` in the palette, or -1.
int ColourIndex(std::string_view name);

inline constexpr int kSizeCount = 3;
// "small", "medium", "large".
const std::vector<std::string>& SizeNames();
int SizeIndex(std::string_view name);
// The nominal half-size of size class i as a fraction of the image's shorter side; objects are
// drawn within +-8% of it.
double SizeFraction(int size_index);
// The size class of a measured half-size (fraction of the shorter side): the nearest nominal
// one, thresholds at the midpoints.
int SizeClassOf(double half_size_fraction);

enum class FactKind { kObject, kPart, kShape, kColour, kPartFunction };
struct Fact {
  FactKind kind;
  std::string phrase;    // "what you drink coffee from"
  std::string category;  // kObject, kPart, kShape (and kPartFunction: the category it applies to)
  std::string part;      // kPart and kPartFunction
  std::string colour;    // kColour
};
// The fact table, phrases unique; a kPartFunction phrase has one row per category it applies to.
const std::vector<Fact>& Facts();

// One phrase of a closed class with the canonical value it stands for.
struct Phrase {
  std::string text;   // "to the left of"
  std::string value;  // "left_of"
};
// Relation phrases, longest first: left_of, right_of, above, below, closest_to.
const std::vector<Phrase>& RelationPhrases();
// Single words that mark a relation or a position (the segmenter fails on them).
const std::vector<std::string>& RelationWords();
// Ordinal words: "first" .. "sixth" -> "1" .. "6"; "leftmost" -> "1 left", ...
const std::vector<Phrase>& OrdinalWords();
// Axis phrases: "from the left" -> "left", "from the right", "from the top", "from the bottom".
const std::vector<Phrase>& AxisPhrases();
// Size words (with synonyms) -> canonical size; colour words (with "grey") -> canonical colour.
const std::vector<Phrase>& SizeWords();
const std::vector<Phrase>& ColourWords();

// Long-expression filler: openers and closers (no vocabulary word inside), and the position
// hint "in the <v> <h> area of the picture" (v in upper/middle/lower, h in left/centre/right;
// "in the centre area of the picture" for the middle).
const std::vector<std::string>& FillerOpeners();
const std::vector<std::string>& FillerClosers();
std::string PositionHint(double cx_fraction, double cy_fraction);

// Lower-case words of `text`: punctuation other than ' and - becomes a space.
std::vector<std::string> Words(std::string_view text);
std::string JoinWords(const std::vector<std::string>& words);

}  // namespace tessera::tarot
