#include "compass/profile.h"

#include <optional>
#include <string>

namespace tessera::compass {

namespace {

constexpr double kMaxSeconds = 1e6;
constexpr int64_t kMaxDim = int64_t{1} << 31;

// The array member `key` of `obj` (at most `max` elements).
core::StatusOr<const core::Json*> ArrayMember(const core::Json& obj, const std::string& path,
                                              const std::string& key, size_t max) {
  ASSIGN_OR_RETURN(const core::Json* a, core::Member(obj, path, key));
  if (!a->is_array() || a->size() > max) {
    return core::InvalidArgument(core::JoinPath(path, key) + ": got " + core::ShowJson(*a) +
                                 ", must be an array of at most " + std::to_string(max) +
                                 " entries");
  }
  return a;
}

core::StatusOr<DegreeFit> FitFromJson(const core::Json& j, const std::string& path) {
  RETURN_IF_ERROR(core::CheckKnownKeys(j, path, {"a_s", "b_s", "c_s"}));
  DegreeFit f;
  ASSIGN_OR_RETURN(f.a, core::GetDoubleInRange(j, path, "a_s", -kMaxSeconds, kMaxSeconds));
  ASSIGN_OR_RETURN(f.b, core::GetDoubleInRange(j, path, "b_s", -kMaxSeconds, kMaxSeconds));
  ASSIGN_OR_RETURN(f.c, core::GetDoubleInRange(j, path, "c_s", -kMaxSeconds, kMaxSeconds));
  return f;
}

// alpha, delta, kappa of either model form.
core::StatusOr<std::array<double, 3>> ParamsFromJson(const core::Json& j, const std::string& path) {
  RETURN_IF_ERROR(core::CheckKnownKeys(j, path, {"alpha_s", "delta_s", "kappa"}));
  std::array<double, 3> p{};
  ASSIGN_OR_RETURN(p[0], core::GetDoubleInRange(j, path, "alpha_s", -kMaxSeconds, kMaxSeconds));
  ASSIGN_OR_RETURN(p[1], core::GetDoubleInRange(j, path, "delta_s", -kMaxSeconds, kMaxSeconds));
  ASSIGN_OR_RETURN(p[2], core::GetDoubleInRange(j, path, "kappa", 1, 3));
  return p;
}

core::Json ParamsJson(double alpha_s, double delta_s, double kappa) {
  return {{"alpha_s", alpha_s}, {"delta_s", delta_s}, {"kappa", kappa}};
}

}  // namespace

core::StatusOr<double> CompassProfile::GemmSeconds(bool trans_a, int64_t m, int64_t n,
                                                   int64_t k) const {
  for (const ProfiledGemm& g : gemms) {
    if (g.trans_a == trans_a && g.m == m && g.n == n && g.k == k) return g.device_s;
  }
  return core::NotFound("profile: no GEMM " + std::string(trans_a ? "A^T " : "") + "m " +
                        std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k) +
                        " (profile the operator's grid first)");
}

