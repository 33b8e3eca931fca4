// `tessera kernelflume simulate`: a trace-driven simulation of a GPU fleet serving a request
// trace with KernelFlume (weight nodes + an elastic attention pool) and with ServerlessLLM-style
// instance scaling, under the same autoscaler (kernelflume/fleet_sim.h does the work). Prints
// each system's cost per million output tokens, TPOT, TTFT and scaling; every figure is
// modeled. Without --trace it simulates a seeded tracelab-like agentic trace.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/plot.h"
#include "core/elapsed.h"
#include "core/json_util.h"
#include "core/table.h"
#include "hw/cluster.h"
#include "kernelflume/fleet_sim.h"
#include "models/llama_config.h"
#include "workload/agentic_trace.h"
#include "workload/request_trace.h"

namespace tessera::cli {
namespace {

struct SimulateArgs {
  std::string trace_path;
  workload::AgenticTraceOptions gen{.seed = 1, .sessions = 200, .duration_s = 3600};
  std::string model = "llama-3.1-8b";
  std::string cluster = "h100x64";
  std::string system = "both";
  std::string attn_device;
  bool no_pipeline = false;
  kernelflume::FleetSimOptions options;
  std::string json_path, trace_out, plot_path;
};

std::string Cell(const kernelflume::FleetRunResult& r, const std::string& what) {
  if (what == "usd") return fmt::format("{:.3f}", r.usd_per_mtok);
  if (what == "cost") return fmt::format("{:.2f} ({:.1f} GPU-h)", r.cost_usd, r.gpu_hours);
  if (what == "tpot") return fmt::format("{:.1f} / {:.1f}", r.tpot_p50_ms, r.tpot_p99_ms);
  if (what == "flat") return fmt::format("{:.2f}", r.p99_flatness);
  if (what == "ttft") return fmt::format("{:.2f} / {:.2f}", r.ttft_p50_s, r.ttft_p99_s);
  if (what == "done") return fmt::format("{} / {}", r.completed, r.rejected);
  if (what == "gpus") return std::to_string(r.gpus_max);
  if (what == "scale") {
    return fmt::format("{} / {} ({} cold, {} warm)", r.scale_outs, r.scale_ins, r.cold_starts,
                       r.warm_starts);
  }
  if (what == "preempt") {
    return fmt::format("{} ({} tokens recomputed)", r.preemptions, r.recomputed_tokens);
  }
  if (what == "prefill") return fmt::format("{} / {}", r.prefill_tokens, r.cached_tokens);
  if (what == "held") return std::to_string(r.held_turns);
  return fmt::format("{:.0f}", r.end_s);
}

core::Status RunSimulate(const SimulateArgs& a) {
  auto model = models::LoadLlamaConfig(a.model);
  if (!model.ok()) return model.status().WithPrefix("--model");
  auto cluster = hw::LoadCluster(a.cluster);
  if (!cluster.ok()) return cluster.status().WithPrefix("--cluster");
  kernelflume::FleetSimOptions o = a.options;
  o.pipelined = !a.no_pipeline;
  if (!a.attn_device.empty()) {
    auto d = hw::DevicePreset(a.attn_device);
    if (!d.ok()) return d.status().WithPrefix("--attn-device");
    o.attn_device = *d;
  }
  std::vector<workload::TraceRequest> trace;
  std::string source = a.trace_path;
  if (!a.trace_path.empty()) {
    ASSIGN_OR_RETURN(trace, workload::ReadMooncakeTrace(a.trace_path, {}));
  } else {
    auto made = workload::MakeAgenticTrace(a.gen);
    if (!made.ok()) {
      return NameFlags(made.status(), {{"sessions", "--sessions"}, {"duration_s", "--duration-s"}});
    }
    trace = std::move(made->requests);
    source = fmt::format("tracelab-like, {} sessions over {:.0f} s, seed {}", a.gen.sessions,
                         a.gen.duration_s, a.gen.seed);
  }
  std::vector<kernelflume::FleetSystem> systems;
  if (a.system != "serverlessllm") systems.push_back(kernelflume::FleetSystem::kKernelFlume);
  if (a.system != "kernelflume") systems.push_back(kernelflume::FleetSystem::kServerlessLlm);
  core::TraceWriter perfetto;
  std::vector<kernelflume::FleetRunResult> runs;
  std::vector<double> wall_s;
  for (kernelflume::FleetSystem s : systems) {
    std::fprintf(stderr, "simulating %s on %zu requests...\n", kernelflume::FleetSystemName(s),
                 trace.size());
    const auto t0 = std::chrono::steady_clock::now();
    auto r =
        kernelflume::SimulateFleet(trace, *model, *cluster, s, o,
                                   a.trace_out.empty() || runs.size() > 0 ? nullptr : &perfetto);
    if (!r.ok() && r.status().code() == core::StatusCode::kFailedPrecondition) {
      std::string m = r.status().message();  // "... (raise weight_gpus)": name the flag
      if (const size_t at = m.find("raise weight_gpus"); at != std::string::npos) {
        m.replace(at, 17, "raise --weight-gpus");
      }
      return core::FailedPrecondition(m);
    }
    if (!r.ok()) {
      return NameFlags(r.status(), {{"weight_gpus", "--weight-gpus"},
                                    {"weight_nodes", "--weight-nodes"},
                                    {"max_batch", "--max-batch"},
                                    {"min_nodes", "--min-nodes"},
                                    {"max_nodes", "--max-nodes"},
                                    {"kv_low", "--kv-low"},
                                    {"kv_high", "--kv-high"},
                                    {"keep_alive_s", "--keep-alive-s"},
                                    {"max_gpus", "--max-gpus"},
                                    {"max_weight_nodes", "--max-weight-nodes"},
                                    {"attn_price_factor", "--attn-price-factor"},
                                    {"cache_ttl_s", "--cache-ttl-s"},
                                    {"tpot_target_ms", "--tpot-target-ms"},
                                    {"tick_s", "--tick-s"},
                                    {"window_s", "--window-s"}});
    }
    wall_s.push_back(core::SecondsSince(t0));
    runs.push_back(*std::move(r));
  }
  std::printf("trace: %s (%zu requests)\nmodel %s on %s (%s, %.2f USD per GPU-hour)%s\n",
              source.c_str(), trace.size(), model->name.c_str(), cluster->name.c_str(),
              cluster->device.name.c_str(), cluster->device.price_usd_per_hour,
              o.attn_device.name.empty()
                  ? ""
                  : fmt::format("; attention nodes: {} ({:.2f} USD per GPU-hour)",
                                o.attn_device.name, o.attn_device.price_usd_per_hour)
                        .c_str());
  std::vector<std::string> header = {"figure (modeled)"};
  for (const auto& r : runs) header.push_back(kernelflume::FleetSystemName(r.system));
  core::Table t(header);
  const std::pair<const char*, const char*> rows[] = {
      {"USD per million output tokens", "usd"},
      {"cost (USD)", "cost"},
      {"TPOT p50 / p99 (ms)", "tpot"},
      {"p99 TPOT flatness (max / min window)", "flat"},
      {"TTFT p50 / p99 (s)", "ttft"},
      {"requests completed / rejected", "done"},
      {"GPUs at most", "gpus"},
      {"scale-outs / scale-ins", "scale"},
      {"preemptions", "preempt"},
      {"prefill tokens computed / cached", "prefill"},
      {"turns held for their previous turn", "held"},
      {"run length (s)", "end"}};
  for (const auto& [label, key] : rows) {
    std::vector<std::string> row = {label};
    for (const auto& r : runs) row.push_back(Cell(r, key));
    t.AddRow(row);
  }
  std::vector<std::string> wall = {"simulated in (s, measured here)"};
  for (double s : wall_s) wall.push_back(fmt::format("{:.2f}", s));
  t.AddRow(wall);
  std::printf("%s", t.Render().c_str());
  if (runs.size() == 2) {
    const double cut = kernelflume::FleetCostReduction(runs[0], runs[1]);
    std::printf(
        "KernelFlume costs %.1f%% %s per million output tokens than ServerlessLLM "
        "(modeled)\n",
        100 * std::abs(cut), cut >= 0 ? "less" : "more");
  }
  if (!a.json_path.empty()) {
    core::Json j = {{"trace", source},      {"requests", trace.size()},
                    {"model", model->name}, {"cluster", cluster->name},
                    {"kind", "modeled"},    {"runs", core::Json::array()}};
    for (size_t i = 0; i < runs.size(); ++i) {
      core::Json r = kernelflume::ToJson(runs[i]);
      r["simulated_wall_s"] = wall_s[i];
      j["runs"].push_back(r);
    }
    if (runs.size() == 2) j["cost_reduction"] = kernelflume::FleetCostReduction(runs[0], runs[1]);
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, j));
  }
  if (!a.trace_out.empty()) {
    RETURN_IF_ERROR(perfetto.Write(a.trace_out));
    std::printf("wrote %s (%s)\n", a.trace_out.c_str(), kernelflume::FleetSystemName(systems[0]));
  }
  if (!a.plot_path.empty()) {
    RETURN_IF_ERROR(RenderPlot(
        "plot_kernelflume_fleet.py",
        kernelflume::FleetPlotJson(
            runs, fmt::format("{} on {}, {} requests", model->name, cluster->name, trace.size())),
        a.plot_path));
    std::printf("wrote %s\n", a.plot_path.c_str());
  }
  return core::Status::Ok();
}

}  // namespace

