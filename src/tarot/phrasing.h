// What a reasoner says about a target it has in mind, from the program alone (no image): the
// short noun phrases ERI prompts the segmenter with, evaluation-aware rephrasings, and the short
// and long variants of a description. The oracle, noisy and rule reasoners share these, so they
// differ only in which target they have in mind.
//   NounPhrasesFor  2-8 word phrases, most specific first: "small red star", "red star",
//                   "the star"; parts as "roof of the red house", "house roof".
//   RephrasingsOf   2-5 word alternatives of a phrase: category synonyms ("red disc"), fewer
//                   attributes, "the <noun>"; the caller takes the first not tried.
//   ShortProgram    the target with its colour (and part) only: no size, ordinal or relation.
//   FullProgram     the target with every attribute `attrs` gives (colour and size), keeping the
//                   ordinal or relation.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tarot/program.h"

namespace tessera::tarot {

std::vector<std::string> NounPhrasesFor(const Program& p, int n);
std::vector<std::string> RephrasingsOf(const std::string& phrase);
// The first of RephrasingsOf(phrase) not in `tried`, or nullopt.
std::optional<std::string> RephraseNotTried(const std::string& phrase,
                                            const std::vector<std::string>& tried);
Program ShortProgram(const Program& p);
Program FullProgram(const Program& p, const std::string& colour, const std::string& size);

}  // namespace tessera::tarot
