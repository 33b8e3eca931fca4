#include "kernelflume/completion_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/rng.h"
#include "core/stats.h"
#include "kernelflume/disaggregated_attention.h"
#include "models/generate.h"
#include "models/llama_batch_decode.h"
#include "models/sampler.h"

namespace tessera::kernelflume {

using core::Status;
using Clock = std::chrono::steady_clock;

std::optional<CompletionStream::Event> CompletionStream::Next(double timeout_s) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                    [&] { return !events_.empty(); })) {
    return std::nullopt;
  }
  Event e = std::move(events_.front());
  events_.pop_front();
  return e;
}

void CompletionStream::Push(Event e) {
  {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(e));
  }
  cv_.notify_all();
}

struct CompletionEngine::Running {
  std::shared_ptr<CompletionStream> stream;
  CompletionParams params;
  std::unique_ptr<DisaggregatedAttention> attn;
  std::vector<int32_t> tokens;  // prompt + generated
  std::vector<float> logits;
  core::Rng rng{0};
  int64_t generated = 0;
  int64_t prefilled = 0;  // prompt tokens through the model so far
  Clock::time_point last_token;
  bool done = false;
};

CompletionEngine::CompletionEngine(const models::LlamaModel& model, AttentionCluster& cluster,
                                   EngineOptions options)
    : model_(model), cluster_(cluster), options_(options) {
  thread_ = std::thread([this] { Run(); });
}

CompletionEngine::~CompletionEngine() { Stop(); }

void CompletionEngine::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int64_t CompletionEngine::FreeTokens() const {
  int64_t capacity = 0;
  for (const WeightNode::NodeLoad& n : cluster_.weight_node().PoolLoad()) {
    capacity += n.capacity_tokens;
  }
  return capacity - reserved_tokens_;
}

int64_t CompletionEngine::ReservedTokens(const CompletionParams& p) const {
  const AttentionClusterOptions& o = cluster_.options();
  return ReserveTokens(static_cast<int64_t>(p.prompt.size()) + p.max_tokens, o.page_tokens,
                       ReserveRangeTokens(o.weight_node.router));
}

int64_t ReserveRangeTokens(const RouterOptions& router) {
  return router.reroute_every > 0 ? std::min(router.reroute_every, router.range_tokens_max)
                                  : router.range_tokens_max;
}

int64_t ReserveTokens(int64_t need, int64_t page_tokens, int64_t range_tokens) {
  return need + ((need + range_tokens - 1) / range_tokens + 1) * page_tokens;
}

core::StatusOr<std::shared_ptr<CompletionStream>> CompletionEngine::Submit(CompletionParams p) {
  const models::LlamaConfig& c = model_.config();
  if (p.prompt.empty()) return core::InvalidArgument("prompt: empty (give at least one token)");
  for (size_t i = 0; i < p.prompt.size(); ++i) {
    if (p.prompt[i] < 0 || p.prompt[i] >= c.vocab) {
      return core::InvalidArgument(
          fmt::format("prompt: token {} at position {} is outside the vocabulary [0, {})",
                      p.prompt[i], i, c.vocab));
    }
  }
  if (p.max_tokens < 1) {
    return core::InvalidArgument(fmt::format("max_tokens: got {}, must be >= 1", p.max_tokens));
  }
  const int64_t need = static_cast<int64_t>(p.prompt.size()) + p.max_tokens;
  if (need > c.max_context) {
    return core::InvalidArgument(fmt::format(
        "prompt: {} tokens + max_tokens {} = {} exceed the model's context of {} tokens",
        p.prompt.size(), p.max_tokens, need, c.max_context));
  }
  if (!(p.temperature >= 0) || !std::isfinite(p.temperature)) {
    return core::InvalidArgument(
        fmt::format("temperature: got {}, must be a number >= 0", p.temperature));
  }
  const std::vector<WeightNode::NodeLoad> pool = cluster_.weight_node().PoolLoad();
  if (pool.empty()) {
    return core::Unavailable("no active attention node (every node is lost or retired)");
  }
  int64_t most_per_node = 0;
  for (const WeightNode::NodeLoad& n : pool) {
    most_per_node = std::max(most_per_node, n.capacity_tokens);
  }
  std::lock_guard lock(mu_);
  if (stop_) return core::Unavailable("the server is stopping");
  const int64_t reserve = ReservedTokens(p);
  if (reserve > most_per_node * options_.max_nodes) {
    return core::Infeasible(fmt::format(
        "KV capacity: the request needs {} tokens ({} with its pages' slack); the pool holds at "
        "most {} at its maximum of {} attention nodes",
        need, reserve, most_per_node * options_.max_nodes, options_.max_nodes));
  }
  if (static_cast<int>(queue_.size()) >= options_.max_queued) {
    return core::Infeasible(fmt::format("queue full: {} requests wait (max_queued {})",
                                        queue_.size(), options_.max_queued));
  }
  auto stream = std::make_shared<CompletionStream>(next_id_++);
  queued_tokens_ += reserve;
  queue_.emplace_back(stream, std::move(p));
  cv_.notify_all();
  return stream;
}

