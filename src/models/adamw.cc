#include "models/adamw.h"

#include <cmath>
#include <string>

namespace tessera::models {

core::StatusOr<AdamW> AdamW::Create(int64_t num_parameters, const AdamWOptions& o) {
  if (num_parameters < 0) {
    return core::InvalidArgument("num_parameters: got " + std::to_string(num_parameters) +
                                 ", must be >= 0");
  }
  auto bad = [](const char* name, float v, const char* allowed) {
    return core::InvalidArgument(std::string("AdamWOptions.") + name + ": got " +
                                 std::to_string(v) + ", must be " + allowed);
  };
  if (!std::isfinite(o.learning_rate) || o.learning_rate < 0.0f) {
    return bad("learning_rate", o.learning_rate, ">= 0 and finite");
  }
  if (!(o.beta1 >= 0.0f && o.beta1 < 1.0f)) return bad("beta1", o.beta1, "in [0, 1)");
  if (!(o.beta2 >= 0.0f && o.beta2 < 1.0f)) return bad("beta2", o.beta2, "in [0, 1)");
  if (!std::isfinite(o.eps) || !(o.eps > 0.0f)) return bad("eps", o.eps, "> 0 and finite");
  if (!std::isfinite(o.weight_decay) || o.weight_decay < 0.0f) {
    return bad("weight_decay", o.weight_decay, ">= 0 and finite");
  }
  return AdamW(num_parameters, o);
}

core::Status AdamW::Step(std::span<float> params, std::span<const float> grads,
                         std::span<const uint8_t> decay_mask) {
  if (!decay_mask.empty() && decay_mask.size() != m_.size()) {
    return core::InvalidArgument("AdamW::Step: decay_mask has " +
                                 std::to_string(decay_mask.size()) + " entries, need 0 or " +
                                 std::to_string(m_.size()));
  }
  if (params.size() != m_.size() || grads.size() != m_.size()) {
    return core::InvalidArgument("AdamW::Step: got " + std::to_string(params.size()) +
                                 " parameters and " + std::to_string(grads.size()) +
                                 " gradients, need " + std::to_string(m_.size()) + " each");
  }
  ++step_;
  const double bc1 = 1.0 - std::pow(static_cast<double>(options_.beta1), step_);
  const double bc2 = 1.0 - std::pow(static_cast<double>(options_.beta2), step_);
  const float lr = options_.learning_rate;
  const float decay = 1.0f - lr * options_.weight_decay;
  const float b1 = options_.beta1, b2 = options_.beta2;
  const float inv_bc1 = static_cast<float>(1.0 / bc1);
  const float inv_bc2 = static_cast<float>(1.0 / bc2);
  for (size_t i = 0; i < params.size(); ++i) {
    const float gi = grads[i];
    m_[i] = b1 * m_[i] + (1.0f - b1) * gi;
    v_[i] = b2 * v_[i] + (1.0f - b2) * gi * gi;
    const float m_hat = m_[i] * inv_bc1;
    const float v_hat = v_[i] * inv_bc2;
    const float keep = (decay_mask.empty() || decay_mask[i] != 0) ? decay : 1.0f;
    params[i] = params[i] * keep - lr * m_hat / (std::sqrt(v_hat) + options_.eps);
  }
  return core::Status::Ok();
}

}  // namespace tessera::models
