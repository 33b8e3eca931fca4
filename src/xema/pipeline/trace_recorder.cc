#include "xema/pipeline/trace_recorder.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/check.h"

namespace tessera::xema {
namespace {

using core::FailedPrecondition;

}  // namespace

bool TraceRecorder::ParkedWeight(const Alloc& a) {
  return a.alloc_op < 0 && a.kind == TensorKind::kWeight && a.ops_before_alloc == 0 && a.released &&
         a.free_op >= 0;
}

TraceRecorder::TraceRecorder(runtime::DeviceAllocator& allocator)
    : allocator_(allocator), first_id_(allocator.allocations()), first_op_(allocator.ops()) {
  CHECK(!allocator.in_op()) << "TraceRecorder attached inside an op";
  allocator_.set_observer(this);
}

TraceRecorder::~TraceRecorder() { allocator_.set_observer(nullptr); }

void TraceRecorder::OnAllocate(int64_t id, const std::string& name, TensorKind kind, int64_t bytes,
                               int64_t op) {
  CHECK_EQ(id - first_id_, static_cast<int64_t>(allocs_.size()));
  const auto ops_begun = static_cast<int64_t>(ops_.size());
  allocs_.push_back({name, kind, bytes, op < 0 ? -1 : op - first_op_, -1, false, ops_begun, 0});
}

void TraceRecorder::OnRelease(int64_t id, int64_t op) {
  if (id < first_id_) return;
  Alloc& a = allocs_[id - first_id_];
  a.released = true;
  a.ops_before_release = static_cast<int64_t>(ops_.size());
  a.free_op = op < 0 ? -1 : op - first_op_;
}

void TraceRecorder::OnBeginOp(int64_t op, const runtime::OpInfo& info) {
  CHECK_EQ(op - first_op_, static_cast<int64_t>(ops_.size()));
  Op o{info};
  o.phase_known = PhaseFromName(info.phase, &o.phase);
  ops_.push_back(std::move(o));
  op_start_ = std::chrono::steady_clock::now();
}

void TraceRecorder::OnEndOp(int64_t op, double flops, double bytes) {
  Op& o = ops_[op - first_op_];
  o.flops = flops;
  o.bytes = bytes;
  o.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - op_start_).count();
}

// The recording's sections over flat ops: prologue [0, p), body [p, body_end) of `steps`
// steps of s ops each, epilogue [body_end, num_ops).
struct TraceRecorder::Sections {
  int64_t num_ops = 0, p = 0, body_end = 0, s = 0, steps = 0;

  // The template op of flat op `flat` (body ops fold onto step 0's).
  int64_t TemplateOp(int64_t flat) const {
    if (flat < p) return flat;
    if (flat < body_end) return p + (flat - p) % s;
    return p + s + (flat - body_end);
  }
  // The step of flat op `flat`, -1 outside the body.
  int64_t StepOf(int64_t flat) const { return flat >= p && flat < body_end ? (flat - p) / s : -1; }
};

core::StatusOr<TraceRecorder::Sections> TraceRecorder::FindSections() const {
  // Sections: prologue ops [0, p), body [p, p + steps * s), epilogue after.
  Sections sec;
  const int64_t num_ops = static_cast<int64_t>(ops_.size());
  if (num_ops == 0) return FailedPrecondition("recording: no ops were run");
  for (int64_t i = 0; i < num_ops; ++i) {
    if (!ops_[i].phase_known) {
      return FailedPrecondition(fmt::format(
          "recording: op {} '{}' has phase '{}'; a Xema recording's phases are text, denoise, vae",
          i, ops_[i].info.name, ops_[i].info.phase));
    }
  }
  int64_t p = 0;
  while (p < num_ops && ops_[p].info.section == Section::kPrologue) ++p;
  int64_t body_end = p;
  while (body_end < num_ops && ops_[body_end].info.section == Section::kBody) ++body_end;
  for (int64_t i = body_end; i < num_ops; ++i) {
    if (ops_[i].info.section != Section::kEpilogue) {
      return FailedPrecondition(fmt::format(
          "recording: op {} '{}' is in the {} after the {} ended; sections must run prologue, "
          "body, epilogue",
          i, ops_[i].info.name, SectionName(ops_[i].info.section),
          body_end > p ? "body" : "prologue"));
    }
  }
  if (body_end == p) return FailedPrecondition("recording: no denoising step (body op) ran");
  int64_t s = 0;
  while (p + s < body_end && ops_[p + s].info.step == 0) ++s;
  if (s == 0 || (body_end - p) % s != 0) {
    return FailedPrecondition(fmt::format(
        "recording: body of {} ops does not split into steps of {} ops (step 0)", body_end - p, s));
  }
  const int64_t steps = (body_end - p) / s;
  for (int64_t i = p; i < body_end; ++i) {
    const int64_t step = (i - p) / s;
    const Op& o = ops_[i];
    const Op& first = ops_[p + (i - p) % s];
    if (o.info.step != step || o.info.name != first.info.name || o.phase != first.phase) {
      return FailedPrecondition(fmt::format(
          "recording: op {} '{}' (step {}) differs from step 0's op '{}' at the same place", i,
          o.info.name, o.info.step, first.info.name));
    }
  }
  sec.num_ops = num_ops;
  sec.p = p;
  sec.body_end = body_end;
  sec.s = s;
  sec.steps = steps;
  return sec;
}

