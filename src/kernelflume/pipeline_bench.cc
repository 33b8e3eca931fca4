#include "kernelflume/pipeline_bench.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>

#include "core/stats.h"
#include "core/tensor_error.h"
#include "kernelflume/attention_cluster.h"
#include "kernelflume/disaggregated_attention.h"
#include "kernelflume/generate_service.h"
#include "kernelflume/pipelined_decode.h"
#include "models/sampler.h"

namespace tessera::kernelflume {

using core::Status;

namespace {

using BenchClock = std::chrono::steady_clock;
constexpr int64_t kBenchFillChunk = 1024;

double MsSince(BenchClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(BenchClock::now() - t0).count();
}

// CPU time of this process, every thread, in ms.
double ProcessCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Core attention with no history: each query head attends only its own new token, so o is the
// new token's value of the head's KV head. What the weight node's compute costs alone.
class InstantAttention final : public models::CoreAttention {
 public:
  InstantAttention(int64_t heads, int64_t kv_heads, int64_t head_dim)
      : heads_(heads), group_(heads / kv_heads), head_dim_(head_dim) {}
  Status BeginLayer(int64_t, int64_t, int64_t, const float*) override { return Status::Ok(); }
  Status FinishLayer(int64_t, const float*, const float* v, float* o) override {
    for (int64_t h = 0; h < heads_; ++h) {
      std::memcpy(o + h * head_dim_, v + (h / group_) * head_dim_, head_dim_ * sizeof(float));
    }
    return Status::Ok();
  }

 private:
  int64_t heads_, group_, head_dim_;
};

// Uniform floats in [-1, 1) (splitmix64): fast enough to fill a long context.
class BenchRandom {
 public:
  explicit BenchRandom(uint64_t seed) : s_(seed) {}
  uint64_t Bits() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  void Fill(std::vector<float>& v) {
    for (float& x : v) x = static_cast<float>(Bits() >> 40) * (2.0f / 16777216.0f) - 1.0f;
  }

 private:
  uint64_t s_;
};

bool PinBenchThread(pid_t tid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(tid, sizeof(set), &set) == 0;
}

// The calling thread -> CPU 0; every other thread of this process -> `others_cpu`.
bool PinBenchProcess(int others_cpu) {
  bool ok = PinBenchThread(0, 0);
  const pid_t self = static_cast<pid_t>(gettid());
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(e.path().filename().c_str()));
    if (tid != self) ok = PinBenchThread(tid, others_cpu) && ok;
  }
  return ok && !ec;
}

Status CheckBenchOptions(const models::LlamaConfig& c, const PipelineBenchOptions& o,
                         int64_t positions_needed) {
  if (o.batch < 2) {
    return core::InvalidArgument(
        fmt::format("batch: got {}, must be >= 2 (two micro-batches need two requests)", o.batch));
  }
  if (o.context_tokens < 1) {
    return core::InvalidArgument(
        fmt::format("context_tokens: got {}, must be >= 1", o.context_tokens));
  }
  if (o.steps < 1)
    return core::InvalidArgument(fmt::format("steps: got {}, must be >= 1", o.steps));
  if (o.warmup_steps < 0) {
    return core::InvalidArgument(fmt::format("warmup_steps: got {}, must be >= 0", o.warmup_steps));
  }
  if (positions_needed > c.max_context) {
    return core::InvalidArgument(fmt::format(
        "context_tokens: got {}, plus {} decode positions the bench takes = {} exceeds the "
        "model's context of {} tokens ({})",
        o.context_tokens, positions_needed - o.context_tokens, positions_needed, c.max_context,
        c.name));
  }
  return Status::Ok();
}

