// The refscenes grammar parser: a referring expression (any tier) -> its program, from the
// vocabulary alone (no scene). The rule reasoner parses queries with it, the oracle falls back to
// it for texts it did not generate, and the synthetic segmenter reads its phrases with it (facts
// off: SAM3 does not know that "what gives shade" is a tree's crown).
//
// Reading, in order: words (lower case, punctuation dropped); multi-word phrases become tokens
// (fact-table phrases when `facts`, relation phrases "to the left of", axis phrases "from the
// top"), position hints ("in the upper left area of the picture") are dropped; the first relation
// splits target from reference; each side is a noun phrase whose known words set the spec
// (ordinal words, size and colour words, category nouns and synonyms, plurals, generic nouns,
// part words, fact tokens) and whose other words are ignored (filler); a relation whose reference
// names nothing known ("left of it") is dropped. A part without a category
// takes the one category with that part, else "object"; attributes without a noun take "object".
// The tier the text reads as: I2 with two facts or a fact and a relation, I1 with one fact, E4
// from 15 words, E3 with a relation, E2 with an ordinal, E1 with a colour or size, else E0.
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>

#include "tarot/program.h"

namespace tessera::tarot {

struct ParseOptions {
  bool facts = true;  // resolve fact-table phrases
};

struct ParseResult {
  bool ok = false;    // a target was found (its category, a part or an attribute)
  std::string error;  // why not, when !ok
  Program program;
  Tier tier = Tier::kE0;
  int facts = 0;  // fact-table phrases used
  int words = 0;
  bool relation_words = false;  // any word of RelationWords() (left, above, next, ...)
};

ParseResult ParseQuery(std::string_view text, const ParseOptions& options = {});

}  // namespace tessera::tarot
