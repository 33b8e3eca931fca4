#include "kernelflume/scale_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "core/stats.h"
#include "kernelflume/attention_cluster.h"
#include "kernelflume/autoscaler.h"
#include "kernelflume/completion_engine.h"
#include "kernelflume/generate_service.h"
#include "kernelflume/instance_pool.h"
#include "models/generate.h"
#include "models/kv_cache.h"

namespace tessera::kernelflume {

using core::Status;
using BenchClock = std::chrono::steady_clock;

const char* ScaleSystemName(ScaleSystem s) {
  return s == ScaleSystem::kKernelFlume ? "kernelflume" : "instances";
}

Status ValidateScaleBench(const ScaleBenchOptions& o, const models::LlamaConfig& config) {
  if (o.requests.empty()) {
    RETURN_IF_ERROR(ValidateBurstTrace(o.trace, config));
  } else {
    for (size_t i = 0; i < o.requests.size(); ++i) {
      const TraceRequest& r = o.requests[i];
      if (r.prompt.empty() || r.max_tokens < 1 ||
          static_cast<int64_t>(r.prompt.size()) + r.max_tokens > config.max_context ||
          !(r.arrival_s >= 0) || (i > 0 && r.arrival_s < o.requests[i - 1].arrival_s)) {
        return core::InvalidArgument(fmt::format(
            "request {}: needs a prompt, max_tokens >= 1, prompt + max_tokens <= {} (the model's "
            "context) and arrivals in order (got {} + {} tokens at {} s)",
            i, config.max_context, r.prompt.size(), r.max_tokens, r.arrival_s));
      }
    }
  }
  if (o.min_nodes < 1 || o.min_nodes > o.max_nodes || o.max_nodes > 64) {
    return core::InvalidArgument(fmt::format(
        "min_nodes {} and max_nodes {}: need 1 <= min <= max <= 64", o.min_nodes, o.max_nodes));
  }
  if (o.capacity_tokens < 1 || o.page_tokens < 1 || o.max_active < 1 ||
      o.prefill_tokens_per_step < 1 || o.min_window_samples < 1) {
    return core::InvalidArgument(
        "capacity_tokens, page_tokens, max_active, prefill_tokens_per_step and "
        "min_window_samples: must be >= 1");
  }
  if (!(o.keep_alive_s >= 0) || !(o.cooldown_s >= 0) || !(o.window_s > 0) || !(o.settle_s >= 0)) {
    return core::InvalidArgument(
        "keep_alive_s, cooldown_s and settle_s must be >= 0, window_s > 0");
  }
  return Status::Ok();
}

Status ScaleVerdict(const ScaleRunReport& r) {
  if (r.mismatched > 0) {
    return core::Internal(fmt::format("{}: {} of {} requests differ from the monolithic model",
                                      r.system, r.mismatched, r.requests));
  }
  if (r.failed > 0) {
    return core::Unavailable(fmt::format("{}: {} of {} requests failed; first: {}", r.system,
                                         r.failed, r.requests, r.first_error));
  }
  return Status::Ok();
}

namespace {

// What the clients and the sampler see of either system.
struct Served {
  std::function<core::StatusOr<std::shared_ptr<CompletionStream>>(CompletionParams)> submit;
  std::function<PoolSample()> sample;  // t_s left 0
};

struct ClientLog {
  std::vector<double> token_s;
  std::vector<int32_t> tokens;
  double submit_s = 0;
  Status error = Status::Ok();
};

double Since(BenchClock::time_point t0) {
  return std::chrono::duration<double>(BenchClock::now() - t0).count();
}

void RunClient(const TraceRequest& r, const Served& served, BenchClock::time_point t0,
               ClientLog& log) {
  std::this_thread::sleep_until(t0 + std::chrono::duration_cast<BenchClock::duration>(
                                         std::chrono::duration<double>(r.arrival_s)));
  log.submit_s = Since(t0);
  CompletionParams p;
  p.prompt = r.prompt;
  p.max_tokens = r.max_tokens;
  p.stop_at_eos = false;
  auto stream = served.submit(std::move(p));
  if (!stream.ok()) {
    log.error = stream.status();
    return;
  }
  for (int idle = 0; idle < 1200;) {  // 120 s without an event: the request is lost
    auto e = (*stream)->Next(0.1);
    if (!e) {
      ++idle;
      continue;
    }
    idle = 0;
    if (e->kind == CompletionStream::Event::Kind::kToken) {
      log.token_s.push_back(Since(t0));
      log.tokens.push_back(e->token);
    } else {
      if (e->kind == CompletionStream::Event::Kind::kError) log.error = e->error;
      return;
    }
  }
  log.error = core::DeadlineExceeded("no token for 120 s");
}

int64_t CountMismatches(const models::LlamaModel& model, const std::vector<TraceRequest>& trace,
                        const std::vector<ClientLog>& logs) {
  int64_t bad = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (!logs[i].error.ok()) continue;
    models::LocalKvCache cache(model.config());
    models::SamplingOptions so;
    so.stop_at_eos = false;
    auto want = models::Generate(model, cache, trace[i].prompt, trace[i].max_tokens, so);
    if (!want.ok() || *want != logs[i].tokens) ++bad;
  }
  return bad;
}

}  // namespace

