#include "runtime/dit_reference_training.h"

#include <string>

#include "models/attention_backend.h"
#include "models/flow_matching.h"

namespace tessera::runtime {

core::StatusOr<std::vector<double>> ReferenceLossCurve(const models::SmallDitConfig& config,
                                                       const models::AdamWOptions& options,
                                                       const zellige::Batch& batch, uint64_t seed,
                                                       int steps) {
  if (steps < 1) {
    return core::InvalidArgument("ReferenceLossCurve: steps = " + std::to_string(steps) +
                                 ", must be >= 1");
  }
  if (batch.sequences.empty()) return core::InvalidArgument("ReferenceLossCurve: empty batch");
  ASSIGN_OR_RETURN(models::SmallDit model, models::SmallDit::Create(config));
  ASSIGN_OR_RETURN(models::AdamW opt, models::AdamW::Create(model.NumParameters(), options));
  std::vector<int64_t> ids, lengths;
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    ids.push_back(static_cast<int64_t>(i));
    lengths.push_back(batch.sequences[i].tokens);
  }
  models::LocalAttentionBackend backend;
  models::SmallDitActivations acts;
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    ASSIGN_OR_RETURN(models::FlowMatchingBatch b,
                     models::MakeFlowMatchingBatch(seed, config.in_channels, ids, lengths, s));
    ASSIGN_OR_RETURN(double loss, models::TrainStep(model, opt, b, backend, &acts));
    losses.push_back(loss);
  }
  return losses;
}

}  // namespace tessera::runtime
