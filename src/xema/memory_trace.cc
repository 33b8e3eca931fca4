#include "xema/memory_trace.h"

#include <algorithm>
#include <limits>
#include <set>

#include "core/check.h"
#include "core/parse_number.h"

namespace tessera::xema {

using core::InvalidArgument;
using core::Json;
using core::Status;
using core::StatusOr;

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kText:
      return "text";
    case Phase::kDenoise:
      return "denoise";
    case Phase::kVae:
      return "vae";
  }
  return "?";
}

bool PhaseFromName(std::string_view name, Phase* phase) {
  for (Phase p : {Phase::kText, Phase::kDenoise, Phase::kVae}) {
    if (name == PhaseName(p)) {
      *phase = p;
      return true;
    }
  }
  return false;
}

Section MemoryTrace::SectionOf(int t) const {
  CHECK(t >= 0 && t < num_template_ops()) << "template op " << t;
  const int p = static_cast<int>(prologue.size());
  const int s = static_cast<int>(body.size());
  if (t < p) return Section::kPrologue;
  if (t < p + s) return Section::kBody;
  return Section::kEpilogue;
}

const TraceOp& MemoryTrace::op(int t) const {
  const int p = static_cast<int>(prologue.size());
  const int s = static_cast<int>(body.size());
  switch (SectionOf(t)) {
    case Section::kPrologue:
      return prologue[t];
    case Section::kBody:
      return body[t - p];
    case Section::kEpilogue:
      break;
  }
  return epilogue[t - p - s];
}

