// Tensor comparison for differential tests and `--check`: how far a computed tensor is from
// its reference, as one norm-wise relative error.
//
// Over element pairs (got, ref):
//   abs = max |got - ref|   (+inf as soon as got or ref is not finite),
//   rel = abs / max(max |ref|, kTinyReference)
// i.e. the max-norm of the difference over the max-norm of the reference, over the SAME
// elements; well defined for any input, including an all-zero reference (then rel = abs /
// 1e-30: 0 when equal, huge otherwise). Element-wise ratios are not used: they are
// meaningless near zero. Plain values; a TensorError is used by one thread.
#pragma once

#include <span>

namespace tessera::core {

struct ErrorStats {
  double max_abs = 0;
  double max_rel = 0;
};

class TensorError {
 public:
  static constexpr double kTinyReference = 1e-30;

  void Add(double got, double ref);
  // Element-wise pairs; got and ref must have the same size (CHECK).
  void Add(std::span<const float> got, std::span<const float> ref);
  ErrorStats Stats() const;

 private:
  double max_diff_ = 0;
  double max_ref_ = 0;
};

// The whole-tensor error (one TensorError over all pairs); sizes must match (CHECK).
ErrorStats CompareTensors(std::span<const float> got, std::span<const float> ref);

// The worst of two: max of max_abs and max of max_rel (possibly from different tensors);
// NaN counts as +inf.
ErrorStats WorstOf(const ErrorStats& a, const ErrorStats& b);

}  // namespace tessera::core