core::Json ToJson(const CompassProfile& p) {
  core::Json gemms = core::Json::array();
  for (const ProfiledGemm& g : p.gemms) {
    gemms.push_back(
        {{"trans_a", g.trans_a}, {"m", g.m}, {"n", g.n}, {"k", g.k}, {"device_s", g.device_s}});
  }
  core::Json links = core::Json::array();
  for (const ProfiledLink& l : p.links) {
    links.push_back({{"kind", l.kind},
                     {"algo", l.algo},
                     {"block_wire_bytes", l.block_wire_bytes},
                     {"measured_s", l.measured_s},
                     {"modeled_s", l.modeled_s}});
  }
  core::Json ops = core::Json::array();
  for (const ProfiledOperator& o : p.operators) {
    core::Json t = core::Json::object();
    for (const auto& [d, s] : o.t_by_d) t[std::to_string(d)] = s;
    ops.push_back({{"label", o.label},
                   {"op", o.op},
                   {"m", o.m},
                   {"n", o.n},
                   {"k", o.k},
                   {"measured_s_by_degree", t},
                   {"fit", {{"a_s", o.fit.a}, {"b_s", o.fit.b}, {"c_s", o.fit.c}}},
                   {"d_star", o.d_star}});
  }
  core::Json classes = core::Json::object();
  for (const auto& [name, c] : p.classes) {
    classes[name] = {
        {"closed_form", ParamsJson(c.degree.alpha_s, c.degree.delta_s, c.degree.kappa)},
        {"pipeline", ParamsJson(c.pipeline.alpha_s, c.pipeline.delta_s, c.pipeline.kappa)}};
  }
  return {{"kind", "compass-profile"},
          {"version", 1},
          {"topology", p.topology},
          {"ranks", p.ranks},
          {"time_scale", p.time_scale},
          {"time_scale_source", p.time_scale_source},
          {"machine", p.machine},
          {"repeats", p.repeats},
          {"times", "device seconds: emulated wall time / time_scale"},
          {"gemms", gemms},
          {"links", links},
          {"contention",
           {{"m", p.contention.m},
            {"n", p.contention.n},
            {"k", p.contention.k},
            {"alone_s", p.contention.alone_s},
            {"overlapped_s", p.contention.overlapped_s},
            {"kappa", p.contention.kappa()}}},
          {"operators", ops},
          {"classes", classes},
          {"overheads", ToJson(p.overheads)}};
}

namespace {

// One entry of a profile's "gemms" at `path`.
core::StatusOr<ProfiledGemm> GemmFromJson(const core::Json& g, const std::string& path) {
  RETURN_IF_ERROR(core::CheckKnownKeys(g, path, {"trans_a", "m", "n", "k", "device_s"}));
  ProfiledGemm x;
  ASSIGN_OR_RETURN(const core::Json* t, core::Member(g, path, "trans_a"));
  if (!t->is_boolean()) {
    return core::InvalidArgument(path + ".trans_a: got " + core::ShowJson(*t) +
                                 ", must be true or false");
  }
  x.trans_a = t->get<bool>();
  ASSIGN_OR_RETURN(x.m, core::GetIntInRange(g, path, "m", 1, kMaxDim));
  ASSIGN_OR_RETURN(x.n, core::GetIntInRange(g, path, "n", 1, kMaxDim));
  ASSIGN_OR_RETURN(x.k, core::GetIntInRange(g, path, "k", 1, kMaxDim));
  ASSIGN_OR_RETURN(x.device_s, core::GetDoubleInRange(g, path, "device_s", 0, kMaxSeconds));
  return x;
}

// One entry of a profile's "links" at `path`.
core::StatusOr<ProfiledLink> LinkFromJson(const core::Json& l, const std::string& path) {
  RETURN_IF_ERROR(core::CheckKnownKeys(
      l, path, {"kind", "algo", "block_wire_bytes", "measured_s", "modeled_s"}));
  ProfiledLink x;
  ASSIGN_OR_RETURN(x.kind, core::GetString(l, path, "kind"));
  ASSIGN_OR_RETURN(x.algo, core::GetString(l, path, "algo"));
  ASSIGN_OR_RETURN(x.block_wire_bytes, core::GetPositiveInt(l, path, "block_wire_bytes"));
  ASSIGN_OR_RETURN(x.measured_s, core::GetDoubleInRange(l, path, "measured_s", 0, kMaxSeconds));
  ASSIGN_OR_RETURN(x.modeled_s, core::GetDoubleInRange(l, path, "modeled_s", 0, kMaxSeconds));
  return x;
}

// One entry of a profile's "operators" at `path`.
core::StatusOr<ProfiledOperator> OperatorFromJson(const core::Json& o, const std::string& path) {
  RETURN_IF_ERROR(core::CheckKnownKeys(
      o, path, {"label", "op", "m", "n", "k", "measured_s_by_degree", "fit", "d_star"}));
  ProfiledOperator x;
  ASSIGN_OR_RETURN(x.label, core::GetString(o, path, "label"));
  ASSIGN_OR_RETURN(x.op, core::GetString(o, path, "op"));
  ASSIGN_OR_RETURN(x.m, core::GetIntInRange(o, path, "m", 1, kMaxDim));
  ASSIGN_OR_RETURN(x.n, core::GetIntInRange(o, path, "n", 1, kMaxDim));
  ASSIGN_OR_RETURN(x.k, core::GetIntInRange(o, path, "k", 1, kMaxDim));
  ASSIGN_OR_RETURN(const core::Json* t, core::Member(o, path, "measured_s_by_degree"));
  if (!t->is_object()) {
    return core::InvalidArgument(path + ".measured_s_by_degree: got " + core::ShowJson(*t) +
                                 ", must be an object of degree: seconds");
  }
  for (const auto& [key, value] : t->items()) {
    int d = 0;
    try {
      size_t used = 0;
      d = std::stoi(key, &used);
      if (used != key.size()) d = 0;
    } catch (...) {
      d = 0;
    }
    if (d < 1 || d > 4096) {
      return core::InvalidArgument(path + ".measured_s_by_degree: key '" + key +
                                   "' is not a degree in [1, 4096]");
    }
    ASSIGN_OR_RETURN(x.t_by_d[d], core::GetDoubleInRange(*t, path + ".measured_s_by_degree", key, 0,
                                                         kMaxSeconds));
  }
  ASSIGN_OR_RETURN(const core::Json* fit, core::Member(o, path, "fit"));
  ASSIGN_OR_RETURN(x.fit, FitFromJson(*fit, path + ".fit"));
  ASSIGN_OR_RETURN(int64_t d_star, core::GetIntInRange(o, path, "d_star", 1, 4096));
  x.d_star = static_cast<int>(d_star);
  return x;
}

// A profile's "overheads" (each fitted family's per-class parameters) into p->overheads.
core::Status OverheadsFromJson(const core::Json& j, const std::string& w, CompassProfile* p) {
  ASSIGN_OR_RETURN(const core::Json* overheads, core::Member(j, w, "overheads"));
  if (!overheads->is_object()) {
    return core::InvalidArgument(w + ".overheads: got " + core::ShowJson(*overheads) +
                                 ", must be an object");
  }
  for (const auto& [family, by_class] : overheads->items()) {
    const std::string path = w + ".overheads." + family;
    const std::optional<StrategyFamily> f = ParseStrategyFamily(family);
    if (!f || !IsFittedFamily(*f)) {
      return core::InvalidArgument(w + ".overheads: unknown strategy family '" + family +
                                   "', must be one of " + FittedFamilyList());
    }
    RETURN_IF_ERROR(core::CheckKnownKeys(by_class, path, {"ag", "rs"}));
    for (const auto& [cls, params] : by_class.items()) {
      ASSIGN_OR_RETURN(auto x, ParamsFromJson(params, path + "." + cls));
      p->overheads[{*f, cls}] = Overheads{x[0], x[1], x[2]};
    }
  }
  return core::Status::Ok();
}

}  // namespace

