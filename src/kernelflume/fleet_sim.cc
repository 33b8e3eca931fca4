#include "kernelflume/fleet_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <unordered_map>

#include "core/stats.h"
#include "kernelflume/decode_cost_model.h"
#include "kernelflume/fleet_sim_state.h"

namespace tessera::kernelflume {

using core::Status;

const char* FleetSystemName(FleetSystem s) {
  return s == FleetSystem::kKernelFlume ? "kernelflume" : "serverlessllm";
}

Status ValidateFleetSimOptions(const FleetSimOptions& o) {
  auto positive = [](const char* name, double v) {
    return v > 0 && std::isfinite(v)
               ? Status::Ok()
               : core::InvalidArgument(fmt::format("{}: got {}, must be > 0", name, v));
  };
  if (o.weight_gpus < 1) {
    return core::InvalidArgument(fmt::format("weight_gpus: got {}, must be >= 1", o.weight_gpus));
  }
  if (o.weight_nodes < 1) {
    return core::InvalidArgument(fmt::format("weight_nodes: got {}, must be >= 1", o.weight_nodes));
  }
  if (o.max_gpus < 0) {
    return core::InvalidArgument(fmt::format("max_gpus: got {}, must be >= 0", o.max_gpus));
  }
  if (o.max_weight_nodes < 0) {
    return core::InvalidArgument(
        fmt::format("max_weight_nodes: got {}, must be >= 0", o.max_weight_nodes));
  }
  if (o.max_batch < 1) {
    return core::InvalidArgument(fmt::format("max_batch: got {}, must be >= 1", o.max_batch));
  }
  RETURN_IF_ERROR(positive("tick_s", o.tick_s));
  RETURN_IF_ERROR(positive("window_s", o.window_s));
  RETURN_IF_ERROR(positive("chunk_s", o.chunk_s));
  RETURN_IF_ERROR(positive("cache_ttl_s", o.cache_ttl_s));
  RETURN_IF_ERROR(positive("attn_price_factor", o.attn_price_factor));
  if (o.prefill_chunk_tokens < 0) {
    return core::InvalidArgument(
        fmt::format("prefill_chunk_tokens: got {}, must be >= 0", o.prefill_chunk_tokens));
  }
  if (!(o.tpot_target_ms >= 0 && std::isfinite(o.tpot_target_ms))) {
    return core::InvalidArgument(
        fmt::format("tpot_target_ms: got {}, must be >= 0", o.tpot_target_ms));
  }
  RETURN_IF_ERROR(positive("dram_bytes_per_s", o.dram_bytes_per_s));
  RETURN_IF_ERROR(positive("ssd_bytes_per_s", o.ssd_bytes_per_s));
  for (auto [name, v] :
       {std::pair{"attn_start_s", o.attn_start_s}, std::pair{"route_install_s", o.route_install_s},
        std::pair{"instance_init_s", o.instance_init_s}}) {
    if (!(v >= 0 && std::isfinite(v))) {
      return core::InvalidArgument(fmt::format("{}: got {}, must be >= 0", name, v));
    }
  }
  AutoscalerOptions a = o.autoscaler;
  if (a.max_nodes == 0) a.max_nodes = std::max(1, a.min_nodes);  // filled in from the cluster
  return ValidateAutoscalerOptions(a);
}

namespace fleet_detail {

core::StatusOr<FleetRunResult> FleetSim::Run() {
  r_.system = system_;
  r_.requests = static_cast<int64_t>(trace_.size());
  RETURN_IF_ERROR(Setup());
  largest_request_ = kf() ? node_capacity_ * o_.autoscaler.max_nodes : node_capacity_;
  reqs_.resize(trace_.size());
  for (size_t i = 0; i < trace_.size(); ++i) {
    Request& rq = reqs_[i];
    rq.t = &trace_[i];
    rq.prompt = rq.t->input_length;
    rq.left = rq.t->output_length;
    const int idx = static_cast<int>(i);
    q_.Schedule(rq.t->timestamp_ms / 1e3, kFleetArrival, [this, idx] { Arrive(idx); });
  }
  q_.Schedule(0, kFleetTick, [this] { Tick(); });
  r_.events = q_.Run();
  // Bill every node to the end of the run.
  const double end = r_.end_s;
  double gpu_s = 0, usd = 0;
  for (const Node& n : nodes_) {
    const double up = std::max(
        0.0, (n.release_s >= 0 ? std::min(n.release_s, end) : end) - std::min(n.start_s, end));
    gpu_s += up * n.gpus;
    usd += up * n.gpus * n.usd_per_gpu_s;
  }
  r_.gpu_hours = gpu_s / 3600;
  r_.cost_usd = usd;
  r_.usd_per_mtok = r_.output_tokens > 0 ? usd / (r_.output_tokens / 1e6) : 0;
  r_.tpot_p50_ms = core::WeightedPercentile(all_tpot_s_, all_weight_, 50) * 1e3;
  r_.tpot_p99_ms = core::WeightedPercentile(all_tpot_s_, all_weight_, 99) * 1e3;
  r_.ttft_p50_s = core::Percentile(ttft_s_, 50);
  r_.ttft_p99_s = core::Percentile(ttft_s_, 99);
  const size_t used = std::min(windows_.size(), static_cast<size_t>(end / o_.window_s) + 1);
  double total_tokens = 0;
  for (size_t k = 0; k < used; ++k) {
    for (double x : windows_[k].weight) total_tokens += x;
  }
  double lo = 0, hi = 0;
  for (size_t k = 0; k < used; ++k) {
    const WindowAcc& a = windows_[k];
    FleetWindow w;
    w.start_s = k * o_.window_s;
    for (double x : a.weight) w.tokens += x;
    w.tpot_p50_ms = core::WeightedPercentile(a.tpot_s, a.weight, 50) * 1e3;
    w.tpot_p99_ms = core::WeightedPercentile(a.tpot_s, a.weight, 99) * 1e3;
    w.gpus_mean = a.gpu_s / std::min(o_.window_s, std::max(1e-9, end - w.start_s));
    w.gpus_max = a.gpus_max;
    w.kv_use_mean = a.kv_use_n > 0 ? a.kv_use_sum / a.kv_use_n : 0;
    if (w.tokens >= 0.01 * total_tokens / static_cast<double>(used) && w.tokens > 0) {
      lo = lo == 0 ? w.tpot_p99_ms : std::min(lo, w.tpot_p99_ms);
      hi = std::max(hi, w.tpot_p99_ms);
    }
    r_.windows.push_back(w);
  }
  r_.p99_flatness = lo > 0 ? hi / lo : 0;
  if (perfetto_ != nullptr) {
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (nodes_[n].ready && nodes_[n].release_s < 0) {
        perfetto_->Span(static_cast<int>(n), "up", "node", nodes_[n].start_s,
                        end - nodes_[n].start_s);
      }
    }
  }
  return r_;
}

}  // namespace fleet_detail

