#include "tarot/reasoner.h"

namespace tessera::tarot {

const char* ScopeName(Scope s) {
  switch (s) {
    case Scope::kWholeObject:
      return "whole_object";
    case Scope::kPart:
      return "part";
    case Scope::kRegion:
      return "region";
    case Scope::kGroup:
      return "group";
    case Scope::kCollection:
      return "collection";
  }
  return "?";
}

}  // namespace tessera::tarot
