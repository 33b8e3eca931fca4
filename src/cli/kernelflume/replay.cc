// `tessera kernelflume replay`: a Mooncake-format trace scaled down and replayed on real
// processes (the completion engine over attention-node processes on UCX), then predicted by the
// engine simulator from a measured profile (kernelflume/trace_replay.h, engine_sim.h,
// engine_profile.h do the work). --fit-profile-out fits a profile to this run's iterations
// (a calibration run); --profile predicts this run with a profile fitted on another.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "cli/command.h"
#include "cli/options.h"
#include "core/json_util.h"
#include "core/table.h"
#include "kernelflume/attention_cluster.h"
#include "kernelflume/engine_profile.h"
#include "kernelflume/engine_sim.h"
#include "kernelflume/scale_bench.h"
#include "kernelflume/trace_replay.h"
#include "kernels/gemm.h"
#include "workload/request_trace.h"

namespace tessera::cli {
namespace {

struct ReplayArgs {
  std::string trace_path;
  kernelflume::ReplayScaling scaling;
  std::string model = "tiny-gqa";
  uint64_t weight_seed = 1;
  int nodes = 2;
  std::string transport = "ucx";
  kernelflume::ScaleBenchOptions bench;
  std::string profile_path, fit_out, json_path;
  bool calibrate = false;
  bool no_noise = false;
};

// A fixed pool of `nodes` attention nodes (processes over UCX, or in this process), its
// engine's iterations recorded.
kernelflume::ScaleBenchOptions FixedPoolOptions(const ReplayArgs& a) {
  kernelflume::ScaleBenchOptions o = a.bench;
  o.min_nodes = o.max_nodes = a.nodes;
  o.record_iterations = true;
  o.settle_s = 0;
  if (a.transport == "ucx") o.node_command = {"/proc/self/exe", "kernelflume", "attn-node"};
  return o;
}

// The calibration workload: a seeded bursty trace whose batch (1 to max_active) and contexts
// (16 to ~1,150 tokens) span what the replays here meet, so that every term of the profile is
// measured, not extrapolated.
kernelflume::BurstTraceOptions CalibrationTrace(uint64_t seed) {
  kernelflume::BurstTraceOptions t;
  t.duration_s = 40;
  t.base_rate_per_s = 1;
  t.burst_rate_per_s = 4;
  t.burst_start_s = 10;
  t.burst_end_s = 25;
  t.prompt_tokens_min = 16;
  t.prompt_tokens_max = 1024;
  t.output_tokens_min = 16;
  t.output_tokens_max = 128;
  t.seed = seed;
  return t;
}

core::Status RunCalibration(ReplayArgs& a, const models::LlamaModel& model) {
  if (a.fit_out.empty()) {
    return core::InvalidArgument("--calibrate: needs --fit-profile-out (where the profile goes)");
  }
  kernelflume::ScaleBenchOptions o = FixedPoolOptions(a);
  o.trace = CalibrationTrace(a.scaling.seed);
  std::fprintf(stderr, "calibrating: a %.0f s bursty trace on %d attention node(s) (%s) ...\n",
               o.trace.duration_s, a.nodes, a.transport.c_str());
  ASSIGN_OR_RETURN(kernelflume::ScaleRunReport run,
                   kernelflume::RunScaleBench(model, o, kernelflume::ScaleSystem::kKernelFlume));
  RETURN_IF_ERROR(kernelflume::ScaleVerdict(run));
  auto fit = kernelflume::FitEngineProfile(run.iterations);
  if (!fit.ok()) return fit.status().WithPrefix("--calibrate");
  fit->source = fmt::format(
      "tessera kernelflume replay --calibrate --seed {} ({} requests, {} "
      "node(s), {})",
      a.scaling.seed, run.requests, a.nodes, model.config().name);
  RETURN_IF_ERROR(core::WriteJsonFile(a.fit_out, kernelflume::ToJson(*fit)));
  std::printf(
      "%s: %lld iterations; per iteration %.2f ms + %.3f ms per request + %.2f us per "
      "KV token; prefill %.3f ms per token + %.3f us per attended pair; fit error %.1f%% "
      "(in-sample); residual p99 x%.2f (measured here)\n",
      a.fit_out.c_str(), static_cast<long long>(fit->iterations), 1e3 * fit->base_s,
      1e3 * fit->per_request_s, 1e6 * fit->per_kv_token_s, 1e3 * fit->per_prefill_token_s,
      1e6 * fit->per_prefill_pair_s, fit->fit_mape_percent,
      fit->residual_quantiles.empty() ? 1.0 : fit->residual_quantiles[99]);
  return core::Status::Ok();
}

core::Status RunReplay(ReplayArgs& a) {
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));
  ASSIGN_OR_RETURN(models::LlamaModel model, models::LlamaModel::Open(a.model, a.weight_seed));
  if (a.calibrate) return RunCalibration(a, model);
  if (a.trace_path.empty()) return core::InvalidArgument("--trace: required (or --calibrate)");
  ASSIGN_OR_RETURN(std::vector<workload::TraceRequest> trace,
                   workload::ReadMooncakeTrace(a.trace_path, {}));
  auto scaled = kernelflume::ScaleTraceForReplay(trace, a.scaling, model.config());
  if (!scaled.ok()) {
    return NameFlags(scaled.status(), {{"token_scale", "--token-scale"},
                                       {"output_scale", "--output-scale"},
                                       {"time_scale", "--time-scale"},
                                       {"start_s", "--start-s"}});
  }
  std::optional<kernelflume::EngineProfile> given;
  if (!a.profile_path.empty()) {
    auto p = kernelflume::ReadEngineProfile(a.profile_path);
    if (!p.ok()) return p.status().WithPrefix("--profile");
    given = *p;
  }
  kernelflume::ScaleBenchOptions o = FixedPoolOptions(a);
  o.requests = scaled->requests;
  std::fprintf(stderr, "replaying %zu requests on %d attention node(s) (%s) ...\n",
               o.requests.size(), a.nodes, a.transport.c_str());
  ASSIGN_OR_RETURN(kernelflume::ScaleRunReport real,
                   kernelflume::RunScaleBench(model, o, kernelflume::ScaleSystem::kKernelFlume));
  RETURN_IF_ERROR(kernelflume::ScaleVerdict(real));
  // One fit serves both: the prediction (without --profile) and --fit-profile-out.
  std::optional<kernelflume::EngineProfile> fitted;
  if (!given || !a.fit_out.empty()) {
    auto fit = kernelflume::FitEngineProfile(real.iterations);
    if (!fit.ok()) {
      return fit.status().WithPrefix(given ? "--fit-profile-out" : "fitting a profile to this run");
    }
    fit->source = fmt::format("tessera kernelflume replay --trace {} ({} requests)", a.trace_path,
                              o.requests.size());
    fitted = *fit;
  }
  if (!a.fit_out.empty()) {
    RETURN_IF_ERROR(core::WriteJsonFile(a.fit_out, kernelflume::ToJson(*fitted)));
  }
  kernelflume::EngineProfile profile = given ? *given : *fitted;
  const int64_t range =
      kernelflume::ReserveRangeTokens(kernelflume::AttentionClusterOptions{}.weight_node.router);
  kernelflume::EngineSimOptions so;
  so.max_active = o.max_active;
  so.prefill_tokens_per_step = o.prefill_tokens_per_step;
  so.capacity_tokens = o.capacity_tokens * a.nodes;
  so.seed = a.scaling.seed;
  if (a.no_noise) profile.residual_quantiles.clear();
  ASSIGN_OR_RETURN(
      kernelflume::EngineSimResult predicted,
      kernelflume::SimulateEngine(
          kernelflume::EngineSimRequestsOf(o.requests, o.page_tokens, range), so, profile));
  const kernelflume::ReplayComparison c =
      kernelflume::CompareReplay(real.token_s, predicted.token_s);
  std::printf("%s: %zu requests (%lld clamped to the context), %d attention node(s), %s\n",
              a.trace_path.c_str(), o.requests.size(), static_cast<long long>(scaled->clamped),
              a.nodes, model.config().name.c_str());
  core::Table t({"TPOT (ms)", "real (measured here)", "predicted (engine simulator)", "error"});
  t.AddRow({"p50", fmt::format("{:.2f}", c.real_p50_ms), fmt::format("{:.2f}", c.predicted_p50_ms),
            fmt::format("{:.1f}%", 100 * c.p50_error)});
  t.AddRow({"p99", fmt::format("{:.2f}", c.real_p99_ms), fmt::format("{:.2f}", c.predicted_p99_ms),
            fmt::format("{:.1f}%", 100 * c.p99_error)});
  t.AddRow({"samples", std::to_string(c.real_samples), std::to_string(c.predicted_samples), ""});
  std::printf("%s", t.Render().c_str());
  std::printf("profile: %s%s (%lld iterations, fit error %.1f%% on them)\n",
              given ? "" : "fitted to this run, in-sample: ", given ? a.profile_path.c_str() : "",
              static_cast<long long>(profile.iterations), profile.fit_mape_percent);
  std::printf("run: %.1f s wall, %lld tokens, %lld iterations recorded, TTFT p50 %.0f ms\n",
              real.wall_s, static_cast<long long>(real.tokens),
              static_cast<long long>(real.iterations.size()), real.ttft_ms_p50);
  if (!a.json_path.empty()) {
    core::Json j = {{"trace", a.trace_path},
                    {"requests", o.requests.size()},
                    {"clamped", scaled->clamped},
                    {"nodes", a.nodes},
                    {"model", model.config().name},
                    {"token_scale", a.scaling.token_scale},
                    {"output_scale", a.scaling.output_scale},
                    {"time_scale", a.scaling.time_scale},
                    {"real",
                     {{"tpot_p50_ms", c.real_p50_ms},
                      {"tpot_p99_ms", c.real_p99_ms},
                      {"samples", c.real_samples},
                      {"wall_s", real.wall_s},
                      {"kind", "measured"}}},
                    {"predicted",
                     {{"tpot_p50_ms", c.predicted_p50_ms},
                      {"tpot_p99_ms", c.predicted_p99_ms},
                      {"samples", c.predicted_samples},
                      {"kind", "modeled"}}},
                    {"p50_error", c.p50_error},
                    {"p99_error", c.p99_error},
                    {"profile", kernelflume::ToJson(profile)},
                    {"profile_in_sample", !given.has_value()}};
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, j));
  }
  return core::Status::Ok();
}

}  // namespace

