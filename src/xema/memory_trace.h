// MemoryTrace: the memory behaviour of one diffusion request template, recorded once (by a
// recording allocator running the pipeline) or modeled, then used by every memory planner
// of Xema (pressure intervals, static layouts, the caching-allocator replay).
//
// A template is keyed by (model, width, height, frames, steps, cfg, sp_degree, dtype, batch). A
// request runs text encoding, `steps` identical denoising steps and a VAE decode, so the ops
// are stored once, in three sections:
//
//   prologue   ops run once before the first step (text encoder, latent init, ...);
//   body       the ops of ONE denoising step, run `steps` times;
//   epilogue   ops run once after the last step (VAE decode, ...).
//
// Ops are referred to by a *template op index*: prologue ops are 0 .. P-1, body ops P ..
// P+S-1, epilogue ops P+S .. P+S+E-1 (P, S, E the section lengths). The expanded (flat)
// timeline is prologue, body x steps, epilogue: P + steps*S + E ops; body op P+b of step i
// (0-based) is flat op P + i*S + b; epilogue op P+S+e is flat op P + steps*S + e.
//
// A tensor is live from its alloc op through its free op, both inclusive; sizes are bytes
// rounded up to kAlignmentBytes (512) when a trace is built or read. Within one op, tensors
// are allocated, then freed, in the order of the `tensors` array. Lifetimes by section:
//   - weight tensors (kind weight) live for the whole request: flat ops 0 .. last; they have
//     no alloc_op / free_op (in memory both are 0 and ignored);
//   - allocated in the prologue, freed in the prologue or epilogue: one instance; freed at a
//     body op: the instance is freed at that op of step `free_step` (0-based; default, and
//     -1: the LAST step, e.g. text embeddings that every step reads; 0: the initial noise
//     latent, consumed by the first step);
//   - allocated in the body: one instance per step. free_op in the body at or after alloc_op:
//     freed in the same step; free_op in the epilogue: every step's instance lives until that
//     op. `free_next_step: true` means the instance of step i is freed at body op free_op of
//     step i+1 (any body op, e.g. the latent x_{i+1} produced by step i and consumed by step
//     i+1), and the instance of the last step at epilogue op `last_free_op` (required then);
//   - allocated in the epilogue: one instance, freed in the epilogue.
// Everything else is free-before-alloc and refused by Validate.
//
// JSON (format "tessera.xema.trace/1"), every field validated with a one-line message that
// names the field, the value and what is allowed:
//   {"format": "tessera.xema.trace/1", "provenance": "recorded|modeled|synthetic",
//    "key": {"model": "tiny-t2i", "width": 64, "height": 64, "frames": 1, "steps": 4,
//            "cfg": true, "sp_degree": 1, "dtype": "bf16"},  // + "batch": 2 when > 1
//    "prologue": [{"name": "text.l0", "phase": "text", "flops": 1e6, "bytes": 4096,
//                  "time_s": 1e-4}, ...],          // flops, bytes, time_s optional (0)
//    "body": [...], "epilogue": [...],
//    "tensors": [{"id": 0, "name": "dit.w", "bytes": 1048576, "phase": "denoise",
//                 "kind": "weight"},
//                {"id": 1, "name": "x", "bytes": 4096, "phase": "denoise", "kind": "act",
//                 "alloc_op": 3, "free_op": 3, "free_next_step": true, "last_free_op": 7},
//                {"id": 2, "name": "noise", "bytes": 4096, "phase": "denoise", "kind": "act",
//                 "alloc_op": 1, "free_op": 4, "free_step": 0},
//                ...]}
// `id` is the tensor's position in the array; phases are text, denoise, vae; kinds are
// weight, act, workspace; body ops must be phase denoise. Unknown keys are refused (a typo
// must not silently change a lifetime).
//
// Bounds (checked before anything is multiplied): <= kMaxTemplateOps ops,
// <= kMaxTemplateTensors tensors, steps in [1, kMaxSteps], tensor bytes in [1, 2^40], and
// expanded counts <= kMaxExpandedOps ops and kMaxExpandedTensors tensors, so live-byte sums
// fit int64.
//
// Thread-safety: plain values; free functions are reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "runtime/device_allocator.h"

