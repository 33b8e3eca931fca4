#include "tarot/phrasing.h"

#include <algorithm>

#include "tarot/query_parser.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

constexpr int kMinPhraseWords = 2, kMaxPhraseWords = 8, kMaxRephraseWords = 5;

void AddUnique(std::vector<std::string>& out, const std::string& phrase, int max_words) {
  const int n = static_cast<int>(Words(phrase).size());
  if (n < kMinPhraseWords || n > max_words) return;
  if (std::find(out.begin(), out.end(), phrase) == out.end()) out.push_back(phrase);
}

std::string Noun(const std::string& category, bool plural) {
  const int ci = CategoryIndex(category);
  if (ci >= 0) return plural ? Categories()[ci].plural : category;
  return plural ? category + "s" : category;
}

std::string Join(std::initializer_list<std::string> words) {
  std::vector<std::string> w;
  for (const std::string& s : words)
    if (!s.empty()) w.push_back(s);
  return JoinWords(w);
}

}  // namespace

std::vector<std::string> NounPhrasesFor(const Program& p, int n) {
  std::vector<std::string> out;
  const ObjectSpec& s = p.target;
  const std::string noun = Noun(s.category, p.plural);
  if (p.part.empty()) {
    AddUnique(out, Join({s.size, s.colour, noun}), kMaxPhraseWords);
    AddUnique(out, Join({s.colour, noun}), kMaxPhraseWords);
    AddUnique(out, Join({s.size, noun}), kMaxPhraseWords);
    AddUnique(out, "the " + noun, kMaxPhraseWords);
  } else {
    AddUnique(out, Join({p.part, "of the", s.size, s.colour, noun}), kMaxPhraseWords);
    AddUnique(out, Join({p.part, "of the", s.colour, noun}), kMaxPhraseWords);
    AddUnique(out, Join({s.colour, noun, p.part}), kMaxPhraseWords);
    AddUnique(out, Join({noun, p.part}), kMaxPhraseWords);
  }
  if (static_cast<int>(out.size()) > n) out.resize(std::max(0, n));
  return out;
}

std::vector<std::string> RephrasingsOf(const std::string& phrase) {
  std::vector<std::string> out;
  const ParseResult r = ParseQuery(phrase);
  if (!r.ok) return out;
  const ObjectSpec& s = r.program.target;
  const std::string& part = r.program.part;
  std::vector<std::string> nouns = {Noun(s.category, r.program.plural)};
  const int ci = CategoryIndex(s.category);
  if (ci >= 0) {
    for (const std::string& syn : Categories()[ci].synonyms)
      nouns.push_back(r.program.plural ? syn + (syn.ends_with("s") ? "es" : "s") : syn);
  }
  for (const std::string& noun : nouns) {
    if (part.empty()) {
      AddUnique(out, Join({s.colour, noun}), kMaxRephraseWords);
      AddUnique(out, Join({s.size, s.colour, noun}), kMaxRephraseWords);
      AddUnique(out, Join({s.size, noun}), kMaxRephraseWords);
    } else {
      AddUnique(out, Join({s.colour, noun, part}), kMaxRephraseWords);
      AddUnique(out, Join({part, "of the", noun}), kMaxRephraseWords);
      AddUnique(out, Join({noun, part}), kMaxRephraseWords);
    }
  }
  for (const std::string& noun : nouns) AddUnique(out, "the " + noun, kMaxRephraseWords);
  if (HasSilhouette(ci) && Categories()[ci].is_shape && part.empty())
    AddUnique(out, Join({s.colour, nouns[0], "shape"}), kMaxRephraseWords);
  return out;
}

std::optional<std::string> RephraseNotTried(const std::string& phrase,
                                            const std::vector<std::string>& tried) {
  for (const std::string& r : RephrasingsOf(phrase)) {
    if (r == phrase) continue;
    if (std::find(tried.begin(), tried.end(), r) == tried.end()) return r;
  }
  return std::nullopt;
}

Program ShortProgram(const Program& p) {
  Program s;
  s.target.category = p.target.category;
  s.target.colour = p.target.colour;
  s.part = p.part;
  s.plural = p.plural;
  return s;
}

Program FullProgram(const Program& p, const std::string& colour, const std::string& size) {
  Program f = p;
  if (!colour.empty()) f.target.colour = colour;
  if (!size.empty()) f.target.size = size;
  return f;
}

}  // namespace tessera::tarot