namespace {

std::string TensorPath(size_t i) { return "tensors[" + std::to_string(i) + "]"; }

std::string OpRange(const MemoryTrace& t) {
  return "must be in [0, " + std::to_string(t.num_template_ops()) + ") (" +
         std::to_string(t.prologue.size()) + " prologue, " + std::to_string(t.body.size()) +
         " body, " + std::to_string(t.epilogue.size()) + " epilogue ops)";
}

Status ValidateOps(const std::vector<TraceOp>& ops, const char* section) {
  for (size_t i = 0; i < ops.size(); ++i) {
    const TraceOp& op = ops[i];
    const std::string path = std::string(section) + "[" + std::to_string(i) + "]";
    if (op.name.empty()) return InvalidArgument(path + ".name: empty, must name the op");
    if (std::string(section) == "body" && op.phase != Phase::kDenoise) {
      return InvalidArgument(path + ".phase: got '" + PhaseName(op.phase) +
                             "', must be denoise (the body is one denoising step)");
    }
    const std::pair<const char*, double> nums[] = {
        {"flops", op.flops}, {"bytes", op.bytes}, {"time_s", op.time_s}};
    for (const auto& [name, v] : nums) {
      if (!(v >= 0) || v > 1e30) {
        return InvalidArgument(path + "." + name + ": got " + core::ShowNumber(v) +
                               ", must be in [0, 1e30]");
      }
    }
  }
  return Status::Ok();
}

// The key's fields: model, dtype, sizes, steps, sp degree, batch.
Status ValidateKey(const TraceKey& k) {
  if (k.model.empty()) return InvalidArgument("key.model: empty, must name the model");
  if (k.dtype.empty()) return InvalidArgument("key.dtype: empty, must name the dtype (bf16)");
  const std::pair<const char*, int64_t> dims[] = {
      {"width", k.width}, {"height", k.height}, {"frames", k.frames}};
  for (const auto& [name, v] : dims) {
    if (v < 0 || v > 1'000'000) {
      return InvalidArgument(std::string("key.") + name + ": got " + std::to_string(v) +
                             ", must be in [0, 1000000]");
    }
  }
  if (k.steps < 1 || k.steps > kMaxSteps) {
    return InvalidArgument("key.steps: got " + std::to_string(k.steps) + ", must be in [1, " +
                           std::to_string(kMaxSteps) + "]");
  }
  if (k.sp_degree < 1 || k.sp_degree > 4096) {
    return InvalidArgument("key.sp_degree: got " + std::to_string(k.sp_degree) +
                           ", must be in [1, 4096]");
  }
  if (k.batch < 1 || k.batch > kMaxTraceBatch) {
    return InvalidArgument("key.batch: got " + std::to_string(k.batch) + ", must be in [1, " +
                           std::to_string(kMaxTraceBatch) + "]");
  }
  return Status::Ok();
}

// Tensor i of t: its id and bytes, and (not a weight) where it is allocated and freed.
Status ValidateTensor(const MemoryTrace& t, size_t i) {
  const TraceKey& k = t.key;
  const int p = static_cast<int>(t.prologue.size());
  const int s = static_cast<int>(t.body.size());
  const int n = t.num_template_ops();
  const TraceTensor& x = t.tensors[i];
  const std::string path = TensorPath(i);
  if (x.id != static_cast<int64_t>(i)) {
    return InvalidArgument(path + ".id: got " + std::to_string(x.id) + ", must be " +
                           std::to_string(i) + " (ids are positions in the array)");
  }
  if (x.bytes <= 0 || x.bytes > kMaxTensorBytes) {
    return InvalidArgument(path + ".bytes: got " + std::to_string(x.bytes) + ", must be in [1, " +
                           std::to_string(kMaxTensorBytes) + "]");
  }
  if (x.kind == TensorKind::kWeight) return Status::Ok();
  if (x.alloc_op < 0 || x.alloc_op >= n) {
    return InvalidArgument(path + ".alloc_op: got " + std::to_string(x.alloc_op) + ", " +
                           OpRange(t));
  }
  if (x.free_op < 0 || x.free_op >= n) {
    return InvalidArgument(path + ".free_op: got " + std::to_string(x.free_op) + ", " + OpRange(t));
  }
  const Section as = t.SectionOf(x.alloc_op);
  const Section fs = t.SectionOf(x.free_op);
  if (x.free_next_step) {
    if (as != Section::kBody || fs != Section::kBody) {
      return InvalidArgument(path + ".free_next_step: true needs alloc_op and free_op in the " +
                             "body [" + std::to_string(p) + ", " + std::to_string(p + s) +
                             "), got alloc_op " + std::to_string(x.alloc_op) + " (" +
                             SectionName(as) + ") and free_op " + std::to_string(x.free_op) + " (" +
                             SectionName(fs) + ")");
    }
    if (x.last_free_op < p + s || x.last_free_op >= n) {
      return InvalidArgument(
          path + ".last_free_op: got " + std::to_string(x.last_free_op) +
          ", must be an epilogue op in [" + std::to_string(p + s) + ", " + std::to_string(n) +
          ") (where the last step's instance of a free_next_step tensor is freed)");
    }
  } else {
    if (x.last_free_op != -1) {
      return InvalidArgument(path + ".last_free_op: got " + std::to_string(x.last_free_op) +
                             ", only allowed with free_next_step: true");
    }
    if (x.free_step != -1) {
      if (as != Section::kPrologue || fs != Section::kBody) {
        return InvalidArgument(path + ".free_step: got " + std::to_string(x.free_step) +
                               ", only allowed for a prologue tensor freed at a body op");
      }
      if (x.free_step < 0 || x.free_step >= k.steps) {
        return InvalidArgument(path + ".free_step: got " + std::to_string(x.free_step) +
                               ", must be in [0, " + std::to_string(k.steps) +
                               ") (key.steps) or -1 for the last step");
      }
    }
    if (x.free_op < x.alloc_op) {
      return InvalidArgument(path + ".free_op: got " + std::to_string(x.free_op) +
                             ", before alloc_op " + std::to_string(x.alloc_op) +
                             " (free before alloc); must be >= alloc_op, or use " +
                             "free_next_step for a body tensor freed in the next step");
    }
  }
  return Status::Ok();
}

}  // namespace