void TraceRecorder::FoldOps(const Sections& sec, MemoryTrace* t) const {
  for (int64_t i = 0; i < sec.num_ops; ++i) {
    const Op& o = ops_[i];
    TraceOp op{o.info.name, o.phase, o.flops, o.bytes, o.time_s};
    if (i < sec.p) {
      t->prologue.push_back(op);
    } else if (i < sec.p + sec.s) {
      // The mean time over the steps.
      double sum = 0;
      for (int64_t k = 0; k < sec.steps; ++k) sum += ops_[i + k * sec.s].time_s;
      op.time_s = sum / static_cast<double>(sec.steps);
      t->body.push_back(op);
    } else if (i >= sec.body_end) {
      t->epilogue.push_back(op);
    }
  }
}

core::StatusOr<std::vector<int64_t>> TraceRecorder::TemplateTensorOrder(
    const Sections& sec, std::vector<std::vector<int64_t>>* step_allocs) const {
  // Template tensors: weights first (they expand first), then the rest in allocation order,
  // body tensors from step 0 only.
  std::vector<int64_t> order;
  for (size_t k = 0; k < allocs_.size(); ++k) {
    const Alloc& a = allocs_[k];
    if (a.alloc_op < 0) {
      if (a.kind != TensorKind::kWeight) {
        return FailedPrecondition(fmt::format(
            "recording: tensor {} '{}' was allocated outside any op but is not a weight", k,
            a.name));
      }
      if (a.ops_before_alloc > 0 ||
          (a.released && a.ops_before_release < sec.num_ops && !ParkedWeight(a))) {
        return FailedPrecondition(fmt::format(
            "recording: weight {} '{}' was allocated or freed during the request (weights are "
            "loaded before the first op and live through the last)",
            k, a.name));
      }
      order.push_back(static_cast<int64_t>(k));
    }
  }
  step_allocs->assign(sec.steps, {});  // body allocations per step
  for (size_t k = 0; k < allocs_.size(); ++k) {
    const Alloc& a = allocs_[k];
    if (a.alloc_op < 0) continue;
    if (!a.released || a.free_op < 0) {
      return FailedPrecondition(fmt::format(
          "recording: tensor {} '{}' allocated at op {} '{}' was not freed by the end of the "
          "request",
          k, a.name, a.alloc_op, ops_[a.alloc_op].info.name));
    }
    const int64_t st = sec.StepOf(a.alloc_op);
    if (st >= 0) (*step_allocs)[st].push_back(static_cast<int64_t>(k));
    if (st <= 0) order.push_back(static_cast<int64_t>(k));
  }
  for (int64_t st = 1; st < sec.steps; ++st) {
    const auto& mine = (*step_allocs)[st];
    const auto& base = (*step_allocs)[0];
    if (mine.size() != base.size()) {
      return FailedPrecondition(fmt::format(
          "recording: step {} made {} allocations, step 0 made {}", st, mine.size(), base.size()));
    }
    for (size_t j = 0; j < mine.size(); ++j) {
      const Alloc& a = allocs_[mine[j]];
      const Alloc& b = allocs_[base[j]];
      if (a.name != b.name || a.bytes != b.bytes ||
          sec.TemplateOp(a.alloc_op) != sec.TemplateOp(b.alloc_op)) {
        return FailedPrecondition(fmt::format(
            "recording: allocation {} of step {} ('{}', {} bytes at '{}') differs from step "
            "0's ('{}', {} bytes at '{}')",
            j, st, a.name, a.bytes, ops_[a.alloc_op].info.name, b.name, b.bytes,
            ops_[b.alloc_op].info.name));
      }
    }
  }
  return order;
}

