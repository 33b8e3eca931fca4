#include "elaswave/job_shape.h"

#include <fmt/format.h>

namespace tessera::elaswave {

core::Status ValidateJobShape(const JobShape& s, int processes) {
  constexpr int kMaxDegree = 1024;
  const auto degree = [&](const char* name, int v) -> core::Status {
    if (v < 1 || v > kMaxDegree) {
      return core::InvalidArgument(
          fmt::format("{}: got {}, must be in [1, {}]", name, v, kMaxDegree));
    }
    return core::Status::Ok();
  };
  RETURN_IF_ERROR(degree("dp", s.dp));
  RETURN_IF_ERROR(degree("pp", s.pp));
  RETURN_IF_ERROR(degree("tp", s.tp));
  if (s.num_blocks < 1) {
    return core::InvalidArgument(fmt::format("layers: got {}, must be >= 1", s.num_blocks));
  }
  if (static_cast<int64_t>(s.dp) * s.pp * s.tp > 4096) {
    return core::InvalidArgument(fmt::format(
        "dp x pp x tp: got {} x {} x {} = {} processes, at most 4096 run on one launcher", s.dp,
        s.pp, s.tp, static_cast<int64_t>(s.dp) * s.pp * s.tp));
  }
  if (processes >= 0 && s.processes() != processes) {
    return core::InvalidArgument(
        fmt::format("processes: got {}, but dp x pp x tp = {} x {} x {} = {}; they must be equal",
                    processes, s.dp, s.pp, s.tp, s.processes()));
  }
  if (s.pp > s.num_blocks) {
    return core::InvalidArgument(
        fmt::format("pp: got {}, but the model has {} layers; every stage needs at least one, "
                    "so pp must be <= {}",
                    s.pp, s.num_blocks, s.num_blocks));
  }
  if (s.global_batch < 1) {
    return core::InvalidArgument(fmt::format("global-batch: got {}, must be >= 1", s.global_batch));
  }
  if (s.micro_batch < 1 || s.micro_batch > s.global_batch) {
    return core::InvalidArgument(fmt::format("micro-batch: got {}, must be in [1, global-batch {}]",
                                             s.micro_batch, s.global_batch));
  }
  if (s.global_batch % s.micro_batch != 0) {
    return core::InvalidArgument(fmt::format(
        "global-batch: got {}, not divisible by micro-batch {}; the batch must split "
        "into whole micro-batches (e.g. global-batch {})",
        s.global_batch, s.micro_batch, (s.global_batch / s.micro_batch) * s.micro_batch));
  }
  const int64_t m = s.num_micro_batches();
  if (m % s.dp != 0) {
    return core::InvalidArgument(fmt::format(
        "global-batch: got {} = {} micro-batches of {}, not divisible by dp {}; at the start every "
        "replica takes the same number (e.g. global-batch {})",
        s.global_batch, m, s.micro_batch, s.dp, ((m + s.dp - 1) / s.dp) * s.dp * s.micro_batch));
  }
  return core::Status::Ok();
}

std::string SlotName(int slot, int num_blocks) {
  if (slot == 0) return "embedding";
  if (slot == num_blocks + 1) return "head";
  return fmt::format("block {}", slot - 1);
}

}  // namespace tessera::elaswave