Status Validate(const MemoryTrace& t) {
  const TraceKey& k = t.key;
  RETURN_IF_ERROR(ValidateKey(k));
  const int64_t num_ops =
      static_cast<int64_t>(t.prologue.size() + t.body.size() + t.epilogue.size());
  if (num_ops < 1 || num_ops > kMaxTemplateOps) {
    return InvalidArgument("ops: got " + std::to_string(num_ops) +
                           " ops in prologue + body + epilogue, must be in [1, " +
                           std::to_string(kMaxTemplateOps) + "]");
  }
  const int64_t expanded_ops = static_cast<int64_t>(t.prologue.size() + t.epilogue.size()) +
                               k.steps * static_cast<int64_t>(t.body.size());
  if (expanded_ops > kMaxExpandedOps) {
    return InvalidArgument("key.steps: got " + std::to_string(k.steps) + ", expands to " +
                           std::to_string(expanded_ops) +
                           " ops, must be <= " + std::to_string(kMaxExpandedOps));
  }
  RETURN_IF_ERROR(ValidateOps(t.prologue, "prologue"));
  RETURN_IF_ERROR(ValidateOps(t.body, "body"));
  RETURN_IF_ERROR(ValidateOps(t.epilogue, "epilogue"));
  if (static_cast<int64_t>(t.tensors.size()) > kMaxTemplateTensors) {
    return InvalidArgument("tensors: got " + std::to_string(t.tensors.size()) +
                           " tensors, must be <= " + std::to_string(kMaxTemplateTensors));
  }
  int64_t expanded_tensors = 0;
  for (size_t i = 0; i < t.tensors.size(); ++i) {
    RETURN_IF_ERROR(ValidateTensor(t, i));
    const TraceTensor& x = t.tensors[i];
    if (x.kind == TensorKind::kWeight) {
      ++expanded_tensors;
    } else {
      expanded_tensors += t.SectionOf(x.alloc_op) == Section::kBody ? k.steps : 1;
    }
  }
  if (expanded_tensors > kMaxExpandedTensors) {
    return InvalidArgument("tensors: expand to " + std::to_string(expanded_tensors) +
                           " instances over " + std::to_string(k.steps) +
                           " steps, must be <= " + std::to_string(kMaxExpandedTensors));
  }
  return Status::Ok();
}

// ---- JSON ----

namespace {

Json OpJson(const TraceOp& op) {
  return Json{{"name", op.name},
              {"phase", PhaseName(op.phase)},
              {"flops", op.flops},
              {"bytes", op.bytes},
              {"time_s", op.time_s}};
}

StatusOr<Phase> ParsePhase(const std::string& s, const std::string& path) {
  Phase phase;
  if (PhaseFromName(s, &phase)) return phase;
  return InvalidArgument(path + ": got '" + s + "', must be text, denoise or vae");
}

StatusOr<TensorKind> ParseKind(const std::string& s, const std::string& path) {
  if (s == "weight") return TensorKind::kWeight;
  if (s == "act") return TensorKind::kActivation;
  if (s == "workspace") return TensorKind::kWorkspace;
  return InvalidArgument(path + ": got '" + s + "', must be weight, act or workspace");
}

StatusOr<double> OptionalNonNegative(const Json& obj, const std::string& path, const char* key) {
  if (!obj.contains(key)) return 0.0;
  return core::GetNonNegativeDouble(obj, path, key);
}

StatusOr<std::vector<TraceOp>> ParseOps(const Json& j, const char* section) {
  ASSIGN_OR_RETURN(const Json* arr, core::Member(j, "", section));
  if (!arr->is_array()) {
    return InvalidArgument(std::string(section) + ": got " + core::ShowJson(*arr) +
                           ", must be an array of ops");
  }
  if (static_cast<int64_t>(arr->size()) > kMaxTemplateOps) {
    return InvalidArgument(std::string(section) + ": got " + std::to_string(arr->size()) +
                           " ops, must be <= " + std::to_string(kMaxTemplateOps));
  }
  std::vector<TraceOp> ops;
  ops.reserve(arr->size());
  for (size_t i = 0; i < arr->size(); ++i) {
    const Json& o = (*arr)[i];
    const std::string path = std::string(section) + "[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(core::CheckKnownKeys(o, path, {"name", "phase", "flops", "bytes", "time_s"}));
    TraceOp op;
    ASSIGN_OR_RETURN(op.name, core::GetString(o, path, "name"));
    ASSIGN_OR_RETURN(std::string phase, core::GetString(o, path, "phase"));
    ASSIGN_OR_RETURN(op.phase, ParsePhase(phase, path + ".phase"));
    ASSIGN_OR_RETURN(op.flops, OptionalNonNegative(o, path, "flops"));
    ASSIGN_OR_RETURN(op.bytes, OptionalNonNegative(o, path, "bytes"));
    ASSIGN_OR_RETURN(op.time_s, OptionalNonNegative(o, path, "time_s"));
    ops.push_back(std::move(op));
  }
  return ops;
}

constexpr int64_t kIntLimit = std::numeric_limits<int>::max();

}  // namespace