void AddKernelFlumeReplay(CLI::App* kernelflume, Action* action) {
  auto a = std::make_shared<ReplayArgs>();
  auto paths = std::make_shared<CommandPaths>();
  kernelflume::ReplayScaling& s = a->scaling;
  CLI::App* c = kernelflume->add_subcommand(
      "replay",
      "Replay a scaled Mooncake-format trace on attention-node processes and compare its TPOT "
      "with the engine simulator's prediction");
  paths->Input(c, "--trace", &a->trace_path, "a Mooncake-format trace (.jsonl or .jsonl.gz)");
  c->add_flag("--calibrate", a->calibrate,
              "run the built-in calibration trace instead and write its profile to "
              "--fit-profile-out");
  c->add_flag("--no-noise", a->no_noise,
              "simulate a noiseless engine (default: each iteration's factor is drawn from the "
              "profile's residuals)");
  c->add_option("--token-scale", s.token_scale, "prompt (and output) lengths times this")
      ->check(Number(1e-6, 1e3))
      ->capture_default_str();
  c->add_option("--output-scale", s.output_scale, "output lengths times this (0: --token-scale)")
      ->check(Number(0, 1e3))
      ->capture_default_str();
  c->add_option("--time-scale", s.time_scale, "arrival times times this")
      ->check(Number(1e-6, 1e3))
      ->capture_default_str();
  c->add_option("--start-s", s.start_s, "replay from this trace time")
      ->check(Number(0, 1e9))
      ->capture_default_str();
  c->add_option("--max-requests", s.max_requests, "replay at most this many requests (0: all)")
      ->transform(Integer(0, 100000))
      ->capture_default_str();
  c->add_option("--seed", s.seed, "seed of the prompts' tokens")
      ->transform(Seed())
      ->capture_default_str();
  c->add_option("--model", a->model, "a preset (tiny-gqa, tiny-mha) or a Hugging Face directory")
      ->capture_default_str();
  c->add_option("--nodes", a->nodes, "attention nodes (a fixed pool)")
      ->transform(Integer(1, 16))
      ->capture_default_str();
  c->add_option("--transport", a->transport, "ucx (node processes) or fake (in this process)")
      ->check(CLI::IsMember({"ucx", "fake"}))
      ->capture_default_str();
  c->add_option("--capacity-tokens", a->bench.capacity_tokens, "KV tokens per attention node")
      ->transform(Integer(1, int64_t{1} << 30))
      ->capture_default_str();
  c->add_option("--max-active", a->bench.max_active, "requests decoding together")
      ->transform(Integer(1, 4096))
      ->capture_default_str();
  c->add_option("--prefill-tokens-per-step", a->bench.prefill_tokens_per_step,
                "prompt tokens prefilled between two decode steps")
      ->transform(Integer(1, int64_t{1} << 20))
      ->capture_default_str();
  paths->Input(c, "--profile", &a->profile_path,
               "predict with this engine profile (JSON from --fit-profile-out); default: fit one "
               "to this run (in-sample)");
  paths->Output(c, "--fit-profile-out", &a->fit_out, "write the profile fitted to this run");
  paths->Output(c, "--json", &a->json_path, "write the comparison as JSON");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunReplay(*a); }); });
}

}  // namespace tessera::cli