// Fills every request of `sets` to `context` positions of the same random KV.
Status FillSets(const models::LlamaConfig& c, int64_t context, uint64_t seed,
                const std::vector<std::vector<std::unique_ptr<DisaggregatedAttention>>*>& sets,
                const PipelineBenchProgress& progress) {
  const int64_t row = c.num_kv_heads * c.head_dim;
  BenchRandom rng(seed);
  std::vector<float> k(kBenchFillChunk * row), v(kBenchFillChunk * row);
  const size_t batch = sets[0]->size();
  for (size_t r = 0; r < batch; ++r) {
    for (int64_t pos = 0; pos < context; pos += kBenchFillChunk) {
      const int64_t t = std::min(kBenchFillChunk, context - pos);
      rng.Fill(k);
      rng.Fill(v);
      for (auto* set : sets) {
        for (int64_t l = 0; l < c.num_layers; ++l) {
          RETURN_IF_ERROR((*set)[r]->AppendOnly(l, pos, t, k.data(), v.data()));
        }
      }
    }
    if (progress) progress("fill", static_cast<double>(r + 1) / static_cast<double>(batch));
  }
  return Status::Ok();
}

// The attention side of one step alone: every request's query round trip per layer.
Status AttentionOnlyStep(const models::LlamaConfig& c,
                         const std::vector<models::CoreAttention*>& attns,
                         const std::vector<int64_t>& positions, const std::vector<float>& q,
                         const std::vector<float>& kv, SendBatch* batch, std::vector<float>& o) {
  const int64_t qw = c.num_heads * c.head_dim, kvw = c.num_kv_heads * c.head_dim;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    for (size_t i = 0; i < attns.size(); ++i) {
      RETURN_IF_ERROR(attns[i]->BeginLayer(l, positions[i], 1, q.data() + i * qw));
    }
    if (batch) RETURN_IF_ERROR(batch->Flush());  // with the layer before's appends
    for (size_t i = 0; i < attns.size(); ++i) {
      RETURN_IF_ERROR(attns[i]->FinishLayer(
          l, kv.data() + i * kvw, kv.data() + (attns.size() + i) * kvw, o.data() + i * qw));
    }
  }
  return batch ? batch->Flush() : Status::Ok();
}

void GreedyRows(const std::vector<float>& logits, int64_t vocab, std::vector<int32_t>& tokens) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = models::Greedy(std::span(logits.data() + i * vocab, vocab));
  }
}

}  // namespace

