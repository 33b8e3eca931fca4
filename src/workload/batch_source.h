// BatchSource and LoadBatch: where a step's global batch comes from, shared by every front
// end (`tessera zellige plan|run|compare`, the Python binding, servers).
//
// A source is either a named mixture "vNN" (a batch generated for `num_ranks` ranks at
// `load` tokens per rank of `video_seconds` clips, deterministic in `seed`; batch.h) or the
// path of a batch JSON file (BatchFromJson). Every sequence's token count is then multiplied
// by `token_scale` and rounded to the nearest integer, at least 1 token (scale 1: unchanged):
// the CPU-sized runs scale a paper-sized mixture down this way.
// Errors: InvalidArgument naming the field (`token_scale`, the mixture, the file's fields);
// a name that is neither a mixture nor an existing file returns the mixture parser's error.
// Plain values and pure functions (LoadBatch reads the file); thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "workload/batch.h"

namespace tessera::workload {

struct BatchSource {
  std::string workload = "v50";  // "vNN" or the path of a batch JSON file
  std::string load = "high";     // "high", "low" or tokens per rank (mixtures only)
  double video_seconds = 15;     // clip length of the mixture's videos
  uint64_t seed = 1;             // the mixture's generator seed
  double token_scale = 1;        // in (0, 1]; every sequence's tokens x this, >= 1 token
};

// InvalidArgument unless 0 < token_scale <= 1.
core::Status ValidateTokenScale(double token_scale);

// Multiplies every sequence's token count by `token_scale` (rounded, at least 1).
void ScaleTokens(double token_scale, Batch* batch);

// The batch of `source` for a job of `num_ranks` ranks (see the header comment).
core::StatusOr<Batch> LoadBatch(const BatchSource& source, int num_ranks);

}  // namespace tessera::workload
