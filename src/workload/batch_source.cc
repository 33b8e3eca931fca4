#include "workload/batch_source.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/input_file.h"
#include "core/json_util.h"

namespace tessera::workload {

core::Status ValidateTokenScale(double token_scale) {
  if (!(token_scale > 0) || token_scale > 1) {
    return core::InvalidArgument("token_scale: got " + std::to_string(token_scale) +
                                 ", must be in (0, 1] (e.g. 0.01 for a CPU-sized run)");
  }
  return core::Status::Ok();
}

void ScaleTokens(double token_scale, Batch* batch) {
  if (token_scale == 1) return;
  for (auto& s : batch->sequences) {
    s.tokens = std::max<int64_t>(1, std::llround(static_cast<double>(s.tokens) * token_scale));
  }
}

core::StatusOr<Batch> LoadBatch(const BatchSource& source, int num_ranks) {
  RETURN_IF_ERROR(ValidateTokenScale(source.token_scale));
  Batch batch;
  core::StatusOr<int> mix = ParseMixture(source.workload);
  if (mix.ok()) {
    WorkloadSpec spec;
    spec.video_percent = *mix;
    ASSIGN_OR_RETURN(spec.tokens_per_gpu, ParseLoad(source.load));
    spec.video_seconds = source.video_seconds;
    spec.num_ranks = num_ranks;
    spec.seed = source.seed;
    ASSIGN_OR_RETURN(batch, GenerateBatch(spec));
  } else {
    if (!core::PathExists(source.workload)) return mix.status();
    ASSIGN_OR_RETURN(core::Json j, core::ReadJsonFile(source.workload));
    ASSIGN_OR_RETURN(batch, BatchFromJson(j, source.workload));
  }
  ScaleTokens(source.token_scale, &batch);
  return batch;
}

}  // namespace tessera::workload
