#include "xema/trace_generator.h"

#include <cmath>

#include "core/check.h"
#include "core/rng.h"

namespace tessera::xema {

MemoryTrace RandomTrace(uint64_t seed, const RandomTraceOptions& o) {
  CHECK(o.prologue_ops >= 0 && o.body_ops >= 0 && o.epilogue_ops >= 0);
  CHECK(o.prologue_ops + o.body_ops + o.epilogue_ops >= 1);
  CHECK(o.steps >= 1 && o.weights >= 0 && o.tensors >= 0);
  CHECK(o.min_bytes >= 1 && o.min_bytes <= o.max_bytes && o.max_bytes <= kMaxTensorBytes);
  core::Rng rng(seed);
  MemoryTrace t;
  t.key.model = "random-" + std::to_string(seed);
  t.key.width = 64;
  t.key.height = 64;
  t.key.steps = o.steps;
  t.provenance = "synthetic";
  for (int i = 0; i < o.prologue_ops; ++i)
    t.prologue.push_back({"pro" + std::to_string(i), Phase::kText, 1e6, 1e4, 1e-4});
  for (int i = 0; i < o.body_ops; ++i)
    t.body.push_back({"step" + std::to_string(i), Phase::kDenoise, 1e7, 1e5, 1e-3});
  for (int i = 0; i < o.epilogue_ops; ++i)
    t.epilogue.push_back({"vae" + std::to_string(i), Phase::kVae, 1e7, 1e5, 1e-3});
  const int p = o.prologue_ops, s = o.body_ops, e = o.epilogue_ops;
  const double log_lo = std::log(static_cast<double>(o.min_bytes));
  const double log_hi = std::log(static_cast<double>(o.max_bytes));
  auto bytes = [&] {
    const double v = std::exp(rng.Uniform(log_lo, log_hi + 1e-12));
    int64_t b = std::llround(v);
    b = std::min(std::max(b, o.min_bytes), o.max_bytes);
    return AlignBytes(b);
  };
  for (int i = 0; i < o.weights; ++i) {
    TraceTensor w;
    w.id = static_cast<int64_t>(t.tensors.size());
    w.name = "w";  // appended: GCC 12 warns falsely (-Wrestrict) on "w" + to_string
    w.name += std::to_string(i);
    w.bytes = bytes();
    w.phase = Phase::kDenoise;
    w.kind = TensorKind::kWeight;
    t.tensors.push_back(w);
  }
  const int n = p + s + e;
  for (int i = 0; i < o.tensors; ++i) {
    TraceTensor x;
    x.id = static_cast<int64_t>(t.tensors.size());
    x.name = "t";
    x.name += std::to_string(i);
    x.bytes = bytes();
    x.kind = rng.Uniform() < 0.2 ? TensorKind::kWorkspace : TensorKind::kActivation;
    const bool in_body = s > 0 && rng.Uniform() < o.body_fraction;
    if (in_body) {
      x.alloc_op = p + static_cast<int>(rng.Below(s));
      x.phase = Phase::kDenoise;
      if (e > 0 && rng.Uniform() < o.carry_probability) {
        x.free_next_step = true;
        x.free_op = p + static_cast<int>(rng.Below(s));
        x.last_free_op = p + s + static_cast<int>(rng.Below(e));
      } else {
        // Same step, or (rarely) held until an epilogue op.
        const int hi = (e > 0 && rng.Uniform() < 0.1) ? n : p + s;
        x.free_op = x.alloc_op + static_cast<int>(rng.Below(hi - x.alloc_op));
      }
    } else {
      // Outside the body: alloc in the prologue or epilogue, free anywhere after.
      const int outside = p + e;
      if (outside == 0) {
        x.alloc_op = 0;
        x.free_op = 0;
      } else {
        const int k = static_cast<int>(rng.Below(outside));
        x.alloc_op = k < p ? k : p + s + (k - p);
        x.free_op = x.alloc_op + static_cast<int>(rng.Below(n - x.alloc_op));
      }
      if (t.SectionOf(x.alloc_op) == Section::kPrologue &&
          t.SectionOf(x.free_op) == Section::kBody && rng.Uniform() < 0.5) {
        x.free_step = static_cast<int>(rng.Below(o.steps));
      }
      x.phase = t.SectionOf(x.alloc_op) == Section::kPrologue ? Phase::kText : Phase::kVae;
      if (t.SectionOf(x.alloc_op) == Section::kBody) x.phase = Phase::kDenoise;
    }
    t.tensors.push_back(x);
  }
  core::Status st = Validate(t);
  CHECK(st.ok()) << st.ToString();
  return t;
}

}  // namespace tessera::xema