Json ToJson(const MemoryTrace& t) {
  Json j;
  j["format"] = kTraceFormat;
  j["provenance"] = t.provenance;
  j["key"] = Json{{"model", t.key.model},         {"width", t.key.width}, {"height", t.key.height},
                  {"frames", t.key.frames},       {"steps", t.key.steps}, {"cfg", t.key.cfg},
                  {"sp_degree", t.key.sp_degree}, {"dtype", t.key.dtype}};
  if (t.key.batch > 1) j["key"]["batch"] = t.key.batch;  // absent: 1 (older files have none)
  const std::pair<const char*, const std::vector<TraceOp>*> sections[] = {
      {"prologue", &t.prologue}, {"body", &t.body}, {"epilogue", &t.epilogue}};
  for (const auto& [name, ops] : sections) {
    Json arr = Json::array();
    for (const TraceOp& op : *ops) arr.push_back(OpJson(op));
    j[name] = std::move(arr);
  }
  Json tensors = Json::array();
  for (const TraceTensor& x : t.tensors) {
    Json e{{"id", x.id},
           {"name", x.name},
           {"bytes", x.bytes},
           {"phase", PhaseName(x.phase)},
           {"kind", KindName(x.kind)}};
    if (x.kind != TensorKind::kWeight) {
      e["alloc_op"] = x.alloc_op;
      e["free_op"] = x.free_op;
      if (x.free_next_step) {
        e["free_next_step"] = true;
        e["last_free_op"] = x.last_free_op;
      }
      if (x.free_step != -1) e["free_step"] = x.free_step;
    }
    tensors.push_back(std::move(e));
  }
  j["tensors"] = std::move(tensors);
  return j;
}

