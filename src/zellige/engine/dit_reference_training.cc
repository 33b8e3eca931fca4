#include "zellige/engine/dit_reference_training.h"

#include <string>
#include <utility>

#include "models/attention_backend.h"
#include "models/flow_matching.h"

namespace tessera::zellige::engine {

core::StatusOr<ReferenceTraining> RunReferenceTraining(const models::SmallDitConfig& config,
                                                       const models::AdamWOptions& options,
                                                       const workload::Batch& batch, uint64_t seed,
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
  ReferenceTraining r;
  for (int s = 0; s < steps; ++s) {
    ASSIGN_OR_RETURN(models::FlowMatchingBatch b,
                     models::MakeFlowMatchingBatch(seed, config.in_channels, ids, lengths, s));
    // TrainStep leaves the step's gradients in the model (AdamW reads them) and its forward
    // in acts.
    ASSIGN_OR_RETURN(double loss, models::TrainStep(model, opt, b, backend, &acts));
    r.losses.push_back(loss);
    if (s == 0) {
      r.first_gradients.assign(model.Gradients().begin(), model.Gradients().end());
      r.first_activations = acts;
    }
  }
  return r;
}

core::StatusOr<std::vector<double>> ReferenceLossCurve(const models::SmallDitConfig& config,
                                                       const models::AdamWOptions& options,
                                                       const workload::Batch& batch, uint64_t seed,
                                                       int steps) {
  ASSIGN_OR_RETURN(ReferenceTraining r, RunReferenceTraining(config, options, batch, seed, steps));
  return std::move(r.losses);
}

namespace {

// Rows [ref_row, ref_row + rows) of ref against rows [row, row + rows) of got, `width` floats
// per row, accumulated into *err.
void AddRows(std::span<const float> got, std::span<const float> ref, int64_t width, int64_t row,
             int64_t ref_row, int64_t rows, TensorError* err) {
  err->Add(got.subspan(row * width, rows * width), ref.subspan(ref_row * width, rows * width));
}

core::Status SizeMismatch(const std::string& what, size_t got, size_t want) {
  return core::InvalidArgument("CompareFirstStep: " + what + " has " + std::to_string(got) +
                               " floats, must be " + std::to_string(want));
}

}  // namespace

core::StatusOr<FirstStepCheck> CompareFirstStep(const ReferenceTraining& reference,
                                                const std::vector<models::ParameterTensor>& tensors,
                                                std::span<const float> gradients,
                                                const models::SmallDitActivations& acts,
                                                const AttentionEngine& engine) {
  FirstStepCheck c;
  // Gradients, per named tensor.
  const std::vector<float>& ref_grad = reference.first_gradients;
  if (gradients.size() != ref_grad.size()) {
    return SizeMismatch("gradients", gradients.size(), ref_grad.size());
  }
  for (const models::ParameterTensor& t : tensors) {
    if (t.offset < 0 || t.offset + t.size() > static_cast<int64_t>(ref_grad.size())) {
      return core::InvalidArgument("CompareFirstStep: tensor " + t.name +
                                   " lies outside the gradient vector");
    }
    const ErrorStats e =
        CompareTensors(gradients.subspan(t.offset, t.size()),
                       std::span<const float>(ref_grad).subspan(t.offset, t.size()));
    if (c.worst_gradient_tensor.empty() || e.max_rel > c.gradient.max_rel)
      c.worst_gradient_tensor = t.name;
    c.gradient = WorstOf(c.gradient, e);
  }

  // Outputs of this rank's rows.
  const std::vector<LocalPlacement>& local = engine.local_placements();
  if (local.empty()) return c;
  const models::SmallDitActivations& ref = reference.first_activations;
  if (acts.num_tokens != engine.local_tokens() || acts.cu_seqlens.size() != local.size() + 1) {
    return core::InvalidArgument(
        "CompareFirstStep: activations of " + std::to_string(acts.num_tokens) + " tokens in " +
        std::to_string(acts.cu_seqlens.size()) + " offsets, must be the engine's " +
        std::to_string(engine.local_tokens()) + " tokens in " + std::to_string(local.size()) +
        " placements (+1)");
  }
  if (acts.blocks.size() != ref.blocks.size()) {
    return core::InvalidArgument("CompareFirstStep: " + std::to_string(acts.blocks.size()) +
                                 " layers, reference has " + std::to_string(ref.blocks.size()));
  }
  const int64_t out_width =
      ref.num_tokens > 0 ? static_cast<int64_t>(ref.output.size()) / ref.num_tokens : 0;
  if (acts.output.size() != static_cast<size_t>(acts.num_tokens * out_width)) {
    return SizeMismatch("output", acts.output.size(), acts.num_tokens * out_width);
  }
  TensorError out_err;
  std::vector<TensorError> attn_err(ref.blocks.size());
  for (size_t i = 0; i < local.size(); ++i) {
    const LocalPlacement& lp = local[i];
    if (acts.cu_seqlens[i] != lp.offset || lp.seq < 0 ||
        lp.seq + 1 >= static_cast<int>(ref.cu_seqlens.size()) ||
        ref.cu_seqlens[lp.seq] + lp.token_end > ref.cu_seqlens[lp.seq + 1]) {
      return core::InvalidArgument("CompareFirstStep: local placement " + std::to_string(i) +
                                   " (sequence " + std::to_string(lp.seq) +
                                   ") does not match the activations or the reference batch");
    }
    const int64_t ref_row = ref.cu_seqlens[lp.seq] + lp.token_begin;
    AddRows(acts.output, ref.output, out_width, lp.offset, ref_row, lp.size(), &out_err);
    for (size_t l = 0; l < ref.blocks.size(); ++l) {
      const std::vector<float>& a = acts.blocks[l].attn;
      const std::vector<float>& b = ref.blocks[l].attn;
      const int64_t width = static_cast<int64_t>(b.size()) / ref.num_tokens;
      if (a.size() != static_cast<size_t>(acts.num_tokens * width)) {
        return SizeMismatch("attention output " + std::to_string(l), a.size(),
                            acts.num_tokens * width);
      }
      AddRows(a, b, width, lp.offset, ref_row, lp.size(), &attn_err[l]);
    }
  }
  c.model_output = out_err.Stats();
  for (const TensorError& e : attn_err) c.attention_output = WorstOf(c.attention_output, e.Stats());
  c.output = WorstOf(c.model_output, c.attention_output);
  return c;
}

}  // namespace tessera::zellige::engine