core::StatusOr<ScaleRunReport> RunScaleBench(const models::LlamaModel& model,
                                             const ScaleBenchOptions& o, ScaleSystem system) {
  RETURN_IF_ERROR(ValidateScaleBench(o, model.config()));
  std::vector<TraceRequest> trace = o.requests;
  if (trace.empty()) {
    ASSIGN_OR_RETURN(trace, MakeBurstTrace(o.trace, model.config()));
  }
  AutoscalerOptions ao;
  ao.min_nodes = o.min_nodes;
  ao.max_nodes = o.max_nodes;
  ao.keep_alive_s = o.keep_alive_s;
  ao.cooldown_s = o.cooldown_s;
  EngineOptions eo;
  eo.max_active = o.max_active;
  eo.max_queued = std::max<int>(64, static_cast<int>(trace.size()));
  eo.max_nodes = o.max_nodes;
  eo.prefill_tokens_per_step = o.prefill_tokens_per_step;
  eo.record_iterations = o.record_iterations;

  std::unique_ptr<AttentionCluster> cluster;
  std::unique_ptr<CompletionEngine> engine;
  std::unique_ptr<AutoscaleLoop> loop;
  std::unique_ptr<InstancePool> pool;
  Served served;
  if (system == ScaleSystem::kKernelFlume) {
    AttentionClusterOptions co;
    co.num_nodes = o.min_nodes;
    co.transport = o.node_command.empty() ? "fake" : "ucx";
    co.processes = !o.node_command.empty();
    co.node_command = o.node_command;
    co.capacity_tokens = o.capacity_tokens;
    co.page_tokens = o.page_tokens;
    ASSIGN_OR_RETURN(cluster, AttentionCluster::Start(AttentionShapeOf(model.config()),
                                                      model.Fingerprint(), co));
    engine = std::make_unique<CompletionEngine>(model, *cluster, eo);
    CompletionEngine* e = engine.get();
    AttentionCluster* c = cluster.get();
    loop = std::make_unique<AutoscaleLoop>(*cluster, ao, 0.1, [e] { return e->DemandTokens(); });
    served.submit = [e](CompletionParams p) { return e->Submit(std::move(p)); };
    served.sample = [e, c] {
      PoolSample s;
      int64_t capacity = 0;
      for (const WeightNode::NodeLoad& n : c->weight_node().PoolLoad()) {
        ++s.units;
        capacity += n.capacity_tokens;
      }
      s.kv_use = capacity > 0 ? static_cast<double>(e->DemandTokens()) / capacity : 0;
      s.queued = e->Metrics().queued;
      return s;
    };
  } else {
    InstancePoolOptions po;
    po.weights_dir = o.weights_dir;
    po.capacity_tokens = o.capacity_tokens;
    po.page_tokens = o.page_tokens;
    po.engine = eo;
    po.autoscaler = ao;
    ASSIGN_OR_RETURN(pool, InstancePool::Start(po));
    InstancePool* p = pool.get();
    served.submit = [p](CompletionParams params) { return p->Submit(std::move(params)); };
    served.sample = [p] {
      const InstancePool::Snapshot l = p->Load();
      return PoolSample{0, l.instances, l.kv_use, l.queued};
    };
  }

  ScaleRunReport rep;
  rep.system = ScaleSystemName(system);
  rep.requests = static_cast<int64_t>(trace.size());
  std::vector<ClientLog> logs(trace.size());
  const BenchClock::time_point t0 = BenchClock::now();
  const double wn_t0 = cluster ? cluster->weight_node().Now() : 0;
  std::atomic<bool> clients_done{false};
  std::thread sampler([&] {
    double settled_at = -1;
    while (true) {
      PoolSample s = served.sample();
      s.t_s = Since(t0);
      rep.pool.push_back(s);
      if (clients_done) {
        if (settled_at < 0) settled_at = s.t_s;
        if (s.units <= o.min_nodes || s.t_s - settled_at >= o.settle_s) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  });
  std::vector<std::thread> clients;
  for (size_t i = 0; i < trace.size(); ++i) {
    clients.emplace_back([&, i] { RunClient(trace[i], served, t0, logs[i]); });
  }
  for (std::thread& t : clients) t.join();
  clients_done = true;
  sampler.join();
  rep.wall_s = Since(t0);
  rep.window_s = o.window_s;

  if (loop) {
    for (ElasticEvent e : cluster->weight_node().events()) {
      e.t_s -= wn_t0;
      if (e.t_s >= 0) rep.events.push_back(std::move(e));
    }
    rep.unit_start_ms = loop->scale_out_ms();
    if (Status st = loop->error(); !st.ok()) rep.first_error = st.ToString();
    loop->Stop();
  }
  if (pool) {
    rep.unit_start_ms = pool->start_ms();
    rep.unit_start_ms.erase(
        rep.unit_start_ms.begin(),
        rep.unit_start_ms.begin() + std::min<size_t>(o.min_nodes, rep.unit_start_ms.size()));
    const std::string err = pool->Load().start_error;
    if (!err.empty() && rep.first_error.empty()) rep.first_error = err;
    pool->Stop();
  }
  if (engine) {
    engine->Stop();
    rep.iterations = engine->Iterations();
  }
  engine.reset();
  cluster.reset();

  std::vector<std::vector<double>> times;
  std::vector<double> ttft;
  for (size_t i = 0; i < trace.size(); ++i) {
    const ClientLog& l = logs[i];
    if (l.error.ok()) {
      ++rep.completed;
    } else {
      ++rep.failed;
      if (rep.first_error.empty()) rep.first_error = l.error.ToString();
    }
    rep.tokens += static_cast<int64_t>(l.tokens.size());
    if (!l.token_s.empty()) ttft.push_back(1e3 * (l.token_s.front() - trace[i].arrival_s));
    times.push_back(l.token_s);
  }
  ASSIGN_OR_RETURN(rep.tpot, TpotByWindow(times, o.window_s, o.min_window_samples));
  const std::vector<double> gaps = TpotGapsMs(times);
  rep.tpot_ms_p50 = core::Percentile(gaps, 50);
  rep.tpot_ms_p99 = core::Percentile(gaps, 99);
  rep.token_s = times;
  rep.ttft_ms_p50 = core::Percentile(ttft, 50);
  rep.ttft_ms_p99 = core::Percentile(ttft, 99);
  for (const PoolSample& s : rep.pool) {
    rep.most_units = std::max(rep.most_units, s.units);
    if (rep.units_path.empty() || rep.units_path.back() != s.units)
      rep.units_path.push_back(s.units);
  }
  for (const TpotWindow& w : rep.tpot.windows) {
    int most = 0;
    for (const PoolSample& s : rep.pool) {
      if (s.t_s >= w.start_s && s.t_s < w.start_s + o.window_s) most = std::max(most, s.units);
    }
    rep.window_units_max.push_back(most);
  }
  rep.units_at_end = rep.pool.empty() ? 0 : rep.pool.back().units;
  if (o.check) rep.mismatched = CountMismatches(model, trace, logs);
  return rep;
}

}  // namespace tessera::kernelflume