StatusOr<MemoryTrace> TraceFromJson(const Json& j, const std::string& source) {
  auto parse = [&]() -> StatusOr<MemoryTrace> {
    RETURN_IF_ERROR(core::CheckKnownKeys(
        j, "trace", {"format", "provenance", "key", "prologue", "body", "epilogue", "tensors"}));
    ASSIGN_OR_RETURN(std::string format, core::GetString(j, "", "format"));
    if (format != kTraceFormat) {
      return InvalidArgument("format: got '" + format + "', must be " + kTraceFormat);
    }
    MemoryTrace t;
    if (j.contains("provenance")) {
      ASSIGN_OR_RETURN(t.provenance, core::GetString(j, "", "provenance"));
      if (t.provenance != "recorded" && t.provenance != "modeled" && t.provenance != "synthetic") {
        return InvalidArgument("provenance: got '" + t.provenance +
                               "', must be recorded, modeled or synthetic");
      }
    }
    ASSIGN_OR_RETURN(const Json* key, core::Member(j, "", "key"));
    RETURN_IF_ERROR(core::CheckKnownKeys(
        *key, "key",
        {"model", "width", "height", "frames", "steps", "cfg", "sp_degree", "dtype", "batch"}));
    ASSIGN_OR_RETURN(t.key.model, core::GetString(*key, "key", "model"));
    ASSIGN_OR_RETURN(t.key.width, core::GetIntInRange(*key, "key", "width", 0, 1'000'000));
    ASSIGN_OR_RETURN(t.key.height, core::GetIntInRange(*key, "key", "height", 0, 1'000'000));
    ASSIGN_OR_RETURN(t.key.frames, core::GetIntInRange(*key, "key", "frames", 0, 1'000'000));
    ASSIGN_OR_RETURN(t.key.steps, core::GetIntInRange(*key, "key", "steps", 1, kMaxSteps));
    ASSIGN_OR_RETURN(const Json* cfg, core::Member(*key, "key", "cfg"));
    if (!cfg->is_boolean()) {
      return InvalidArgument("key.cfg: got " + core::ShowJson(*cfg) + ", must be true or false");
    }
    t.key.cfg = cfg->get<bool>();
    ASSIGN_OR_RETURN(t.key.sp_degree, core::GetIntInRange(*key, "key", "sp_degree", 1, 4096));
    ASSIGN_OR_RETURN(t.key.dtype, core::GetString(*key, "key", "dtype"));
    if (key->contains("batch")) {
      ASSIGN_OR_RETURN(t.key.batch, core::GetIntInRange(*key, "key", "batch", 1, kMaxTraceBatch));
    }
    ASSIGN_OR_RETURN(t.prologue, ParseOps(j, "prologue"));
    ASSIGN_OR_RETURN(t.body, ParseOps(j, "body"));
    ASSIGN_OR_RETURN(t.epilogue, ParseOps(j, "epilogue"));
    ASSIGN_OR_RETURN(const Json* arr, core::Member(j, "", "tensors"));
    if (!arr->is_array()) {
      return InvalidArgument("tensors: got " + core::ShowJson(*arr) + ", must be an array");
    }
    if (static_cast<int64_t>(arr->size()) > kMaxTemplateTensors) {
      return InvalidArgument("tensors: got " + std::to_string(arr->size()) +
                             " tensors, must be <= " + std::to_string(kMaxTemplateTensors));
    }
    t.tensors.reserve(arr->size());
    for (size_t i = 0; i < arr->size(); ++i) {
      const Json& e = (*arr)[i];
      const std::string path = TensorPath(i);
      RETURN_IF_ERROR(
          core::CheckKnownKeys(e, path,
                               {"id", "name", "bytes", "phase", "kind", "alloc_op", "free_op",
                                "free_next_step", "last_free_op", "free_step"}));
      TraceTensor x;
      ASSIGN_OR_RETURN(x.id, core::GetIntInRange(e, path, "id", INT64_MIN + 1, INT64_MAX));
      ASSIGN_OR_RETURN(x.name, core::GetString(e, path, "name"));
      ASSIGN_OR_RETURN(x.bytes, core::GetIntInRange(e, path, "bytes", INT64_MIN + 1, INT64_MAX));
      ASSIGN_OR_RETURN(std::string phase, core::GetString(e, path, "phase"));
      ASSIGN_OR_RETURN(x.phase, ParsePhase(phase, path + ".phase"));
      ASSIGN_OR_RETURN(std::string kind, core::GetString(e, path, "kind"));
      ASSIGN_OR_RETURN(x.kind, ParseKind(kind, path + ".kind"));
      if (x.kind == TensorKind::kWeight) {
        for (const char* k :
             {"alloc_op", "free_op", "free_next_step", "last_free_op", "free_step"}) {
          if (e.contains(k)) {
            return InvalidArgument(path + "." + k +
                                   ": not allowed on a weight (weights live for the whole "
                                   "request); remove it or use kind act");
          }
        }
      } else {
        ASSIGN_OR_RETURN(int64_t a,
                         core::GetIntInRange(e, path, "alloc_op", -kIntLimit, kIntLimit));
        ASSIGN_OR_RETURN(int64_t f, core::GetIntInRange(e, path, "free_op", -kIntLimit, kIntLimit));
        x.alloc_op = static_cast<int>(a);
        x.free_op = static_cast<int>(f);
        if (e.contains("free_next_step")) {
          const Json& v = e["free_next_step"];
          if (!v.is_boolean()) {
            return InvalidArgument(path + ".free_next_step: got " + core::ShowJson(v) +
                                   ", must be true or false");
          }
          x.free_next_step = v.get<bool>();
        }
        if (e.contains("free_step")) {
          ASSIGN_OR_RETURN(int64_t fs,
                           core::GetIntInRange(e, path, "free_step", -kIntLimit, kIntLimit));
          x.free_step = static_cast<int>(fs);
        }
        if (e.contains("last_free_op")) {
          ASSIGN_OR_RETURN(int64_t l,
                           core::GetIntInRange(e, path, "last_free_op", -kIntLimit, kIntLimit));
          x.last_free_op = static_cast<int>(l);
        } else if (x.free_next_step) {
          return InvalidArgument(path + ".last_free_op: missing, required with " +
                                 "free_next_step: true (the epilogue op that frees the last " +
                                 "step's instance)");
        }
      }
      t.tensors.push_back(std::move(x));
    }
    RETURN_IF_ERROR(Validate(t));
    for (TraceTensor& x : t.tensors) x.bytes = AlignBytes(x.bytes);
    return t;
  };
  StatusOr<MemoryTrace> r = parse();
  if (!r.ok()) return r.status().WithPrefix(source);
  return r;
}

StatusOr<MemoryTrace> ReadTraceFile(const std::string& path) {
  ASSIGN_OR_RETURN(Json j, core::ReadJsonFile(path));
  return TraceFromJson(j, path);
}

// ---- Expansion ----

