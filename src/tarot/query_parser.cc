#include "tarot/query_parser.h"

#include <algorithm>
#include <vector>

#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

struct Token {
  enum Kind { kWord, kFact, kRelation, kAxis } kind = kWord;
  std::string word;
  std::string fact_phrase;  // kFact: the phrase (a part-function phrase has several rows)
  FactKind fact_kind = FactKind::kObject;
  Relation relation = Relation::kNone;
  Axis axis = Axis::kNone;
};

struct MultiWord {
  std::vector<std::string> words;
  Token token;
};

const std::vector<MultiWord>& Phrases(bool facts) {
  static const std::vector<MultiWord> with_facts = [] {
    std::vector<MultiWord> m;
    for (const Fact& f : Facts()) {
      Token t;
      t.kind = Token::kFact;
      t.fact_phrase = f.phrase;
      t.fact_kind = f.kind;
      m.push_back({Words(f.phrase), t});
    }
    return m;
  }();
  static const std::vector<MultiWord> common = [] {
    std::vector<MultiWord> m;
    for (const Phrase& p : RelationPhrases()) {
      Token t;
      t.kind = Token::kRelation;
      t.relation = *ParseRelationName(p.value);
      m.push_back({Words(p.text), t});
    }
    for (const Phrase& p : AxisPhrases()) {
      Token t;
      t.kind = Token::kAxis;
      t.axis = *ParseAxisName(p.value);
      m.push_back({Words(p.text), t});
    }
    return m;
  }();
  static const std::vector<MultiWord> all = [] {
    std::vector<MultiWord> m = with_facts;
    m.insert(m.end(), common.begin(), common.end());
    std::stable_sort(m.begin(), m.end(), [](const MultiWord& a, const MultiWord& b) {
      return a.words.size() > b.words.size();
    });
    return m;
  }();
  static const std::vector<MultiWord> no_facts = [] {
    std::vector<MultiWord> m = common;
    std::stable_sort(m.begin(), m.end(), [](const MultiWord& a, const MultiWord& b) {
      return a.words.size() > b.words.size();
    });
    return m;
  }();
  return facts ? all : no_facts;
}

bool In(const std::string& w, std::initializer_list<const char*> set) {
  for (const char* s : set)
    if (w == s) return true;
  return false;
}

// The length of a position hint starting at words[i], or 0.
size_t HintLength(const std::vector<std::string>& w, size_t i) {
  if (i + 1 >= w.size() || w[i] != "in" || w[i + 1] != "the") return 0;
  size_t j = i + 2;
  if (j < w.size() && In(w[j], {"upper", "lower"})) ++j;
  if (j < w.size() && In(w[j], {"left", "right", "centre"})) ++j;
  const char* tail[] = {"area", "of", "the", "picture"};
  for (const char* t : tail) {
    if (j >= w.size() || w[j] != t) return 0;
    ++j;
  }
  return j - i;
}

std::vector<Token> Tokenise(const std::vector<std::string>& w, bool facts) {
  std::vector<Token> out;
  for (size_t i = 0; i < w.size();) {
    if (size_t h = HintLength(w, i)) {
      i += h;
      continue;
    }
    bool matched = false;
    for (const MultiWord& m : Phrases(facts)) {
      if (i + m.words.size() > w.size()) continue;
      if (!std::equal(m.words.begin(), m.words.end(), w.begin() + static_cast<long>(i))) continue;
      out.push_back(m.token);
      i += m.words.size();
      matched = true;
      break;
    }
    if (matched) continue;
    Token t;
    t.word = w[i++];
    out.push_back(t);
  }
  return out;
}

const std::string* Lookup(const std::vector<Phrase>& table, const std::string& w) {
  for (const Phrase& p : table)
    if (p.text == w) return &p.value;
  return nullptr;
}

// A category noun: sets *category and *plural.
bool CategoryNoun(const std::string& w, std::string* category, bool* plural) {
  for (const CategoryInfo& c : Categories()) {
    std::vector<std::string> nouns = {c.name};
    nouns.insert(nouns.end(), c.synonyms.begin(), c.synonyms.end());
    for (const std::string& n : nouns) {
      const bool es =
          n.ends_with("s") || n.ends_with("x") || n.ends_with("sh") || n.ends_with("ch");
      const std::string pl = n == c.name ? c.plural : n + (es ? "es" : "s");
      if (w == n || w == pl) {
        *category = c.name;
        *plural = w == pl;
        return true;
      }
    }
  }
  return false;
}

struct NounPhrase {
  ObjectSpec spec;
  std::string part;
  bool plural = false;
  int facts = 0;
  std::string part_function;  // a part-function phrase, resolved once the category is known
  bool any = false;           // anything recognised
};

