// `tessera kernelflume bench tpot` and `bench scale`: a bursty trace served while the pool
// scales out and back in (kernelflume/scale_bench.h) -- tpot runs KernelFlume's attention pool
// and judges its per-window p99 TPOT; scale runs the same trace on KernelFlume and on the
// whole-instance baseline, side by side.
#include <fmt/format.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "core/json_util.h"
#include "core/table.h"
#include "kernelflume/scale_bench.h"
#include "kernels/gemm.h"

namespace tessera::cli {
namespace {

struct ScaleArgs {
  std::string model = "tiny-gqa";
  uint64_t seed = 1;
  kernelflume::ScaleBenchOptions bench;
  std::string json_path;
};

void AddScaleFlags(CLI::App* c, ScaleArgs& a, CommandPaths& paths) {
  kernelflume::BurstTraceOptions& t = a.bench.trace;
  c->add_option("--model", a.model, "a preset (tiny-gqa, tiny-mha) or a Hugging Face directory")
      ->capture_default_str();
  c->add_option("--seed", a.seed, "weight seed of a preset; also seeds the trace")
      ->transform(Seed())
      ->capture_default_str();
  c->add_option("--duration-s", t.duration_s, "arrivals happen in [0, this)")
      ->check(PositiveNumber(86400))
      ->capture_default_str();
  c->add_option("--base-rate", t.base_rate_per_s, "arrivals per second outside the burst")
      ->check(Number(0, 1000))
      ->capture_default_str();
  c->add_option("--burst-rate", t.burst_rate_per_s, "arrivals per second during the burst")
      ->check(Number(0, 1000))
      ->capture_default_str();
  c->add_option("--burst-start-s", t.burst_start_s, "the burst's start")
      ->check(Number(0, 86400))
      ->capture_default_str();
  c->add_option("--burst-end-s", t.burst_end_s, "the burst's end")
      ->check(Number(0, 86400))
      ->capture_default_str();
  c->add_option("--prompt-min", t.prompt_tokens_min, "shortest prompt (tokens)")
      ->transform(Integer(1, int64_t{1} << 20))
      ->capture_default_str();
  c->add_option("--prompt-max", t.prompt_tokens_max, "longest prompt (tokens)")
      ->transform(Integer(1, int64_t{1} << 20))
      ->capture_default_str();
  c->add_option("--output-min", t.output_tokens_min, "fewest tokens generated per request")
      ->transform(Integer(1, int64_t{1} << 20))
      ->capture_default_str();
  c->add_option("--output-max", t.output_tokens_max, "most tokens generated per request")
      ->transform(Integer(1, int64_t{1} << 20))
      ->capture_default_str();
  c->add_option("--capacity-tokens", a.bench.capacity_tokens,
                "KV tokens per attention node (and per whole instance)")
      ->transform(Integer(1, int64_t{1} << 30))
      ->capture_default_str();
  c->add_option("--page-tokens", a.bench.page_tokens, "tokens per KV page")
      ->transform(Integer(1, 1 << 20))
      ->capture_default_str();
  c->add_option("--min-nodes", a.bench.min_nodes, "the pool's floor (nodes or instances)")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  c->add_option("--max-nodes", a.bench.max_nodes, "the pool's ceiling (nodes or instances)")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  c->add_option("--keep-alive-s", a.bench.keep_alive_s, "low KV use this long before a scale-in")
      ->check(Number(0, 3600))
      ->capture_default_str();
  c->add_option("--window-s", a.bench.window_s, "TPOT window")
      ->check(PositiveNumber(3600))
      ->capture_default_str();
  c->add_option("--max-active", a.bench.max_active, "requests decoding together (the batch)")
      ->transform(Integer(1, 4096))
      ->capture_default_str();
  c->add_option("--prefill-tokens-per-step", a.bench.prefill_tokens_per_step,
                "prompt tokens prefilled between two decode steps (chunked prefill)")
      ->transform(Integer(1, 1 << 20))
      ->capture_default_str();
  c->add_option("--settle-s", a.bench.settle_s,
                "after the last request, wait this long at most for the pool to shrink back")
      ->check(Number(0, 3600))
      ->capture_default_str();
  c->add_flag("--check", a.bench.check,
              "compare every request's tokens with the monolithic model afterwards");
  paths.Output(c, "--json", &a.json_path, "write the results as JSON here");
}

std::string Ms(double v) { return fmt::format("{:.1f}", v); }

std::string Path(const std::vector<int>& units) {
  std::string s;
  for (int u : units) s += (s.empty() ? "" : " -> ") + std::to_string(u);
  return s;
}

void Print(const kernelflume::ScaleRunReport& r, const char* unit) {
  core::Table t({"window (s)", "TPOT samples", "p50 (ms)", "p99 (ms)", "max (ms)",
                 fmt::format("{} (most)", unit)});
  for (size_t i = 0; i < r.tpot.windows.size(); ++i) {
    const kernelflume::TpotWindow& w = r.tpot.windows[i];
    std::string p99 = Ms(w.p99_ms);
    if (static_cast<int>(i) == r.tpot.lowest) p99 += " (lowest)";
    if (static_cast<int>(i) == r.tpot.highest) p99 += " (highest)";
    if (!w.counted) p99 += " (too few)";
    t.AddRow({fmt::format("{:.0f}-{:.0f}", w.start_s, w.start_s + r.window_s),
              std::to_string(w.samples), Ms(w.p50_ms), p99, Ms(w.max_ms),
              std::to_string(r.window_units_max[i])});
  }
  std::printf("%s: per-window TPOT (each client's token gaps)\n%s", r.system.c_str(),
              t.Render().c_str());
  core::Table s({"what", "value"});
  s.AddRow({"p99 TPOT, highest window / lowest window", fmt::format("{:.2f}x", r.tpot.flatness)});
  s.AddRow({fmt::format("{} over the run", unit), Path(r.units_path)});
  std::string starts;
  for (double ms : r.unit_start_ms) starts += (starts.empty() ? "" : ", ") + Ms(ms);
  s.AddRow({fmt::format("scale-outs: decision -> {} ready (ms)", unit),
            starts.empty() ? "none" : starts});
  std::map<std::string, int> kinds;
  for (const auto& e : r.events) ++kinds[e.kind];
  std::string ev;
  for (const auto& [k, n] : kinds) ev += fmt::format("{}{} {}", ev.empty() ? "" : ", ", n, k);
  if (!r.events.empty()) s.AddRow({"pool events", ev});
  s.AddRow({"TTFT p50 / p99 (ms)", Ms(r.ttft_ms_p50) + " / " + Ms(r.ttft_ms_p99)});
  s.AddRow({"requests completed / failed", fmt::format("{} / {}", r.completed, r.failed)});
  s.AddRow({"tokens", std::to_string(r.tokens)});
  if (!r.first_error.empty()) s.AddRow({"first error", r.first_error});
  s.AddRow({"wall (s)", fmt::format("{:.1f}", r.wall_s)});
  std::printf("%s", s.Render().c_str());
}

nlohmann::json ToJson(const kernelflume::ScaleRunReport& r) {
  nlohmann::json windows = nlohmann::json::array();
  for (size_t i = 0; i < r.tpot.windows.size(); ++i) {
    const kernelflume::TpotWindow& w = r.tpot.windows[i];
    windows.push_back({{"start_s", w.start_s},
                       {"samples", w.samples},
                       {"p50_ms", w.p50_ms},
                       {"p99_ms", w.p99_ms},
                       {"max_ms", w.max_ms},
                       {"counted", w.counted},
                       {"units_max", r.window_units_max[i]}});
  }
  nlohmann::json pool = nlohmann::json::array();
  for (const auto& p : r.pool) {
    pool.push_back(
        {{"t_s", p.t_s}, {"units", p.units}, {"kv_use", p.kv_use}, {"queued", p.queued}});
  }
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : r.events) {
    events.push_back({{"t_s", e.t_s}, {"kind", e.kind}, {"node", e.node_id}, {"detail", e.detail}});
  }
  return {{"system", r.system},
          {"events", events},
          {"windows", windows},
          {"p99_highest_over_lowest", r.tpot.flatness},
          {"units_path", r.units_path},
          {"unit_start_ms", r.unit_start_ms},
          {"ttft_ms_p50", r.ttft_ms_p50},
          {"ttft_ms_p99", r.ttft_ms_p99},
          {"requests", r.requests},
          {"completed", r.completed},
          {"failed", r.failed},
          {"tokens", r.tokens},
          {"mismatched_requests", r.mismatched},
          {"first_error", r.first_error},
          {"wall_s", r.wall_s},
          {"pool", pool}};
}

core::Status RunScale(ScaleArgs& a, bool both) {
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));
  ASSIGN_OR_RETURN(models::LlamaModel model, models::LlamaModel::Open(a.model, a.seed));
  a.bench.trace.seed = a.seed;
  a.bench.node_command = {"/proc/self/exe", "kernelflume", "attn-node"};
  // The instances load the same weights from disk: a preset is saved to a scratch folder.
  std::string scratch;
  a.bench.weights_dir = a.model;
  if (both && !std::filesystem::is_directory(a.model)) {
    char tmpl[] = "/tmp/tessera-kf-weights-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return core::Internal("cannot create a scratch folder in /tmp");
    scratch = a.bench.weights_dir = tmpl;
    RETURN_IF_ERROR(model.Save(scratch, models::TensorDtype::kF32));
  }
  std::vector<kernelflume::ScaleSystem> systems{kernelflume::ScaleSystem::kKernelFlume};
  if (both) systems.push_back(kernelflume::ScaleSystem::kInstances);
  nlohmann::json runs = nlohmann::json::array();
  core::Status verdict = core::Status::Ok();
  for (kernelflume::ScaleSystem sys : systems) {
    std::fprintf(stderr, "serving the trace on %s ...\n", kernelflume::ScaleSystemName(sys));
    auto rep = kernelflume::RunScaleBench(model, a.bench, sys);
    if (!rep.ok()) {
      if (!scratch.empty()) std::filesystem::remove_all(scratch);
      return rep.status();
    }
    Print(*rep, sys == kernelflume::ScaleSystem::kKernelFlume ? "attention nodes" : "instances");
    if (a.bench.check) {
      std::printf("check: %lld of %lld requests differ from the monolithic model\n",
                  static_cast<long long>(rep->mismatched), static_cast<long long>(rep->requests));
    }
    if (verdict.ok()) verdict = kernelflume::ScaleVerdict(*rep);
    runs.push_back(ToJson(*rep));
  }
  if (!scratch.empty()) std::filesystem::remove_all(scratch);
  std::printf(
      "(measured on this machine: one weight process and attention-node processes over "
      "UCX on loopback; instances in this process)\n");
  if (!a.json_path.empty()) {
    nlohmann::json j{
        {"model", model.config().name},
        {"measured_on", "this machine"},
        {"trace",
         {{"duration_s", a.bench.trace.duration_s},
          {"base_rate_per_s", a.bench.trace.base_rate_per_s},
          {"burst_rate_per_s", a.bench.trace.burst_rate_per_s},
          {"burst_start_s", a.bench.trace.burst_start_s},
          {"burst_end_s", a.bench.trace.burst_end_s},
          {"prompt_tokens", {a.bench.trace.prompt_tokens_min, a.bench.trace.prompt_tokens_max}},
          {"output_tokens", {a.bench.trace.output_tokens_min, a.bench.trace.output_tokens_max}},
          {"seed", a.bench.trace.seed}}},
        {"capacity_tokens", a.bench.capacity_tokens},
        {"window_s", a.bench.window_s},
        {"runs", runs}};
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, j));
  }
  return verdict;
}

void AddOne(CLI::App* bench, Action* action, const char* name, const char* help, bool both) {
  auto args = std::make_shared<ScaleArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = bench->add_subcommand(name, help);
  AddScaleFlags(c, *args, *paths);
  c->callback([action, args, paths, both] {
    *action = Checked(paths, [args, both] { return RunScale(*args, both); });
  });
}

}  // namespace

void AddKernelFlumeBenchScale(CLI::App* bench, Action* action) {
  AddOne(bench, action, "tpot",
         "Serve a bursty trace while the attention pool scales out and back in: per-window p99 "
         "TPOT",
         false);
  AddOne(bench, action, "scale",
         "The same trace on KernelFlume and on whole model instances scaled the same way, side "
         "by side",
         true);
}

}  // namespace tessera::cli