int64_t CompletionEngine::DemandTokens() const {
  std::lock_guard lock(mu_);
  return reserved_tokens_ + queued_tokens_;
}

EngineMetrics CompletionEngine::Metrics() const {
  EngineMetrics m;
  {
    std::lock_guard lock(mu_);
    m.tpot_ms_p50 = core::Percentile(tpot_ms_, 50);
    m.tpot_ms_p99 = core::Percentile(tpot_ms_, 99);
    m.queued = static_cast<int64_t>(queue_.size());
    m.active = active_;
    m.completed = completed_;
    m.cancelled = cancelled_;
    m.failed = failed_;
    m.tokens = tokens_;
  }
  WeightNode& wn = cluster_.weight_node();
  m.routing_version = wn.routes()->version();
  int64_t live = 0, capacity = 0;
  for (const WeightNode::NodeLoad& n : wn.PoolLoad()) {
    live += n.live_tokens;
    capacity += n.capacity_tokens;
    ++m.nodes;
  }
  m.kv_use = capacity > 0 ? static_cast<double>(live) / static_cast<double>(capacity) : 0;
  return m;
}

void CompletionEngine::Finish(Running& r, CompletionStream::Event e) {
  r.done = true;
  r.attn.reset();  // frees the request's ranges on every node
  std::lock_guard lock(mu_);
  reserved_tokens_ -= ReservedTokens(r.params);
  if (e.kind == CompletionStream::Event::Kind::kError) {
    ++failed_;
  } else if (r.stream->cancelled()) {
    ++cancelled_;
  } else {
    ++completed_;
  }
  e.iteration = iteration_;
  r.stream->Push(std::move(e));
}

namespace {

int32_t SampleToken(const std::vector<float>& logits, double temperature, core::Rng& rng) {
  return temperature > 0 ? models::SampleTemperature(logits, temperature, rng)
                         : models::Greedy(logits);
}

}  // namespace

void CompletionEngine::Admit() {
  while (static_cast<int>(running_.size()) < options_.max_active) {
    std::unique_ptr<Running> r;
    {
      std::lock_guard lock(mu_);
      if (queue_.empty()) return;
      const int64_t need = ReservedTokens(queue_.front().second);
      if (need > FreeTokens()) return;  // waits for running requests to end (or a new node)
      r = std::make_unique<Running>();
      r->stream = std::move(queue_.front().first);
      r->params = std::move(queue_.front().second);
      queue_.pop_front();
      r->stream->admitted_iteration_ = iteration_;
      queued_tokens_ -= need;
      reserved_tokens_ += need;
    }
    if (r->stream->cancelled()) {
      Finish(*r, {CompletionStream::Event::Kind::kDone, 0, "cancelled", Status::Ok()});
      continue;
    }
    r->tokens = r->params.prompt;
    r->logits.resize(model_.config().vocab);
    r->rng = core::Rng(r->params.seed);
    auto attn = cluster_.weight_node().OpenRequest(r->stream->id());
    if (!attn.ok()) {
      Finish(*r, {CompletionStream::Event::Kind::kError, 0, "", attn.status()});
      continue;
    }
    r->attn = std::move(*attn);
    running_.push_back(std::move(r));
  }
}

void CompletionEngine::PrefillSome() {
  int64_t budget = std::max<int64_t>(1, options_.prefill_tokens_per_step);
  for (auto& r : running_) {
    const int64_t n = static_cast<int64_t>(r->params.prompt.size());
    if (r->done || r->prefilled >= n) continue;
    if (r->stream->cancelled()) {
      Finish(*r, {CompletionStream::Event::Kind::kDone, 0, "cancelled", Status::Ok()});
      continue;
    }
    while (budget > 0 && r->prefilled < n) {
      const int64_t len = std::min({models::kPrefillChunkTokens, n - r->prefilled, budget});
      Status st = ForwardWithRecovery(model_, *r->attn, r->tokens, r->prefilled, len,
                                      r->logits.data(), true);
      if (!st.ok()) {
        Finish(*r, {CompletionStream::Event::Kind::kError, 0, "", st});
        break;
      }
      current_.prefill_tokens += len;
      current_.prefill_pairs +=
          static_cast<double>(len) * (static_cast<double>(r->prefilled) + (len + 1) / 2.0);
      r->prefilled += len;
      budget -= len;
    }
    if (r->prefilled >= n) r->last_token = Clock::now();
    if (budget <= 0) break;
  }
  std::erase_if(running_, [](const std::unique_ptr<Running>& r) { return r->done; });
}

namespace {
bool Prefilled(const auto& r) {
  return r->prefilled >= static_cast<int64_t>(r->params.prompt.size());
}
}  // namespace

