#include "compass/strategy_name.h"

#include <algorithm>

#include "core/check.h"
#include "core/parse_number.h"

namespace tessera::compass {

const std::vector<StrategyFamily>& AllStrategyFamilies() {
  static const std::vector<StrategyFamily> kAll = {
      StrategyFamily::kNone,        StrategyFamily::kFusedRing1, StrategyFamily::kFusedRing2,
      StrategyFamily::kFusedDirect, StrategyFamily::kDecomp,     StrategyFamily::kTe,
      StrategyFamily::kMpi};
  return kAll;
}

const std::vector<StrategyFamily>& FittedStrategyFamilies() {
  static const std::vector<StrategyFamily> kFitted = {
      StrategyFamily::kNone, StrategyFamily::kFusedRing1, StrategyFamily::kFusedRing2,
      StrategyFamily::kFusedDirect, StrategyFamily::kDecomp};
  return kFitted;
}

const std::vector<StrategyFamily>& SelectorFixedFamilies() {
  static const std::vector<StrategyFamily> kFixed = {
      StrategyFamily::kNone, StrategyFamily::kFusedRing1, StrategyFamily::kFusedRing2,
      StrategyFamily::kFusedDirect};
  return kFixed;
}

const char* StrategyFamilyName(StrategyFamily family) {
  switch (family) {
    case StrategyFamily::kNone:
      return "none";
    case StrategyFamily::kFusedRing1:
      return "fused-ring1";
    case StrategyFamily::kFusedRing2:
      return "fused-ring2";
    case StrategyFamily::kFusedDirect:
      return "fused-direct";
    case StrategyFamily::kDecomp:
      return "decomp";
    case StrategyFamily::kTe:
      return "te";
    case StrategyFamily::kMpi:
      return "mpi";
  }
  return "?";
}

std::optional<StrategyFamily> ParseStrategyFamily(std::string_view name) {
  for (StrategyFamily f : AllStrategyFamilies()) {
    if (name == StrategyFamilyName(f)) return f;
  }
  return std::nullopt;
}

bool TakesDegree(StrategyFamily family) { return family == StrategyFamily::kDecomp; }

bool IsFittedFamily(StrategyFamily family) {
  const std::vector<StrategyFamily>& f = FittedStrategyFamilies();
  return std::find(f.begin(), f.end(), family) != f.end();
}

std::string FittedFamilyList() {
  std::string out;
  for (StrategyFamily f : FittedStrategyFamilies()) {
    out += (out.empty() ? "" : ", ") + std::string(StrategyFamilyName(f));
  }
  return out;
}

StrategyName StrategyName::Of(StrategyFamily family, int degree) {
  if (TakesDegree(family)) {
    CHECK(degree >= 1 && degree <= kMaxStrategyDegree) << "decomp degree " << degree;
  } else {
    CHECK(degree == 0) << StrategyFamilyName(family) << " takes no degree";
  }
  return StrategyName{family, degree};
}

core::StatusOr<StrategyName> StrategyName::Parse(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string base = text.substr(0, colon);
  const std::optional<StrategyFamily> family = ParseStrategyFamily(base);
  if (!family) {
    std::string names;
    for (StrategyFamily f : AllStrategyFamilies()) {
      names += (names.empty() ? "" : ", ") + std::string(StrategyFamilyName(f)) +
               (TakesDegree(f) ? ":D" : "");
    }
    return core::InvalidArgument("strategy: got '" + text + "', must be one of " + names);
  }
  if (!TakesDegree(*family)) {
    if (colon != std::string::npos) {
      return core::InvalidArgument("strategy: got '" + text + "', " + base + " takes no degree");
    }
    return StrategyName{*family, 0};
  }
  if (colon == std::string::npos) {
    return core::InvalidArgument("strategy: got '" + text + "', must be " + base +
                                 ":D with D the number of parts");
  }
  auto d = core::ParseInteger(text.substr(colon + 1), 1, kMaxStrategyDegree);
  if (!d.ok()) {
    return core::InvalidArgument("strategy: got '" + text + "': the degree " +
                                 d.status().message());
  }
  return StrategyName{*family, static_cast<int>(*d)};
}

std::string StrategyName::Name() const {
  std::string name = StrategyFamilyName(family);
  if (TakesDegree(family)) name += ":" + std::to_string(degree);
  return name;
}

}  // namespace tessera::compass