core::StatusOr<PipelineBenchReport> RunPipelineBench(const models::LlamaModel& model,
                                                     const PipelineBenchOptions& o,
                                                     const PipelineBenchProgress& progress) {
  const models::LlamaConfig& c = model.config();
  const int64_t rounds = o.warmup_steps + o.steps;
  // Validation takes one position, each round three (one, two, attention-only).
  RETURN_IF_ERROR(CheckBenchOptions(c, o, o.context_tokens + 1 + 3 * rounds));
  const int64_t b = o.batch, vocab = c.vocab;
  PipelineBenchReport report;
  report.model = c.name;
  report.batch = b;
  report.context_tokens = o.context_tokens;
  report.steps = o.steps;

  AttentionClusterOptions co;
  co.num_nodes = 1;
  co.transport = o.transport;
  co.processes = o.processes;
  co.node_command = o.node_command;
  // Both sets, their decode positions, and a page of slack per request and set.
  co.capacity_tokens = b * (2 * o.context_tokens + 2 + 3 * rounds) + 4 * b * co.page_tokens;
  const bool pin = o.pin_cpus && o.processes && sysconf(_SC_NPROCESSORS_ONLN) >= 2;
  // The node process inherits the spawning thread's CPU set (CPU 1); this process then moves
  // every one of its threads to CPU 0.
  if (pin) PinBenchThread(0, 1);
  auto cluster = AttentionCluster::Start(AttentionShapeOf(c), model.Fingerprint(), co);
  if (!cluster.ok()) return cluster.status();
  const bool proxy = o.transport_threads_on_node_cpu;
  const bool pinned = pin && PinBenchProcess(proxy ? 1 : 0);
  report.placement =
      o.processes
          ? (pinned ? (proxy ? "1 weight process (compute thread on CPU 0, its transport threads "
                               "on CPU 1) + 1 attention-node process (CPU 1), "
                             : "1 weight process (all threads on CPU 0) + 1 attention-node "
                               "process (CPU 1), ") +
                          o.transport
                    : "1 weight process + 1 attention-node process, unpinned, " + o.transport)
          : "weight node and attention node in one process, " + o.transport;
  WeightNode& wn = (*cluster)->weight_node();

  std::vector<std::unique_ptr<DisaggregatedAttention>> bench_set, mirror_set;
  for (int64_t i = 0; i < b; ++i) {
    ASSIGN_OR_RETURN(auto x, wn.OpenRequest(1 + i));
    ASSIGN_OR_RETURN(auto y, wn.OpenRequest(1 + b + i));
    bench_set.push_back(std::move(x));
    mirror_set.push_back(std::move(y));
  }
  const auto fill0 = BenchClock::now();
  RETURN_IF_ERROR(FillSets(c, o.context_tokens, o.seed, {&bench_set, &mirror_set}, progress)
                      .WithPrefix("filling the KV"));
  report.fill_s = MsSince(fill0) / 1e3;

  std::vector<models::CoreAttention*> attns, mirror;
  SendBatch send_batch(wn);
  SendBatch* batch = o.batch_messages ? &send_batch : nullptr;
  report.batch_messages = o.batch_messages;
  for (int64_t i = 0; i < b; ++i) {
    bench_set[i]->set_send_batch(batch);
    attns.push_back(bench_set[i].get());
    mirror.push_back(mirror_set[i].get());
  }
  std::vector<int64_t> positions(b, o.context_tokens);
  ASSIGN_OR_RETURN(MicroBatchSplit split, SplitByAttentionTokens(positions));
  report.micro_batch_a = static_cast<int64_t>(split.a.size());
  report.micro_batch_b = static_cast<int64_t>(split.b.size());
  report.tokens_a = split.tokens_a;
  report.tokens_b = split.tokens_b;

  // Validation: two micro-batches on the bench set, one on the mirror.
  BenchRandom rng(o.seed ^ 0x5eedull);
  std::vector<int32_t> tokens(b);
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng.Bits() % static_cast<uint64_t>(vocab));
  PipelinedDecode decode(model, batch), unbatched(model);
  std::vector<float> logits(b * vocab), check(b * vocab);
  RETURN_IF_ERROR(decode.StepTwo(tokens, positions, attns, split, logits.data())
                      .WithPrefix("validation, two micro-batches"));
  RETURN_IF_ERROR(unbatched.StepOne(tokens, positions, mirror, check.data())
                      .WithPrefix("validation, one micro-batch"));
  for (int64_t i = 0; i < b; ++i) {
    const double err = core::CompareTensors(std::span(logits.data() + i * vocab, vocab),
                                            std::span(check.data() + i * vocab, vocab))
                           .max_rel;
    report.validation_max_rel_err = std::max(report.validation_max_rel_err, err);
  }
  if (!(report.validation_max_rel_err <= kCheckRelErrBar)) {
    return core::Internal(
        fmt::format("validation: two micro-batches' logits differ from one micro-batch's by {:.2e} "
                    "(relative), over the {:.0e} bar",
                    report.validation_max_rel_err, kCheckRelErrBar));
  }
  mirror.clear();
  mirror_set.clear();  // frees the mirror's ranges
  if (progress) progress("validate", 1.0);
  GreedyRows(logits, vocab, tokens);
  for (int64_t& p : positions) ++p;

  // The weight side alone: instantaneous attention, the whole batch and the two halves.
  std::vector<InstantAttention> instant(b,
                                        InstantAttention(c.num_heads, c.num_kv_heads, c.head_dim));
  std::vector<models::CoreAttention*> instant_all, instant_a, instant_b;
  for (int64_t i = 0; i < b; ++i) instant_all.push_back(&instant[i]);
  std::vector<int32_t> tok_a, tok_b;
  std::vector<int64_t> pos_a, pos_b;
  for (int64_t i : split.a) instant_a.push_back(&instant[i]), tok_a.push_back(0);
  for (int64_t i : split.b) instant_b.push_back(&instant[i]), tok_b.push_back(0);
  models::LlamaBatchDecode weight_only(model);
  std::vector<float> scratch_logits(b * vocab);
  // The attention side alone: fixed random q, k, v.
  const int64_t qw = c.num_heads * c.head_dim, kvw = c.num_kv_heads * c.head_dim;
  std::vector<float> q(b * qw), kv(2 * b * kvw), attn_o(b * qw);
  rng.Fill(q);
  rng.Fill(kv);

  for (int64_t round = 0; round < rounds; ++round) {
    const bool keep = round >= o.warmup_steps;
    const std::string where = fmt::format("step round {}", round);
    auto t0 = BenchClock::now();
    RETURN_IF_ERROR(decode.StepOne(tokens, positions, attns, logits.data())
                        .WithPrefix(where + ", one micro-batch"));
    if (keep) report.one_mb_samples.push_back(MsSince(t0));
    GreedyRows(logits, vocab, tokens);
    for (int64_t& p : positions) ++p;

    t0 = BenchClock::now();
    RETURN_IF_ERROR(decode.StepTwo(tokens, positions, attns, split, logits.data())
                        .WithPrefix(where + ", two micro-batches"));
    if (keep) report.two_mb_samples.push_back(MsSince(t0));
    GreedyRows(logits, vocab, tokens);
    for (int64_t& p : positions) ++p;

    t0 = BenchClock::now();
    RETURN_IF_ERROR(weight_only.Step(tokens, positions, instant_all, scratch_logits.data()));
    if (keep) report.t_w_samples.push_back(MsSince(t0));

    pos_a.clear(), pos_b.clear();
    for (size_t j = 0; j < split.a.size(); ++j) {
      tok_a[j] = tokens[split.a[j]];
      pos_a.push_back(positions[split.a[j]]);
    }
    for (size_t j = 0; j < split.b.size(); ++j) {
      tok_b[j] = tokens[split.b[j]];
      pos_b.push_back(positions[split.b[j]]);
    }
    t0 = BenchClock::now();
    RETURN_IF_ERROR(weight_only.Step(tok_a, pos_a, instant_a, scratch_logits.data()));
    RETURN_IF_ERROR(weight_only.Step(tok_b, pos_b, instant_b, scratch_logits.data()));
    if (keep) report.t_w_split_samples.push_back(MsSince(t0));

    t0 = BenchClock::now();
    const double cpu0 = ProcessCpuMs();
    RETURN_IF_ERROR(AttentionOnlyStep(c, attns, positions, q, kv, batch, attn_o)
                        .WithPrefix(where + ", attention only"));
    if (keep) {
      report.t_a_samples.push_back(MsSince(t0));
      report.t_a_weight_cpu_samples.push_back(ProcessCpuMs() - cpu0);
    }
    for (int64_t& p : positions) ++p;
    if (progress) progress("steps", static_cast<double>(round + 1) / static_cast<double>(rounds));
  }
  report.t_w_ms = core::Median(report.t_w_samples);
  report.t_w_split_ms = core::Median(report.t_w_split_samples);
  report.t_a_ms = core::Median(report.t_a_samples);
  report.t_a_weight_cpu_ms = core::Median(report.t_a_weight_cpu_samples);
  report.one_mb_ms = core::Median(report.one_mb_samples);
  report.two_mb_ms = core::Median(report.two_mb_samples);
  report.bound = PipelineBound(report.t_w_ms, report.t_a_ms);
  const double split_max = std::max(report.t_w_split_ms, report.t_a_ms);
  report.split_bound = split_max > 0 ? (report.t_w_ms + report.t_a_ms) / split_max : 1.0;
  report.speedup = report.two_mb_ms > 0 ? report.one_mb_ms / report.two_mb_ms : 0;
  return report;
}

}  // namespace tessera::kernelflume