core::Status TraceRecorder::AddTemplateTensors(const Sections& sec,
                                               const std::vector<int64_t>& order,
                                               const std::vector<std::vector<int64_t>>& step_allocs,
                                               MemoryTrace* t) const {
  for (int64_t k : order) {
    const Alloc& a = allocs_[k];
    TraceTensor x;
    x.id = static_cast<int64_t>(t->tensors.size());
    x.name = a.name;
    x.bytes = a.bytes;
    x.kind = a.kind;
    if (a.kind == TensorKind::kWeight && a.alloc_op < 0 && !ParkedWeight(a)) {
      x.phase = Phase::kDenoise;
      t->tensors.push_back(x);
      continue;
    }
    if (ParkedWeight(a)) {  // resident from before op 0 until it was parked
      if (sec.p == 0) {
        return FailedPrecondition(fmt::format(
            "recording: weight '{}' was parked during a request without a prologue", a.name));
      }
      x.kind = TensorKind::kActivation;
      x.phase = ops_[0].phase;
      x.alloc_op = 0;
      x.free_op = static_cast<int>(sec.TemplateOp(a.free_op));
      if (sec.StepOf(a.free_op) >= 0) x.free_step = static_cast<int>(sec.StepOf(a.free_op));
      t->tensors.push_back(x);
      continue;
    }
    x.phase = ops_[a.alloc_op].phase;
    x.alloc_op = static_cast<int>(sec.TemplateOp(a.alloc_op));
    x.free_op = static_cast<int>(sec.TemplateOp(a.free_op));
    const int64_t as = sec.StepOf(a.alloc_op);
    const int64_t fs = sec.StepOf(a.free_op);
    if (a.alloc_op < sec.p) {
      if (fs >= 0) x.free_step = static_cast<int>(fs);
    } else if (as == 0) {
      if (fs == 1 && sec.steps > 1) {
        // Freed in the next step: every step's instance must be, the last in the epilogue.
        x.free_next_step = true;
        const int64_t j =
            std::find(step_allocs[0].begin(), step_allocs[0].end(), k) - step_allocs[0].begin();
        const Alloc& last = allocs_[step_allocs[sec.steps - 1][j]];
        if (last.free_op < sec.body_end) {
          return FailedPrecondition(fmt::format(
              "recording: tensor '{}' of the last step is freed at op {}, before the epilogue, "
              "though each step's instance lives into the next step",
              last.name, last.free_op));
        }
        x.last_free_op = static_cast<int>(sec.TemplateOp(last.free_op));
      } else if (fs > 1) {
        return FailedPrecondition(fmt::format(
            "recording: tensor '{}' allocated in step 0 is freed in step {}; a body tensor must "
            "be freed in its step, the next, or the epilogue",
            a.name, fs));
      }
    }
    t->tensors.push_back(x);
  }
  return core::Status::Ok();
}

core::Status TraceRecorder::CheckFoldReproducesRun(const MemoryTrace& t) const {
  // The fold must reproduce the run, allocation by allocation.
  ASSIGN_OR_RETURN(ExpandedTrace x, Expand(t));
  if (x.tensors.size() != allocs_.size()) {
    return core::Internal(fmt::format("recording: trace expands to {} allocations, the run made {}",
                                      x.tensors.size(), allocs_.size()));
  }
  const int64_t last_op = static_cast<int64_t>(x.ops.size()) - 1;
  for (size_t k = 0; k < allocs_.size(); ++k) {
    const Alloc& a = allocs_[k];
    const FlatTensor& f = x.tensors[k];
    const int64_t alloc_op = a.alloc_op < 0 ? 0 : a.alloc_op;
    const int64_t free_op = a.alloc_op < 0 && !ParkedWeight(a) ? last_op : a.free_op;
    if (f.bytes != a.bytes || f.alloc_op != alloc_op || f.free_op != free_op) {
      return core::Internal(fmt::format(
          "recording: allocation {} '{}' ran as {} bytes live over ops [{}, {}] but the trace "
          "expands it to {} bytes over [{}, {}]",
          k, a.name, a.bytes, alloc_op, free_op, f.bytes, f.alloc_op, f.free_op));
    }
  }
  return core::Status::Ok();
}

core::StatusOr<MemoryTrace> TraceRecorder::Finish(const TraceKey& key) const {
  if (allocator_.in_op()) return FailedPrecondition("recording: an op is still open");
  ASSIGN_OR_RETURN(const Sections sec, FindSections());
  MemoryTrace t;
  t.key = key;
  t.key.steps = sec.steps;
  t.provenance = "recorded";
  FoldOps(sec, &t);
  std::vector<std::vector<int64_t>> step_allocs;
  ASSIGN_OR_RETURN(const std::vector<int64_t> order, TemplateTensorOrder(sec, &step_allocs));
  RETURN_IF_ERROR(AddTemplateTensors(sec, order, step_allocs, &t));
  RETURN_IF_ERROR(Validate(t).WithPrefix("recording folded into an invalid trace"));
  RETURN_IF_ERROR(CheckFoldReproducesRun(t));
  return t;
}

}  // namespace tessera::xema