void AddKernelFlumeSimulate(CLI::App* kernelflume, Action* action) {
  auto a = std::make_shared<SimulateArgs>();
  auto paths = std::make_shared<CommandPaths>();
  kernelflume::FleetSimOptions& o = a->options;
  CLI::App* c = kernelflume->add_subcommand(
      "simulate",
      "Modeled cost per million output tokens of a GPU fleet serving a trace: KernelFlume's "
      "elastic attention pool against ServerlessLLM-style instance scaling");
  paths->Input(c, "--trace", &a->trace_path,
               "a Mooncake-format trace (.jsonl or .jsonl.gz); without it, a seeded "
               "tracelab-like agentic trace (--sessions, --duration-s, --seed)");
  c->add_option("--sessions", a->gen.sessions, "sessions of the generated trace")
      ->transform(Integer(1, 100000))
      ->capture_default_str();
  c->add_option("--duration-s", a->gen.duration_s, "the generated sessions start over this long")
      ->check(Number(1e-3, 1e7))
      ->capture_default_str();
  c->add_option("--seed", a->gen.seed, "seed of the generated trace")
      ->transform(Seed())
      ->capture_default_str();
  c->add_option("--model", a->model, "a preset (llama-3.1-8b, llama-3.1-70b) or a model directory")
      ->capture_default_str();
  c->add_option("--cluster", a->cluster, "a cluster preset (h100x64, a6000x32, ...) or a file")
      ->capture_default_str();
  c->add_option("--system", a->system, "kernelflume, serverlessllm or both")
      ->check(CLI::IsMember({"kernelflume", "serverlessllm", "both"}))
      ->capture_default_str();
  c->add_option("--attn-device", a->attn_device,
                "a device preset for KernelFlume's attention nodes (a cheaper SKU); default: "
                "the cluster's");
  c->add_option("--max-gpus", o.max_gpus,
                "the fleet: the cluster's first N GPUs (0: all; a6000x32 --max-gpus 8 is one "
                "8-GPU node)")
      ->transform(Integer(0, 1 << 20))
      ->capture_default_str();
  c->add_option("--attn-price-factor", o.attn_price_factor,
                "bill an attention GPU at this times its price (spot or a cheaper tier)")
      ->check(Number(1e-3, 1e3))
      ->capture_default_str();
  c->add_option("--weight-gpus", o.weight_gpus, "tensor-parallel GPUs of a weight node or instance")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  c->add_option("--weight-nodes", o.weight_nodes, "KernelFlume's weight nodes (always on)")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  c->add_option("--max-weight-nodes", o.max_weight_nodes,
                "KernelFlume's weight nodes at most (0: what the cluster holds)")
      ->transform(Integer(0, 64))
      ->capture_default_str();
  c->add_option("--max-batch", o.max_batch, "requests decoding together per weight node/instance")
      ->transform(Integer(1, 1 << 20))
      ->capture_default_str();
  c->add_flag("--no-pipeline", a->no_pipeline, "KernelFlume without two ping-ponged micro-batches");
  c->add_option("--kv-high", o.autoscaler.kv_high, "scale out above this KV use")
      ->check(Number(1e-3, 1))
      ->capture_default_str();
  c->add_option("--kv-low", o.autoscaler.kv_low, "scale in below this KV use")
      ->check(Number(1e-3, 1))
      ->capture_default_str();
  c->add_option("--keep-alive-s", o.autoscaler.keep_alive_s,
                "KV use stays low this long before a scale-in")
      ->check(Number(0, 1e6))
      ->capture_default_str();
  c->add_option("--min-nodes", o.autoscaler.min_nodes,
                "attention nodes / instances always up (started warm)")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  c->add_option("--max-nodes", o.autoscaler.max_nodes,
                "attention nodes / instances at most (0: what the cluster holds, <= 64)")
      ->transform(Integer(0, 64))
      ->capture_default_str();
  c->add_option("--attn-start-s", o.attn_start_s, "an attention node's start")
      ->check(Number(0, 3600))
      ->capture_default_str();
  c->add_option("--instance-init-s", o.instance_init_s,
                "an instance's start beyond loading its weights")
      ->check(Number(0, 3600))
      ->capture_default_str();
  c->add_option("--dram-bytes-per-s", o.dram_bytes_per_s,
                "weight loading from host DRAM (warm start), bytes/s")
      ->check(Number(1e6, 1e13))
      ->capture_default_str();
  c->add_option("--ssd-bytes-per-s", o.ssd_bytes_per_s,
                "weight loading from SSD (cold start), bytes/s")
      ->check(Number(1e6, 1e13))
      ->capture_default_str();
  c->add_option("--tpot-target-ms", o.tpot_target_ms,
                "also scale out when a decode step passes kv-high x this (0: KV and prefill "
                "only)")
      ->check(Number(0, 1e6))
      ->capture_default_str();
  c->add_option("--prefill-chunk-tokens", o.prefill_chunk_tokens,
                "prefill at most this many prompt tokens beside each decode step (0: a "
                "request's prefill stalls its batch)")
      ->transform(Integer(0, int64_t{1} << 30))
      ->capture_default_str();
  c->add_option("--cache-ttl-s", o.cache_ttl_s,
                "a finished request's KV stays cached this long for the session's next turn")
      ->check(Number(1e-3, 1e7))
      ->capture_default_str();
  c->add_option("--tick-s", o.tick_s, "autoscaler period (and its prefill-busy window)")
      ->check(Number(1e-3, 3600))
      ->capture_default_str();
  c->add_option("--max-context", a->gen.max_context_tokens,
                "the generated sessions end before a prompt would pass this")
      ->transform(Integer(2, workload::kMaxTraceTokens))
      ->capture_default_str();
  c->add_option("--window-s", o.window_s, "TPOT and GPU windows")
      ->check(Number(1e-3, 1e6))
      ->capture_default_str();
  paths->Output(c, "--json", &a->json_path, "write both runs (per-window figures too) as JSON");
  paths->Output(c, "--trace-out", &a->trace_out,
                "write the first system's nodes and prefills as a Perfetto trace");
  paths->Output(c, "--plot", &a->plot_path,
                "draw GPUs and p99 TPOT over time for each system (PNG; needs "
                "python3-matplotlib)");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunSimulate(*a); }); });
}

}  // namespace tessera::cli