core::StatusOr<CompassProfile> ProfileFromJson(const core::Json& j, const std::string& where) {
  const std::string& w = where;
  RETURN_IF_ERROR(core::CheckKnownKeys(
      j, w,
      {"kind", "version", "topology", "ranks", "time_scale", "time_scale_source", "machine",
       "repeats", "times", "gemms", "links", "contention", "operators", "classes", "overheads"}));
  RETURN_IF_ERROR(core::CheckKindAndVersion(j, w, "compass-profile", 1));
  CompassProfile p;
  ASSIGN_OR_RETURN(p.topology, core::GetString(j, w, "topology"));
  ASSIGN_OR_RETURN(int64_t ranks, core::GetIntInRange(j, w, "ranks", 1, 1024));
  p.ranks = static_cast<int>(ranks);
  ASSIGN_OR_RETURN(p.time_scale, core::GetDoubleInRange(j, w, "time_scale", 1e-3, 1e7));
  ASSIGN_OR_RETURN(p.time_scale_source, core::GetString(j, w, "time_scale_source"));
  ASSIGN_OR_RETURN(p.machine, core::GetString(j, w, "machine"));
  ASSIGN_OR_RETURN(int64_t repeats, core::GetIntInRange(j, w, "repeats", 1, 1000));
  p.repeats = static_cast<int>(repeats);

  ASSIGN_OR_RETURN(const core::Json* gemms, ArrayMember(j, w, "gemms", 1 << 20));
  for (size_t i = 0; i < gemms->size(); ++i) {
    ASSIGN_OR_RETURN(ProfiledGemm x,
                     GemmFromJson((*gemms)[i], w + ".gemms[" + std::to_string(i) + "]"));
    p.gemms.push_back(x);
  }
  ASSIGN_OR_RETURN(const core::Json* links, ArrayMember(j, w, "links", 1 << 12));
  for (size_t i = 0; i < links->size(); ++i) {
    ASSIGN_OR_RETURN(ProfiledLink x,
                     LinkFromJson((*links)[i], w + ".links[" + std::to_string(i) + "]"));
    p.links.push_back(x);
  }
  {
    const std::string path = w + ".contention";
    ASSIGN_OR_RETURN(const core::Json* c, core::Member(j, w, "contention"));
    RETURN_IF_ERROR(
        core::CheckKnownKeys(*c, path, {"m", "n", "k", "alone_s", "overlapped_s", "kappa"}));
    ASSIGN_OR_RETURN(p.contention.m, core::GetIntInRange(*c, path, "m", 1, kMaxDim));
    ASSIGN_OR_RETURN(p.contention.n, core::GetIntInRange(*c, path, "n", 1, kMaxDim));
    ASSIGN_OR_RETURN(p.contention.k, core::GetIntInRange(*c, path, "k", 1, kMaxDim));
    ASSIGN_OR_RETURN(p.contention.alone_s, core::GetPositiveDouble(*c, path, "alone_s"));
    ASSIGN_OR_RETURN(p.contention.overlapped_s, core::GetPositiveDouble(*c, path, "overlapped_s"));
  }
  ASSIGN_OR_RETURN(const core::Json* ops, ArrayMember(j, w, "operators", 1 << 12));
  for (size_t i = 0; i < ops->size(); ++i) {
    ASSIGN_OR_RETURN(ProfiledOperator x,
                     OperatorFromJson((*ops)[i], w + ".operators[" + std::to_string(i) + "]"));
    p.operators.push_back(std::move(x));
  }
  ASSIGN_OR_RETURN(const core::Json* classes, core::Member(j, w, "classes"));
  RETURN_IF_ERROR(core::CheckKnownKeys(*classes, w + ".classes", {"ag", "rs"}));
  for (const auto& [name, c] : classes->items()) {
    const std::string path = w + ".classes." + name;
    RETURN_IF_ERROR(core::CheckKnownKeys(c, path, {"closed_form", "pipeline"}));
    ASSIGN_OR_RETURN(const core::Json* cf, core::Member(c, path, "closed_form"));
    ASSIGN_OR_RETURN(auto a, ParamsFromJson(*cf, path + ".closed_form"));
    ASSIGN_OR_RETURN(const core::Json* pl, core::Member(c, path, "pipeline"));
    ASSIGN_OR_RETURN(auto b, ParamsFromJson(*pl, path + ".pipeline"));
    p.classes[name] =
        ProfiledClass{DegreeClassModel{a[0], a[1], a[2]}, PipelineModel{b[0], b[1], b[2]}};
  }
  RETURN_IF_ERROR(OverheadsFromJson(j, w, &p));
  return p;
}

core::StatusOr<CompassProfile> LoadProfile(const std::string& path) {
  ASSIGN_OR_RETURN(core::Json j, core::ReadJsonFile(path));
  return ProfileFromJson(j, path);
}

core::Status CheckProfileFor(const CompassProfile& p, const std::string& where,
                             const std::string& topology, int ranks) {
  if (p.topology != topology || p.ranks != ranks) {
    return core::InvalidArgument(where + ": taken on topology " + p.topology + " at TP " +
                                 std::to_string(p.ranks) + ", this run is " + topology + " at TP " +
                                 std::to_string(ranks) + " (profile again on topology " + topology +
                                 " at TP " + std::to_string(ranks) + ")");
  }
  return core::Status::Ok();
}

}  // namespace tessera::compass
