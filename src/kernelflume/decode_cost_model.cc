#include "kernelflume/decode_cost_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "hw/gemm_model.h"
#include "models/generate.h"

namespace tessera::kernelflume {

namespace {

constexpr double kBf16Bytes = 2;
constexpr double kLseBytes = 4;
constexpr double kGiB = 1024.0 * 1024 * 1024;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One layer's seven linears for `rows` tokens, split over w tensor-parallel GPUs.
double LinearsSeconds(const models::LlamaConfig& m, const hw::Device& d, int64_t rows, int w) {
  if (rows <= 0) return 0;
  const int64_t q = m.num_heads * m.head_dim, kv = m.num_kv_heads * m.head_dim;
  // Column-parallel: outputs split w ways.
  double s = hw::RooflineGemmSeconds(d, rows, CeilDiv(q, w), m.hidden);
  s += 2 * hw::RooflineGemmSeconds(d, rows, CeilDiv(kv, w), m.hidden);
  s += 2 * hw::RooflineGemmSeconds(d, rows, CeilDiv(m.ffn_hidden, w), m.hidden);
  // Row-parallel: inputs split w ways.
  s += hw::RooflineGemmSeconds(d, rows, m.hidden, CeilDiv(q, w));
  s += hw::RooflineGemmSeconds(d, rows, m.hidden, CeilDiv(m.ffn_hidden, w));
  return s;
}

// A ring all-reduce of `bytes` over w GPUs on `link`.
double AllReduceSeconds(double bytes, int w, const hw::Link& link) {
  if (w <= 1) return 0;
  const double steps = 2.0 * (w - 1);
  return steps * link.latency_s + steps / w * bytes / link.bw_bytes_per_s;
}

double WeightSeconds(const models::LlamaConfig& m, const hw::Cluster& c, int64_t rows, int w,
                     double* allreduce_s) {
  if (rows <= 0) return 0;
  const double ar =
      2 * AllReduceSeconds(static_cast<double>(rows) * m.hidden * kBf16Bytes, w, c.intra);
  if (allreduce_s != nullptr) *allreduce_s = ar;
  return LinearsSeconds(m, c.device, rows, w) + ar;
}

// Attention (read every KV byte once) plus the queries' round trip, on the busiest node, for
// `batch` requests holding `kv_tokens` tokens in all, spread over `nodes` `attn`s.
double AttentionAndCommSeconds(const models::LlamaConfig& m, const hw::Cluster& c,
                               const hw::Device& attn, int64_t batch, double kv_tokens, int nodes,
                               double* attention_s, double* comm_s) {
  if (batch <= 0) return 0;
  const double kv_per_token = static_cast<double>(m.KvBytesPerToken(2)) / m.num_layers;
  const double a = kv_tokens / nodes * kv_per_token / attn.mem_bw_bytes_per_s;
  // Every request queries every node (a long request's ranges span the pool): one message per
  // node and layer carrying the batch's queries, answered with outputs and LSEs.
  const double per_request = m.num_heads * m.head_dim * kBf16Bytes * 2 + m.num_heads * kLseBytes;
  const double comm = c.inter.latency_s + batch * per_request / c.inter.bw_bytes_per_s;
  if (attention_s != nullptr) *attention_s = a;
  if (comm_s != nullptr) *comm_s = comm;
  return a + comm;
}

double LmHeadSeconds(const models::LlamaConfig& m, const hw::Device& d, int64_t rows, int w) {
  return hw::RooflineGemmSeconds(d, rows, CeilDiv(m.vocab, w), m.hidden);
}

}  // namespace

double KernelFlumeStepSeconds(const models::LlamaConfig& model, const hw::Cluster& cluster,
                              const hw::Device& attn_device, const FleetStep& step,
                              bool pipelined) {
  if (step.batch <= 0) return 0;
  const int w = step.weight_gpus, n = std::max(1, step.attn_nodes);
  const double lm = LmHeadSeconds(model, cluster.device, step.batch, w);
  const int64_t b1 = (step.batch + 1) / 2, b2 = step.batch / 2;
  if (!pipelined || b2 == 0) {
    return model.num_layers * (WeightSeconds(model, cluster, step.batch, w, nullptr) +
                               AttentionAndCommSeconds(model, cluster, attn_device, step.batch,
                                                       step.kv_tokens, n, nullptr, nullptr)) +
           lm;
  }
  // The halves split the KV by their request counts (balanced by attention tokens).
  const double kv1 = step.kv_tokens * static_cast<double>(b1) / step.batch;
  const double w1 = WeightSeconds(model, cluster, b1, w, nullptr);
  const double w2 = WeightSeconds(model, cluster, b2, w, nullptr);
  const double a1 =
      AttentionAndCommSeconds(model, cluster, attn_device, b1, kv1, n, nullptr, nullptr);
  const double a2 = AttentionAndCommSeconds(model, cluster, attn_device, b2, step.kv_tokens - kv1,
                                            n, nullptr, nullptr);
  return model.num_layers * std::max(w1 + w2, a1 + a2) + std::min(w1, a1) + lm;
}

double InstanceStepSeconds(const models::LlamaConfig& model, const hw::Cluster& cluster,
                           const FleetStep& step, double* attention_s) {
  if (step.batch <= 0) return 0;
  const int w = step.weight_gpus;
  const double a = step.kv_tokens * static_cast<double>(model.KvBytesPerToken(2)) /
                   model.num_layers / w / cluster.device.mem_bw_bytes_per_s;
  if (attention_s != nullptr) *attention_s = a;
  return model.num_layers * (WeightSeconds(model, cluster, step.batch, w, nullptr) + a) +
         LmHeadSeconds(model, cluster.device, step.batch, w);
}

double KernelFlumePrefillSeconds(const models::LlamaConfig& model, const hw::Cluster& cluster,
                                 const hw::Device& attn_device, int64_t new_tokens,
                                 int64_t cached_tokens, int attn_nodes, int weight_gpus) {
  if (new_tokens <= 0) return 0;
  const int w = weight_gpus, n = std::max(1, attn_nodes);
  const hw::Device& d = cluster.device;
  const double hd = static_cast<double>(model.num_heads * model.head_dim);
  const double nt = static_cast<double>(new_tokens);
  // Chunks: q full ones of C tokens and a last one of r (closed forms of the sums).
  const double c = static_cast<double>(models::kPrefillChunkTokens);
  const double q = std::floor(nt / c), r = nt - q * c;
  const double chunks = q + (r > 0 ? 1 : 0);
  const double self_pairs = q * c * (c + 1) / 2 + r * (r + 1) / 2;
  // Chunk k (0-based) of size s_k attends cached + k C earlier tokens.
  const double cached = static_cast<double>(cached_tokens);
  const double hist_pairs = nt * cached + c * c * q * (q - 1) / 2 + r * q * c;
  const double hist_tokens_read = chunks * cached + c * q * (q - 1) / 2 + (r > 0 ? q * c : 0);
  const double self_s =
      4.0 * hd * self_pairs / w / (d.PeakFlops(hw::Dtype::kBF16) * d.compute_efficiency);
  const double hist_bytes = hist_tokens_read * model.KvBytesPerToken(2) / model.num_layers / n;
  const double hist_s =
      hist_pairs <= 0
          ? 0
          : std::max(4.0 * hd * hist_pairs / n /
                         (attn_device.PeakFlops(hw::Dtype::kBF16) * attn_device.compute_efficiency),
                     hist_bytes / attn_device.mem_bw_bytes_per_s) +
                chunks * cluster.inter.latency_s +
                nt * (hd * kBf16Bytes * 2 + model.num_heads * kLseBytes) /
                    cluster.inter.bw_bytes_per_s;
  return model.num_layers *
             (WeightSeconds(model, cluster, new_tokens, w, nullptr) + self_s + hist_s) +
         LmHeadSeconds(model, d, 1, w);
}

double PrefillSeconds(const models::LlamaConfig& model, const hw::Cluster& cluster,
                      int64_t new_tokens, int64_t cached_tokens, int weight_gpus) {
  if (new_tokens <= 0) return 0;
  const int w = weight_gpus;
  const hw::Device& d = cluster.device;
  // Scores and weighted values: 2 GEMMs of 2 FLOPs per multiply-add, each new token against the
  // cached tokens and (causally) the new ones before it.
  const double pairs = static_cast<double>(new_tokens) *
                       (static_cast<double>(cached_tokens) + (new_tokens + 1) / 2.0);
  const double flops = 4.0 * model.num_heads * model.head_dim * pairs / w;
  const double kv_read =
      static_cast<double>(cached_tokens) * model.KvBytesPerToken(2) / model.num_layers / w;
  const double attention = std::max(flops / (d.PeakFlops(hw::Dtype::kBF16) * d.compute_efficiency),
                                    kv_read / d.mem_bw_bytes_per_s);
  return model.num_layers * (WeightSeconds(model, cluster, new_tokens, w, nullptr) + attention) +
         LmHeadSeconds(model, d, 1, w);
}

core::StatusOr<DecodeStepCost> ModelDecodeStep(const models::LlamaConfig& model,
                                               const hw::Cluster& cluster,
                                               const DecodeShape& shape) {
  if (shape.batch < 1) {
    return core::InvalidArgument(fmt::format("batch: got {}, must be >= 1", shape.batch));
  }
  if (shape.context_tokens < 0) {
    return core::InvalidArgument(
        fmt::format("context_tokens: got {}, must be >= 0", shape.context_tokens));
  }
  if (shape.attn_nodes < 1) {
    return core::InvalidArgument(fmt::format("attn_nodes: got {}, must be >= 1", shape.attn_nodes));
  }
  if (shape.weight_gpus < 1 || shape.weight_gpus > cluster.ranks_per_node) {
    return core::InvalidArgument(
        fmt::format("weight_gpus: got {}, must be in [1, {}] (the GPUs of one {} node)",
                    shape.weight_gpus, cluster.ranks_per_node, cluster.name));
  }
  RETURN_IF_ERROR(model.Validate());
  const int w = shape.weight_gpus;
  const double usable = cluster.usable_memory_bytes();
  DecodeStepCost r;
  r.weight_bytes_per_gpu = static_cast<double>(model.ParamCount()) * kBf16Bytes / w;
  r.kv_bytes_per_token = static_cast<double>(model.KvBytesPerToken(2));
  r.kv_tokens_needed = static_cast<double>(shape.batch) * shape.context_tokens;
  r.kv_tokens_per_attn_node = std::floor(usable / r.kv_bytes_per_token);
  r.kv_tokens_per_instance =
      std::max(0.0, std::floor((usable * w - r.weight_bytes_per_gpu * w) / r.kv_bytes_per_token));
  r.instance_fits = r.kv_tokens_needed <= r.kv_tokens_per_instance;
  if (r.weight_bytes_per_gpu > usable) {
    return core::FailedPrecondition(fmt::format(
        "{}: {:.1f} GiB of bf16 weights per GPU over {} weight GPU(s), but a {} holds {:.1f} GiB "
        "usable (raise weight_gpus)",
        model.name, r.weight_bytes_per_gpu / kGiB, w, cluster.device.name, usable / kGiB));
  }
  if (r.kv_tokens_needed / shape.attn_nodes > r.kv_tokens_per_attn_node) {
    return core::FailedPrecondition(fmt::format(
        "{} x {} KV tokens over {} attention node(s) is {:.0f} per node, but a {} holds {:.0f} "
        "(raise attn_nodes)",
        shape.batch, shape.context_tokens, shape.attn_nodes, r.kv_tokens_needed / shape.attn_nodes,
        cluster.device.name, r.kv_tokens_per_attn_node));
  }
  r.weight_s = WeightSeconds(model, cluster, shape.batch, w, &r.allreduce_s);
  AttentionAndCommSeconds(model, cluster, cluster.device, shape.batch, r.kv_tokens_needed,
                          shape.attn_nodes, &r.attention_s, &r.comm_s);
  r.lm_head_s = LmHeadSeconds(model, cluster.device, shape.batch, w);
  const FleetStep step{shape.batch, r.kv_tokens_needed, shape.attn_nodes, w};
  r.kernelflume_s = KernelFlumeStepSeconds(model, cluster, cluster.device, step, false);
  r.kernelflume_pipelined_s = KernelFlumeStepSeconds(model, cluster, cluster.device, step, true);
  // A whole instance's step with `rows` requests: the weights, then those requests' KV read on
  // its own W GPUs (no message), then the LM head.
  auto instance_step = [&](int64_t rows, double* attention_s) {
    return InstanceStepSeconds(
        model, cluster, FleetStep{rows, static_cast<double>(rows) * shape.context_tokens, 1, w},
        attention_s);
  };
  r.instance_s = instance_step(shape.batch, &r.instance_attention_s);
  const double usd_per_gpu_s = cluster.device.price_usd_per_hour / 3600;
  const double b = static_cast<double>(shape.batch);
  r.kernelflume_usd_per_mtok = (w + shape.attn_nodes) * usd_per_gpu_s * r.kernelflume_s / b * 1e6;
  r.instances_feasible =
      r.kv_tokens_per_instance > 0 && shape.context_tokens <= r.kv_tokens_per_instance;
  if (!r.instances_feasible) return r;
  r.instances = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(r.kv_tokens_needed / r.kv_tokens_per_instance)));
  r.instance_batch = CeilDiv(shape.batch, r.instances);
  r.instance_fleet_s = instance_step(r.instance_batch, nullptr);
  r.instances_usd_per_mtok =
      static_cast<double>(r.instances) * w * usd_per_gpu_s * r.instance_fleet_s / b * 1e6;
  return r;
}

}  // namespace tessera::kernelflume