core::StatusOr<FleetRunResult> SimulateFleet(const std::vector<workload::TraceRequest>& trace,
                                             const models::LlamaConfig& model,
                                             const hw::Cluster& cluster, FleetSystem system,
                                             const FleetSimOptions& options,
                                             core::TraceWriter* perfetto) {
  RETURN_IF_ERROR(ValidateFleetSimOptions(options));
  if (trace.empty()) return core::InvalidArgument("trace: no request");
  // Bound the bookkeeping: windows and ticks over the trace's span (its runs end later, but a
  // run that outlasts its trace 100-fold is already a saturated fleet).
  const double span_s = trace.back().timestamp_ms / 1e3 + 3600;
  if (span_s / options.window_s > 1e6) {
    return core::InvalidArgument(fmt::format(
        "window_s: got {}, must give at most 1e6 windows over the trace's {:.0f} s (+1 h)",
        options.window_s, span_s));
  }
  if (span_s / options.tick_s > 1e7) {
    return core::InvalidArgument(
        fmt::format("tick_s: got {}, must give at most 1e7 ticks over the trace's {:.0f} s (+1 h)",
                    options.tick_s, span_s));
  }
  if (!options.attn_device.name.empty()) RETURN_IF_ERROR(hw::Validate(options.attn_device));
  fleet_detail::FleetSim sim(trace, model, cluster, system, options, perfetto);
  return sim.Run();
}

core::Json ToJson(const FleetRunResult& r) {
  core::Json windows = core::Json::array();
  for (const FleetWindow& w : r.windows) {
    windows.push_back({{"start_s", w.start_s},
                       {"tokens", w.tokens},
                       {"tpot_p50_ms", w.tpot_p50_ms},
                       {"tpot_p99_ms", w.tpot_p99_ms},
                       {"gpus_mean", w.gpus_mean},
                       {"gpus_max", w.gpus_max},
                       {"kv_use_mean", w.kv_use_mean}});
  }
  return core::Json{{"system", FleetSystemName(r.system)},
                    {"provenance", "modeled"},
                    {"requests", r.requests},
                    {"completed", r.completed},
                    {"rejected", r.rejected},
                    {"output_tokens", r.output_tokens},
                    {"prefill_tokens", r.prefill_tokens},
                    {"cached_tokens", r.cached_tokens},
                    {"preemptions", r.preemptions},
                    {"recomputed_tokens", r.recomputed_tokens},
                    {"scale_outs", r.scale_outs},
                    {"scale_ins", r.scale_ins},
                    {"cold_starts", r.cold_starts},
                    {"warm_starts", r.warm_starts},
                    {"gpus_max", r.gpus_max},
                    {"end_s", r.end_s},
                    {"gpu_hours", r.gpu_hours},
                    {"cost_usd", r.cost_usd},
                    {"usd_per_mtok", r.usd_per_mtok},
                    {"tpot_p50_ms", r.tpot_p50_ms},
                    {"tpot_p99_ms", r.tpot_p99_ms},
                    {"ttft_p50_s", r.ttft_p50_s},
                    {"ttft_p99_s", r.ttft_p99_s},
                    {"p99_flatness", r.p99_flatness},
                    {"held_turns", r.held_turns},
                    {"events", r.events},
                    {"windows", windows}};
}

double FleetCostReduction(const FleetRunResult& kernelflume, const FleetRunResult& baseline) {
  if (kernelflume.usd_per_mtok <= 0 || baseline.usd_per_mtok <= 0) return 0;
  return 1 - kernelflume.usd_per_mtok / baseline.usd_per_mtok;
}

core::Json FleetPlotJson(const std::vector<FleetRunResult>& runs, const std::string& title) {
  core::Json out = core::Json::array();
  for (const FleetRunResult& r : runs) {
    core::Json t = core::Json::array(), gpus = core::Json::array(), p99 = core::Json::array();
    for (const FleetWindow& w : r.windows) {
      t.push_back(w.start_s);
      gpus.push_back(w.gpus_mean);
      p99.push_back(w.tokens > 0 ? core::Json(w.tpot_p99_ms) : core::Json(nullptr));
    }
    out.push_back({{"system", FleetSystemName(r.system)},
                   {"usd_per_mtok", r.usd_per_mtok},
                   {"start_s", t},
                   {"gpus_mean", gpus},
                   {"tpot_p99_ms", p99}});
  }
  return {{"title", title}, {"runs", out}};
}

}  // namespace tessera::kernelflume