NounPhrase ParseNp(const std::vector<Token>& toks) {
  NounPhrase np;
  std::string generic;
  bool generic_plural = false;
  for (const Token& t : toks) {
    if (t.kind == Token::kAxis) {
      np.spec.axis = t.axis;
      continue;
    }
    if (t.kind == Token::kFact) {
      ++np.facts;
      np.any = true;
      for (const Fact& f : Facts()) {
        if (f.phrase != t.fact_phrase) continue;
        switch (f.kind) {
          case FactKind::kObject:
          case FactKind::kShape:
            np.spec.category = f.category;
            break;
          case FactKind::kPart:
            np.spec.category = f.category;
            np.part = f.part;
            break;
          case FactKind::kColour:
            np.spec.colour = f.colour;
            break;
          case FactKind::kPartFunction:
            np.part_function = f.phrase;
            break;
        }
        break;
      }
      continue;
    }
    if (t.kind != Token::kWord) continue;
    const std::string& w = t.word;
    std::string cat;
    bool plural = false;
    if (const std::string* o = Lookup(OrdinalWords(), w)) {
      np.spec.ordinal = (*o)[0] - '0';
      if (o->size() > 2) np.spec.axis = *ParseAxisName(o->substr(2));
      np.any = true;
    } else if (const std::string* z = Lookup(SizeWords(), w)) {
      np.spec.size = *z;
      np.any = true;
    } else if (const std::string* c = Lookup(ColourWords(), w)) {
      np.spec.colour = *c;
      np.any = true;
    } else if (CategoryNoun(w, &cat, &plural)) {
      if (np.spec.category.empty()) {
        np.spec.category = cat;
        np.plural = plural;
      }
      np.any = true;
    } else if (In(w, {"shape", "shapes", "object", "objects", "thing", "things"})) {
      if (generic.empty()) {
        generic = In(w, {"shape", "shapes"}) ? kGenericShape : kGenericObject;
        generic_plural = w.ends_with("s");
      }
      np.any = true;
    } else if (std::find(PartNames().begin(), PartNames().end(), w) != PartNames().end()) {
      if (np.part.empty()) np.part = w;
      np.any = true;
    }
  }
  if (np.spec.category.empty() && !generic.empty()) {
    np.spec.category = generic;
    np.plural = generic_plural;
  }
  if (!np.part_function.empty() && !np.spec.category.empty()) {
    for (const Fact& f : Facts())
      if (f.phrase == np.part_function && f.category == np.spec.category) np.part = f.part;
  }
  if (np.spec.category.empty() && !np.part.empty()) {
    std::string only;
    int n = 0;
    for (const CategoryInfo& c : Categories()) {
      if (std::find(c.parts.begin(), c.parts.end(), np.part) != c.parts.end()) {
        only = c.name;
        ++n;
      }
    }
    np.spec.category = n == 1 ? only : kGenericObject;
  }
  if (np.spec.category.empty() && np.any) np.spec.category = kGenericObject;
  if (np.spec.ordinal > 0 && np.spec.axis == Axis::kNone) np.spec.axis = Axis::kFromLeft;
  if (np.spec.ordinal == 0) np.spec.axis = Axis::kNone;
  return np;
}

}  // namespace

ParseResult ParseQuery(std::string_view text, const ParseOptions& options) {
  ParseResult r;
  const std::vector<std::string> words = Words(text);
  r.words = static_cast<int>(words.size());
  for (const std::string& w : words) {
    if (std::find(RelationWords().begin(), RelationWords().end(), w) != RelationWords().end())
      r.relation_words = true;
  }
  const std::vector<Token> toks = Tokenise(words, options.facts);
  auto rel = std::find_if(toks.begin(), toks.end(),
                          [](const Token& t) { return t.kind == Token::kRelation; });
  const NounPhrase target = ParseNp(std::vector<Token>(toks.begin(), rel));
  r.facts = target.facts;
  if (!target.any || (!target.part_function.empty() && target.part.empty())) {
    r.error = target.any ? "the part function names no part of a " + target.spec.category
                         : "no category, part or attribute of the refscenes vocabulary";
    return r;
  }
  r.program.target = target.spec;
  r.program.part = target.part;
  r.program.plural = target.plural;
  if (rel != toks.end()) {
    const NounPhrase ref = ParseNp(std::vector<Token>(rel + 1, toks.end()));
    r.facts += ref.facts;
    if (ref.any) {  // a relation to nothing known ("left of it") is ignored
      r.program.relation = rel->relation;
      r.program.reference = ref.spec;
    }
  }
  r.ok = true;
  const Program& p = r.program;
  if (r.facts >= 2 || (r.facts == 1 && p.relation != Relation::kNone)) {
    r.tier = Tier::kI2;
  } else if (r.facts == 1) {
    r.tier = Tier::kI1;
  } else if (r.words >= 15) {
    r.tier = Tier::kE4;
  } else if (p.relation != Relation::kNone) {
    r.tier = Tier::kE3;
  } else if (p.target.ordinal > 0) {
    r.tier = Tier::kE2;
  } else if (!p.target.colour.empty() || !p.target.size.empty()) {
    r.tier = Tier::kE1;
  } else {
    r.tier = Tier::kE0;
  }
  return r;
}

}  // namespace tessera::tarot