StatusOr<ExpandedTrace> Expand(const MemoryTrace& t) {
  RETURN_IF_ERROR(Validate(t));
  const int p = static_cast<int>(t.prologue.size());
  const int s = static_cast<int>(t.body.size());
  const int e = static_cast<int>(t.epilogue.size());
  const int steps = static_cast<int>(t.key.steps);
  ExpandedTrace x;
  x.ops.reserve(static_cast<size_t>(p + steps * s + e));
  for (int i = 0; i < p; ++i) x.ops.push_back({i, -1});
  for (int step = 0; step < steps; ++step)
    for (int b = 0; b < s; ++b) x.ops.push_back({p + b, step});
  for (int i = 0; i < e; ++i) x.ops.push_back({p + s + i, -1});
  const int last = static_cast<int>(x.ops.size()) - 1;
  // Flat index of template op `op` in step `step` (body) or its only occurrence.
  auto flat = [&](int op, int step) {
    if (op < p) return op;
    if (op < p + s) return p + step * s + (op - p);
    return p + steps * s + (op - p - s);
  };
  for (size_t i = 0; i < t.tensors.size(); ++i) {
    const TraceTensor& tt = t.tensors[i];
    FlatTensor f;
    f.tensor = static_cast<int>(i);
    f.bytes = AlignBytes(tt.bytes);
    f.kind = tt.kind;
    if (tt.kind == TensorKind::kWeight) {
      f.alloc_op = 0;
      f.free_op = last;
      x.tensors.push_back(f);
      continue;
    }
    const Section as = t.SectionOf(tt.alloc_op);
    if (as != Section::kBody) {
      f.alloc_op = flat(tt.alloc_op, 0);
      f.free_op = flat(tt.free_op, tt.free_step < 0 ? steps - 1 : tt.free_step);
      x.tensors.push_back(f);
      continue;
    }
    for (int step = 0; step < steps; ++step) {
      f.step = step;
      f.alloc_op = flat(tt.alloc_op, step);
      if (tt.free_next_step) {
        f.free_op = step + 1 < steps ? flat(tt.free_op, step + 1) : flat(tt.last_free_op, 0);
      } else {
        f.free_op = flat(tt.free_op, step);
      }
      x.tensors.push_back(f);
    }
  }
  std::stable_sort(
      x.tensors.begin(), x.tensors.end(),
      [](const FlatTensor& a, const FlatTensor& b) { return a.alloc_op < b.alloc_op; });
  return x;
}

std::string FlatOpName(const MemoryTrace& trace, const FlatOp& op) {
  std::string name = trace.op(op.template_op).name;
  if (op.step >= 0) name += "@step" + std::to_string(op.step);
  return name;
}

std::vector<int64_t> LiveBytes(const ExpandedTrace& x, bool include_weights) {
  std::vector<int64_t> delta(x.ops.size() + 1, 0);
  for (const FlatTensor& f : x.tensors) {
    if (!include_weights && f.kind == TensorKind::kWeight) continue;
    delta[f.alloc_op] += f.bytes;
    delta[f.free_op + 1] -= f.bytes;
  }
  std::vector<int64_t> live(x.ops.size(), 0);
  int64_t cur = 0;
  for (size_t i = 0; i < x.ops.size(); ++i) {
    cur += delta[i];
    live[i] = cur;
  }
  return live;
}

double RequestSeconds(const MemoryTrace& t) {
  double s = 0;
  for (const TraceOp& op : t.prologue) s += op.time_s;
  for (const TraceOp& op : t.body) s += op.time_s * static_cast<double>(t.key.steps);
  for (const TraceOp& op : t.epilogue) s += op.time_s;
  return s;
}

int64_t WeightBytes(const MemoryTrace& t) {
  int64_t w = 0;
  for (const TraceTensor& x : t.tensors)
    if (x.kind == TensorKind::kWeight) w += x.bytes;
  return w;
}

int64_t WeightBytes(const ExpandedTrace& x) {
  int64_t w = 0;
  for (const FlatTensor& f : x.tensors)
    if (f.kind == TensorKind::kWeight) w += f.bytes;
  return w;
}

int64_t LowerBoundBytes(const ExpandedTrace& x) {
  std::vector<int64_t> live = LiveBytes(x);
  int64_t peak = 0;
  for (int64_t v : live) peak = std::max(peak, v);
  return peak;
}

std::string Describe(const MemoryTrace& t) {
  return t.key.model + " " + std::to_string(t.key.width) + "x" + std::to_string(t.key.height) +
         "x" + std::to_string(t.key.frames) + " steps " + std::to_string(t.key.steps) + " cfg " +
         (t.key.cfg ? "on" : "off") + " sp " + std::to_string(t.key.sp_degree) +
         (t.key.batch > 1 ? " batch " + std::to_string(t.key.batch) : std::string()) + " " +
         t.key.dtype + " (" + t.provenance + ")";
}

}  // namespace tessera::xema