void CompletionEngine::DecodeStep() {
  const int32_t eos = static_cast<int32_t>(model_.config().eos_id);
  // Sample each decoding request's next token from its last logits and send it.
  for (auto& r : running_) {
    if (r->stream->cancelled()) {
      Finish(*r, {CompletionStream::Event::Kind::kDone, 0, "cancelled", Status::Ok()});
      continue;
    }
    if (!Prefilled(r)) continue;
    const int32_t tok = SampleToken(r->logits, r->params.temperature, r->rng);
    const Clock::time_point now = Clock::now();
    {
      std::lock_guard lock(mu_);
      ++tokens_;
      if (r->generated > 0) {
        const double ms = std::chrono::duration<double, std::milli>(now - r->last_token).count();
        if (tpot_ms_.size() < 4096) {
          tpot_ms_.push_back(ms);
        } else {
          tpot_ms_[tpot_next_++ % 4096] = ms;
        }
      }
    }
    r->last_token = now;
    ++r->generated;
    r->stream->Push({CompletionStream::Event::Kind::kToken, tok, "", Status::Ok(), iteration_});
    r->tokens.push_back(tok);
    if (r->params.stop_at_eos && tok == eos) {
      Finish(*r, {CompletionStream::Event::Kind::kDone, 0, "stop", Status::Ok()});
    } else if (r->generated >= r->params.max_tokens) {
      Finish(*r, {CompletionStream::Event::Kind::kDone, 0, "length", Status::Ok()});
    }
  }
  std::erase_if(running_, [](const std::unique_ptr<Running>& r) { return r->done; });
  {
    std::lock_guard lock(mu_);
    active_ = static_cast<int64_t>(running_.size());
  }
  // One batched forward of every decoding request's newest token; on a lost node, each of them
  // recovers (re-prefills what it lost, or only forgets the failed step) and the step retries.
  // (A request still prefilling recovers in its own next chunk.)
  models::LlamaBatchDecode batch(model_);
  for (int attempt = 0;; ++attempt) {
    std::vector<Running*> dec;
    for (auto& r : running_) {
      if (Prefilled(r)) dec.push_back(r.get());
    }
    if (dec.empty()) return;
    std::vector<int32_t> toks;
    std::vector<int64_t> pos;
    std::vector<models::CoreAttention*> attns;
    for (Running* r : dec) {
      toks.push_back(r->tokens.back());
      pos.push_back(static_cast<int64_t>(r->tokens.size()) - 1);
      attns.push_back(r->attn.get());
    }
    std::vector<float> logits(dec.size() * model_.config().vocab);
    current_.decode_batch = static_cast<int64_t>(dec.size());
    current_.decode_kv_tokens = 0;
    for (int64_t p : pos) current_.decode_kv_tokens += p + 1;
    Status st = batch.Step(toks, pos, attns, logits.data());
    if (st.ok()) {
      const size_t v = static_cast<size_t>(model_.config().vocab);
      for (size_t i = 0; i < dec.size(); ++i) {
        std::copy(logits.begin() + i * v, logits.begin() + (i + 1) * v, dec[i]->logits.begin());
      }
      return;
    }
    const bool recoverable = st.code() == core::StatusCode::kUnavailable && attempt < 8;
    for (Running* r : dec) {
      Status rec =
          recoverable ? r->attn->Recover(
                            model_, std::span<const int32_t>(r->tokens).first(r->tokens.size() - 1))
                      : st;
      if (!rec.ok()) Finish(*r, {CompletionStream::Event::Kind::kError, 0, "", rec});
    }
    std::erase_if(running_, [](const std::unique_ptr<Running>& r) { return r->done; });
  }
}

std::vector<EngineIteration> CompletionEngine::Iterations() const {
  std::lock_guard lock(mu_);
  return iterations_;
}

void CompletionEngine::Run() {
  while (true) {
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(50),
                   [&] { return stop_ || !queue_.empty() || !running_.empty(); });
      if (stop_) break;
    }
    ++iteration_;
    const Clock::time_point start = Clock::now();
    current_ = EngineIteration{};
    Admit();
    PrefillSome();
    DecodeStep();
    if (options_.record_iterations && (current_.decode_batch > 0 || current_.prefill_tokens > 0)) {
      current_.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
      std::lock_guard lock(mu_);
      iterations_.push_back(current_);
    }
  }
  const Status gone = core::Unavailable("the server stopped");
  for (auto& r : running_) Finish(*r, {CompletionStream::Event::Kind::kError, 0, "", gone});
  running_.clear();
  std::lock_guard lock(mu_);
  for (auto& [stream, params] : queue_) {
    stream->Push({CompletionStream::Event::Kind::kError, 0, "", gone, iteration_});
  }
  queue_.clear();
  queued_tokens_ = 0;
}

}  // namespace tessera::kernelflume
