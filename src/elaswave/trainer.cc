#include "elaswave/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "elaswave/fixed_point_grad.h"
#include "elaswave/microbatch_counts.h"

namespace tessera::elaswave {
namespace {

constexpr int kMaxAttempts = 4;
constexpr int kWidenBits = 16;
constexpr int kTransferTagBase = 16384;

int ActTag(int64_t gid) { return static_cast<int>((2 * gid) % kTransferTagBase); }
int GradTag(int64_t gid) { return static_cast<int>((2 * gid + 1) % kTransferTagBase); }
int TransferTag(size_t index) { return kTransferTagBase + static_cast<int>(index % 8192); }

core::Status WaitAll(std::vector<comm::Request>& requests) {
  core::Status first;
  for (comm::Request& r : requests) {
    const core::Status st = r.Wait();
    if (!st.ok() && first.ok()) first = st;
  }
  requests.clear();
  return first;
}

}  // namespace

GptDims DimsOf(const models::SmallGptConfig& model, int64_t seq) {
  return {model.vocab, model.hidden, model.ffn_hidden, model.num_layers, seq};
}

core::StatusOr<std::unique_ptr<ElasticTrainer>> ElasticTrainer::Create(
    const TrainerOptions& options, int world_id) {
  RETURN_IF_ERROR(ValidateJobShape(options.shape));
  RETURN_IF_ERROR(models::ValidateSmallGptConfig(options.model, options.shape.tp));
  if (options.model.num_layers != options.shape.num_blocks) {
    return core::InvalidArgument(fmt::format("trainer: the job has {} layers, the model {}",
                                             options.shape.num_blocks, options.model.num_layers));
  }
  if (options.seq < 1 || options.seq > options.model.max_seq) {
    return core::InvalidArgument(
        fmt::format("seq: got {}, must be in [1, {}] (the model's positions)", options.seq,
                    options.model.max_seq));
  }
  if (world_id < 0 || world_id >= options.shape.processes()) {
    return core::InvalidArgument(
        fmt::format("world id {} outside [0, {})", world_id, options.shape.processes()));
  }
  std::unique_ptr<ElasticTrainer> t(new ElasticTrainer(options, world_id));
  ASSIGN_OR_RETURN(auto full,
                   models::SmallGptStage::Create(options.model, options.shape.tp, t->tp_rank(), 0,
                                                 options.shape.num_slots()));
  for (int s = 0; s < options.shape.num_slots(); ++s) {
    ASSIGN_OR_RETURN(const auto params, full.SlotParameters(s));
    t->slot_size_[s] = static_cast<int64_t>(params.size());
  }
  return t;
}

core::Status ElasticTrainer::InitFresh(const ElasticPlan& plan) {
  const auto [p, j] = plan.Position(world_);
  if (p < 0) return core::Status::Ok();
  const PlanStage& st = plan.pipelines[p].stages[j];
  ASSIGN_OR_RETURN(auto init, models::SmallGptStage::Create(options_.model, options_.shape.tp,
                                                            tp_rank(), st.slot_begin, st.slot_end));
  for (int s = st.slot_begin; s < st.slot_end; ++s) {
    ASSIGN_OR_RETURN(const auto params, init.SlotParameters(s));
    RETURN_IF_ERROR(store_.Add(s, params));
  }
  return core::Status::Ok();
}

core::StatusOr<int> ElasticTrainer::RankOf(int world) const {
  const auto& w = comm_->world_ranks();
  const auto it = std::find(w.begin(), w.end(), world);
  if (it == w.end()) {
    return core::Internal(fmt::format("world id {} is not in the communicator", world));
  }
  return static_cast<int>(it - w.begin());
}

core::Status ElasticTrainer::Install(const ElasticPlan& plan, comm::Communicator& comm) {
  plan_ = plan;
  comm_ = &comm;
  stage_.reset();
  tp_ops_.reset();
  computing_comm_ = nullptr;
  groups_.clear();
  // 1. State transfers: receives first, then sends, then wait.
  std::vector<comm::Request> requests;
  std::vector<std::pair<int, std::vector<float>>> incoming;
  incoming.reserve(plan.transfers.size());
  for (size_t i = 0; i < plan.transfers.size(); ++i) {
    const StateTransfer& t = plan.transfers[i];
    if (t.dst != world_) continue;
    incoming.emplace_back(
        t.slot,
        std::vector<float>(static_cast<size_t>(SlotStore::PackedSize(slot_size_.at(t.slot)))));
    ASSIGN_OR_RETURN(const int src, RankOf(t.src));
    ASSIGN_OR_RETURN(comm::Request r,
                     comm.IRecv(std::span<float>(incoming.back().second), src, TransferTag(i)));
    requests.push_back(std::move(r));
  }
  std::vector<std::vector<float>> outgoing;
  outgoing.reserve(plan.transfers.size());
  for (size_t i = 0; i < plan.transfers.size(); ++i) {
    const StateTransfer& t = plan.transfers[i];
    if (t.src != world_) continue;
    ASSIGN_OR_RETURN(std::vector<float> packed, store_.Pack(t.slot));
    outgoing.push_back(std::move(packed));
    ASSIGN_OR_RETURN(const int dst, RankOf(t.dst));
    ASSIGN_OR_RETURN(comm::Request r,
                     comm.ISend(std::span<const float>(outgoing.back()), dst, TransferTag(i)));
    requests.push_back(std::move(r));
  }
  RETURN_IF_ERROR(WaitAll(requests));
  for (const auto& [slot, packed] : incoming) RETURN_IF_ERROR(store_.Unpack(slot, packed));
  // 2. Keep only the slots this worker runs.
  const auto [p, j] = plan.Position(world_);
  pipeline_ = p;
  stage_index_ = j;
  std::set<int> run;
  if (p >= 0) {
    const PlanStage& st = plan.pipelines[p].stages[j];
    for (int s = st.slot_begin; s < st.slot_end; ++s) run.insert(s);
  }
  for (int s : store_.Slots()) {
    if (!run.count(s)) store_.Drop(s);
  }
  for (int s : run) {
    if (!store_.Holds(s)) {
      return core::Internal(fmt::format("rank {} runs {} but received no state for it", world_,
                                        SlotName(s, options_.shape.num_blocks)));
    }
  }
  // 3. Groups, created in one global order (sorted vectors of world ids).
  const int L = options_.shape.num_slots();
  std::map<int, std::vector<int>> holder_set;  // my slots -> their holders
  std::set<std::vector<int>> all;
  std::vector<int> computing;
  for (const PlanPipeline& pipe : plan.pipelines) {
    for (const PlanStage& st : pipe.stages) {
      all.insert(st.ranks);
      computing.insert(computing.end(), st.ranks.begin(), st.ranks.end());
    }
  }
  std::sort(computing.begin(), computing.end());
  if (!computing.empty()) all.insert(computing);
  for (int s = 0; s < L; ++s) {
    const bool replicated = s == 0 || s == L - 1;
    std::vector<int> merged;
    for (int r = 0; r < options_.shape.tp; ++r) {
      std::vector<int> h = plan.Holders(s, r);
      if (replicated) {
        merged.insert(merged.end(), h.begin(), h.end());
        continue;
      }
      std::sort(h.begin(), h.end());
      all.insert(h);
      if (run.count(s) && r == tp_rank()) holder_set[s] = h;
    }
    if (replicated) {
      std::sort(merged.begin(), merged.end());
      all.insert(merged);
      if (run.count(s)) holder_set[s] = merged;
    }
  }
  std::map<std::vector<int>, comm::Communicator*> made;
  for (const std::vector<int>& g : all) {
    if (std::find(g.begin(), g.end(), world_) == g.end()) continue;
    std::vector<int> ranks;
    for (int w : g) {
      ASSIGN_OR_RETURN(const int r, RankOf(w));
      ranks.push_back(r);
    }
    ASSIGN_OR_RETURN(made[g], comm.Sub(ranks));
  }
  if (p < 0) return core::Status::Ok();
  computing_comm_ = made.at(computing);
  const PlanStage& st = plan.pipelines[p].stages[j];
  tp_ops_ = std::make_unique<models::CommTpOps>(*made.at(st.ranks));
  for (const auto& [g, c] : made) {
    Group group{g, c, {}};
    for (const auto& [s, h] : holder_set) {
      if (h == g) group.slots.push_back(s);
    }
    if (!group.slots.empty()) groups_.push_back(group);
  }
  ASSIGN_OR_RETURN(auto stage,
                   models::SmallGptStage::Create(options_.model, options_.shape.tp, tp_rank(),
                                                 st.slot_begin, st.slot_end));
  stage_ = std::make_unique<models::SmallGptStage>(std::move(stage));
  return core::Status::Ok();
}

core::Status ElasticTrainer::LoadStageFromStore() {
  for (int64_t s = stage_->slot_begin(); s < stage_->slot_end(); ++s) {
    ASSIGN_OR_RETURN(SlotState * state, store_.Get(static_cast<int>(s)));
    ASSIGN_OR_RETURN(std::span<float> dst, stage_->SlotParameters(s));
    if (dst.size() != state->params.size()) {
      return core::Internal(fmt::format("slot {}: {} parameters held, the stage has {}", s,
                                        state->params.size(), dst.size()));
    }
    std::copy(state->params.begin(), state->params.end(), dst.begin());
  }
  return core::Status::Ok();
}

core::StatusOr<models::GptBatch> ElasticTrainer::MicroBatch(int64_t k) const {
  const int64_t b = options_.shape.micro_batch, seq = options_.seq;
  models::GptBatch mb;
  mb.batch = b;
  mb.seq = seq;
  mb.tokens.resize(static_cast<size_t>(b * seq));
  mb.targets.resize(static_cast<size_t>(b * seq));
  for (int64_t i = 0; i < b; ++i) {
    const int64_t row = permutation_.at(static_cast<size_t>(k * b + i));
    std::copy_n(global_batch_.tokens.begin() + row * seq, seq, mb.tokens.begin() + i * seq);
    std::copy_n(global_batch_.targets.begin() + row * seq, seq, mb.targets.begin() + i * seq);
  }
  return mb;
}

core::StatusOr<StepReport> ElasticTrainer::Compute(int64_t step) {
  if (!computing()) {
    return core::FailedPrecondition(fmt::format("rank {} computes nothing in this plan", world_));
  }
  widen_bits_.clear();
  for (int attempt = 1; attempt <= kMaxAttempts; ++attempt) {
    bool overflow = false;
    ASSIGN_OR_RETURN(StepReport report, ComputeOnce(step, overflow));
    if (!overflow) {
      report.attempts = attempt;
      return report;
    }
  }
  return core::Internal(fmt::format(
      "step {}: fixed-point gradients overflowed {} times (a gradient grew by more than 2^{})",
      step, kMaxAttempts, kMaxAttempts * kWidenBits));
}

core::StatusOr<StepReport> ElasticTrainer::ComputeOnce(int64_t step, bool& overflow) {
  RETURN_IF_ERROR(LoadStageFromStore());
  const JobShape& shape = options_.shape;
  ASSIGN_OR_RETURN(global_batch_,
                   models::MakeSyntheticGptBatch(options_.model.vocab, shape.global_batch,
                                                 options_.seq, options_.data_seed, step));
  permutation_ = SamplePermutation(shape.global_batch, options_.data_seed, step);
  const PlanPipeline& pipe = plan_.pipelines[pipeline_];
  const int S = static_cast<int>(pipe.stages.size());
  const int j = stage_index_;
  const int64_t m = pipe.micro_batches, first = pipe.first_micro_batch;
  const int64_t M = shape.num_micro_batches();
  // The target tokens of the micro-batches this step runs: the global batch's under elaswave
  // (every micro-batch runs), the participants' share under torchft.
  const double n_tok =
      static_cast<double>(plan_.total_micro_batches() * shape.micro_batch * options_.seq);
  const int r = tp_rank();
  int prev = -1, next = -1;
  if (j > 0) {
    ASSIGN_OR_RETURN(prev, RankOf(pipe.stages[j - 1].ranks[r]));
  }
  if (j + 1 < S) {
    ASSIGN_OR_RETURN(next, RankOf(pipe.stages[j + 1].ranks[r]));
  }
  // Fixed-point exponents and accumulators.
  const int64_t limit = FixedPointLimit(M);
  std::map<int, int64_t> overflowed;
  grad_sum_.clear();
  exponent_.clear();
  for (int s : store_.Slots()) {
    ASSIGN_OR_RETURN(SlotState * state, store_.Get(s));
    const double bound =
        std::ldexp(state->grad_bound > 0 ? state->grad_bound : 1.0, widen_bits_[s]);
    exponent_[s] = FixedPointExponent(bound, M);
    grad_sum_[s].assign(static_cast<size_t>(slot_size_.at(s)), 0);
    overflowed[s] = 0;
  }
  std::vector<double> losses(static_cast<size_t>(M) + 1, 0.0);
  const int64_t act = stage_->ActivationSize(shape.micro_batch * options_.seq);
  std::vector<float> in_act(static_cast<size_t>(act)), grad_out(static_cast<size_t>(act));
  std::map<int64_t, std::vector<float>> sent;  // buffers of sends in flight
  std::vector<comm::Request> sends;
  std::map<int64_t, models::GptBatch> batches;

  const auto forward = [&](int64_t k) -> core::Status {
    const int64_t gid = first + k;
    if (hook_) hook_(StepPhase::kForward, step, gid);
    ASSIGN_OR_RETURN(batches[k], MicroBatch(gid));
    if (prev >= 0) RETURN_IF_ERROR(comm_->Recv(std::span<float>(in_act), prev, ActTag(gid)));
    std::span<float> out;
    if (next >= 0) {
      sent[2 * k].assign(static_cast<size_t>(act), 0.f);
      out = sent[2 * k];
    }
    ASSIGN_OR_RETURN(const double loss, stage_->Forward({step, gid}, batches[k],
                                                        prev >= 0 ? std::span<const float>(in_act)
                                                                  : std::span<const float>(),
                                                        out, *tp_ops_));
    if (next < 0 && r == 0) losses[static_cast<size_t>(gid)] = loss;
    if (next >= 0) {
      ASSIGN_OR_RETURN(comm::Request req, comm_->ISend(out, next, ActTag(gid)));
      sends.push_back(std::move(req));
    }
    return core::Status::Ok();
  };
  const auto backward = [&](int64_t k) -> core::Status {
    const int64_t gid = first + k;
    if (hook_) hook_(StepPhase::kBackward, step, gid);
    if (next >= 0) RETURN_IF_ERROR(comm_->Recv(std::span<float>(grad_out), next, GradTag(gid)));
    std::span<float> grad_in;
    if (prev >= 0) {
      sent[2 * k + 1].assign(static_cast<size_t>(act), 0.f);
      grad_in = sent[2 * k + 1];
    }
    stage_->ZeroGradients();
    RETURN_IF_ERROR(stage_->Backward(
        {step, gid}, next >= 0 ? std::span<const float>(grad_out) : std::span<const float>(),
        grad_in, static_cast<float>(1.0 / n_tok), *tp_ops_));
    if (prev >= 0) {
      ASSIGN_OR_RETURN(comm::Request req, comm_->ISend(grad_in, prev, GradTag(gid)));
      sends.push_back(std::move(req));
    }
    for (auto& [s, sum] : grad_sum_) {
      ASSIGN_OR_RETURN(const auto g, stage_->SlotGradients(s));
      if (overflowed[s] > 0) continue;  // the step is redone anyway
      if (AccumulateFixedPoint(g, exponent_[s], limit, sum).overflow) overflowed[s] = 1;
    }
    batches.erase(k);
    return core::Status::Ok();
  };
  // 1F1B.
  const int64_t warmup = std::min<int64_t>(S - j - 1, m);
  core::Status st;
  for (int64_t k = 0; k < warmup && st.ok(); ++k) st = forward(k);
  for (int64_t i = 0; i < m - warmup && st.ok(); ++i) {
    st = forward(warmup + i);
    if (st.ok()) st = backward(i);
  }
  for (int64_t k = m - warmup; k < m && st.ok(); ++k) st = backward(k);
  const core::Status waited = WaitAll(sends);
  if (!st.ok()) {
    stage_->DiscardInFlight();
    return st;
  }
  RETURN_IF_ERROR(waited);
  // Holders sum their slots' accumulators (plus one overflow count per slot).
  if (hook_) hook_(StepPhase::kReduce, step, -1);
  for (const Group& g : groups_) {
    std::vector<int64_t> buf;
    for (int s : g.slots) buf.insert(buf.end(), grad_sum_[s].begin(), grad_sum_[s].end());
    for (int s : g.slots) buf.push_back(overflowed[s]);
    RETURN_IF_ERROR(g.comm->AllReduceSum(std::span<int64_t>(buf)));
    size_t at = 0;
    for (int s : g.slots) {
      std::copy_n(buf.begin() + static_cast<int64_t>(at), grad_sum_[s].size(),
                  grad_sum_[s].begin());
      at += grad_sum_[s].size();
    }
    for (int s : g.slots) overflowed[s] = buf[at++];
  }
  for (const auto& [s, count] : overflowed) {
    if (count > 0) {
      widen_bits_[s] += kWidenBits;
      losses.back() = 1;
    }
  }
  RETURN_IF_ERROR(computing_comm_->AllReduceSum(std::span<double>(losses)));
  overflow = losses.back() > 0;
  StepReport report;
  report.step = step;
  double total = 0;
  for (int64_t k = 0; k < M; ++k) total += losses[static_cast<size_t>(k)];
  report.loss = total / n_tok;
  return report;
}

core::Status ElasticTrainer::Apply() {
  for (auto& [s, sum] : grad_sum_) {
    ASSIGN_OR_RETURN(SlotState * state, store_.Get(s));
    std::vector<float> g(sum.size());
    DequantizeFixedPoint(sum, exponent_[s], g);
    RETURN_IF_ERROR(state->opt.Step(state->params, g));
    state->grad_bound = MaxAbsFixedPoint(sum, exponent_[s]);
  }
  grad_sum_.clear();
  return core::Status::Ok();
}

std::vector<SlotDigest> ElasticTrainer::Digests() const {
  std::vector<SlotDigest> out;
  for (int s : store_.Slots()) out.push_back({s, tp_rank(), store_.Digest(s)});
  return out;
}

}  // namespace tessera::elaswave