namespace tessera::xema {

// A trace is written in the device allocator's terms (runtime/device_allocator.h).
using runtime::AlignBytes;
using runtime::kAlignmentBytes;
using runtime::KindName;
using runtime::kMaxTensorBytes;
using runtime::Section;
using runtime::SectionName;
using runtime::TensorKind;

inline constexpr int64_t kMaxTemplateOps = int64_t{1} << 20;
inline constexpr int64_t kMaxTemplateTensors = int64_t{1} << 20;
inline constexpr int64_t kMaxExpandedOps = int64_t{1} << 22;
inline constexpr int64_t kMaxExpandedTensors = int64_t{1} << 22;
inline constexpr int64_t kMaxSteps = 10000;
inline constexpr int64_t kMaxTraceBatch = 64;  // TraceKey::batch
inline constexpr const char* kTraceFormat = "tessera.xema.trace/1";

enum class Phase { kText, kDenoise, kVae };

const char* PhaseName(Phase phase);  // "text", "denoise", "vae"
// The phase named `name` (PhaseName's inverse); false for any other name.
bool PhaseFromName(std::string_view name, Phase* phase);

struct TraceKey {
  std::string model = "unnamed";
  int64_t width = 0;   // pixels
  int64_t height = 0;  // pixels
  int64_t frames = 1;  // 1 for images
  int64_t steps = 1;   // denoising steps = repetitions of the body
  bool cfg = false;    // classifier-free guidance on (two predictions per step)
  int64_t sp_degree = 1;
  std::string dtype = "bf16";
  int64_t batch = 1;  // requests run together in each pass, [1, kMaxTraceBatch]
};

struct TraceOp {
  std::string name;
  Phase phase = Phase::kDenoise;
  double flops = 0;   // floating-point operations of one execution
  double bytes = 0;   // bytes moved to/from memory by one execution
  double time_s = 0;  // measured or modeled seconds of one execution
};

struct TraceTensor {
  int64_t id = 0;
  std::string name;
  int64_t bytes = kAlignmentBytes;  // multiple of kAlignmentBytes, > 0
  Phase phase = Phase::kDenoise;
  TensorKind kind = TensorKind::kActivation;
  int alloc_op = 0;  // template op index (ignored for weights)
  int free_op = 0;   // template op index (ignored for weights)
  bool free_next_step = false;
  int last_free_op = -1;  // template op index in the epilogue, iff free_next_step
  int free_step = -1;     // prologue tensors freed at a body op: that step (-1: the last)
};

struct MemoryTrace {
  TraceKey key;
  std::string provenance = "synthetic";  // recorded, modeled or synthetic
  std::vector<TraceOp> prologue, body, epilogue;
  std::vector<TraceTensor> tensors;

  int num_template_ops() const {
    return static_cast<int>(prologue.size() + body.size() + epilogue.size());
  }
  // Section and op of template op index `t` (0 <= t < num_template_ops(), CHECKed).
  Section SectionOf(int t) const;
  const TraceOp& op(int t) const;
};

// OK, or InvalidArgument naming the first bad field (paths as in the JSON: "tensors[3].free_op").
core::Status Validate(const MemoryTrace& trace);

core::Json ToJson(const MemoryTrace& trace);
// Parses and validates; messages are prefixed with `source` (a file name).
core::StatusOr<MemoryTrace> TraceFromJson(const core::Json& j, const std::string& source);
core::StatusOr<MemoryTrace> ReadTraceFile(const std::string& path);

// One op of the expanded timeline.
struct FlatOp {
  int template_op = 0;
  int step = -1;  // 0-based denoising step for body ops, -1 in the prologue and epilogue
};

// One tensor instance of the expanded timeline, live over flat ops [alloc_op, free_op].
struct FlatTensor {
  int tensor = 0;  // index into MemoryTrace::tensors
  int step = -1;   // the step that allocated it (body tensors), else -1
  int64_t bytes = 0;
  TensorKind kind = TensorKind::kActivation;
  int alloc_op = 0;
  int free_op = 0;
};

// Tensors are ordered by (alloc_op, tensor index): the allocation order.
struct ExpandedTrace {
  std::vector<FlatOp> ops;
  std::vector<FlatTensor> tensors;
};

// Validates `trace` and expands it (see the file comment).
core::StatusOr<ExpandedTrace> Expand(const MemoryTrace& trace);

// "denoise.attn@step3" for body ops, the template name otherwise.
std::string FlatOpName(const MemoryTrace& trace, const FlatOp& op);

// Bytes live at each flat op (size ops.size()); weights counted iff include_weights.
std::vector<int64_t> LiveBytes(const ExpandedTrace& x, bool include_weights = true);
// Sum of the weight tensors' bytes (resident for the whole request).
int64_t WeightBytes(const ExpandedTrace& x);
// Peak live bytes over the timeline, weights included: no layout of this trace in one arena
// can be smaller (XLA's NoFragmentationStatsHeap bound).
int64_t LowerBoundBytes(const ExpandedTrace& x);

// The request's seconds by its ops' time_s: prologue + steps x body + epilogue.
double RequestSeconds(const MemoryTrace& trace);
// Sum of the trace's weight tensors' bytes.
int64_t WeightBytes(const MemoryTrace& trace);

// One line: "tiny-t2i 64x64x1 steps 4 cfg on sp 1 bf16 (synthetic)"; with a batch > 1
// "... sp 1 batch 2 bf16 (synthetic)".
std::string Describe(const MemoryTrace& trace);

}  // namespace tessera::xema
