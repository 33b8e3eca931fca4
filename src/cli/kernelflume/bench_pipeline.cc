// `tessera kernelflume bench pipeline`: inter-layer pipelining measured -- one decode step of a
// batch as one micro-batch and as two ping-ponged micro-batches, with the weight side alone
// (t_w), the attention side alone (t_a) and the bound (t_w + t_a) / max(t_w, t_a), on 1 weight
// process + 1 attention-node process (kernelflume/pipeline_bench.h does the work).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/table.h"
#include "kernelflume/pipeline_bench.h"
#include "kernels/gemm.h"

namespace tessera::cli {
namespace {

struct BenchPipelineArgs {
  std::string model = "tiny-gqa";
  uint64_t seed = 1;
  kernelflume::PipelineBenchOptions bench;
  bool in_process = false;
  bool no_pin = false;
  bool no_batch_messages = false;
  bool proxy_cpu = false;
  std::string json_path;
};

core::Json PipelineReportJson(const kernelflume::PipelineBenchReport& r) {
  return {{"model", r.model},
          {"batch", r.batch},
          {"context_tokens", r.context_tokens},
          {"steps", r.steps},
          {"micro_batches", {r.micro_batch_a, r.micro_batch_b}},
          {"micro_batch_tokens", {r.tokens_a, r.tokens_b}},
          {"placement", r.placement},
          {"batch_messages", r.batch_messages},
          {"validation_max_rel_err", r.validation_max_rel_err},
          {"t_w_ms", r.t_w_ms},
          {"t_w_split_ms", r.t_w_split_ms},
          {"t_a_ms", r.t_a_ms},
          {"t_a_weight_cpu_ms", r.t_a_weight_cpu_ms},
          {"bound", r.bound},
          {"split_bound", r.split_bound},
          {"one_mb_step_ms", r.one_mb_ms},
          {"two_mb_step_ms", r.two_mb_ms},
          {"speedup", r.speedup},
          {"fill_s", r.fill_s},
          {"samples_ms",
           {{"t_w", r.t_w_samples},
            {"t_w_split", r.t_w_split_samples},
            {"t_a", r.t_a_samples},
            {"one_mb", r.one_mb_samples},
            {"two_mb", r.two_mb_samples}}},
          {"statistic", "p50 over steps"},
          {"measured_on", "this machine, one BLAS thread per process"}};
}

core::Status RunBenchPipeline(const BenchPipelineArgs& a) {
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));
  ASSIGN_OR_RETURN(models::LlamaModel model, models::LlamaModel::Open(a.model, a.seed));
  kernelflume::PipelineBenchOptions o = a.bench;
  o.processes = o.transport == "ucx" && !a.in_process;
  o.node_command = {"/proc/self/exe", "kernelflume", "attn-node"};
  o.pin_cpus = !a.no_pin;
  o.batch_messages = !a.no_batch_messages;
  o.transport_threads_on_node_cpu = a.proxy_cpu;
  std::unique_ptr<core::ProgressBar> bar;
  auto report = kernelflume::RunPipelineBench(model, o, [&](const char* phase, double done) {
    if (std::string(phase) != "steps") return;
    if (!bar) bar = std::make_unique<core::ProgressBar>("pipeline steps", 1000);
    bar->Update(static_cast<long>(done * 1000));
  });
  if (bar) bar->Done();
  if (!report.ok()) {
    return NameFlags(report.status(), {{"batch", "--batch"},
                                       {"context_tokens", "--context"},
                                       {"steps", "--steps"},
                                       {"warmup_steps", "--warmup"}});
  }
  const kernelflume::PipelineBenchReport& r = *report;
  core::Table t({"figure", "value"});
  t.AddRow({"model", r.model});
  t.AddRow({"placement", r.placement});
  t.AddRow({"batch (micro-batches)",
            fmt::format("{} ({} + {} requests)", r.batch, r.micro_batch_a, r.micro_batch_b)});
  t.AddRow({"context per request (tokens)", fmt::format("{}", r.context_tokens)});
  t.AddRow({"messages", r.batch_messages ? "one per micro-batch, layer and node"
                                         : "one per request and layer"});
  t.AddRow({"validation: two vs one micro-batch logits",
            fmt::format("{:.2e} relative (bar 1e-05)", r.validation_max_rel_err)});
  t.AddRow({"t_w: weight side alone (ms)", fmt::format("{:.2f}", r.t_w_ms)});
  t.AddRow({"t_w as two halves (ms)", fmt::format("{:.2f}", r.t_w_split_ms)});
  t.AddRow({"t_a: attention side alone (ms)", fmt::format("{:.2f}", r.t_a_ms)});
  t.AddRow({"  of which weight-process CPU (ms)", fmt::format("{:.2f}", r.t_a_weight_cpu_ms)});
  t.AddRow({"bound (t_w + t_a) / max(t_w, t_a)", fmt::format("{:.2f}x", r.bound)});
  t.AddRow({"bound with the halves' t_w", fmt::format("{:.2f}x", r.split_bound)});
  t.AddRow({"one micro-batch step (ms)", fmt::format("{:.2f}", r.one_mb_ms)});
  t.AddRow({"two micro-batches step (ms)", fmt::format("{:.2f}", r.two_mb_ms)});
  t.AddRow({"speedup", fmt::format("{:.2f}x", r.speedup)});
  t.AddRow(
      {"speedup / bound", fmt::format("{:.0f}%", r.bound > 0 ? 100.0 * r.speedup / r.bound : 0.0)});
  std::printf("%s(measured on this machine, p50 of %ld steps each; one BLAS thread per process)\n",
              t.Render().c_str(), static_cast<long>(r.steps));
  if (!a.json_path.empty())
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, PipelineReportJson(r)));
  return core::Status::Ok();
}

}  // namespace

void AddKernelFlumeBenchPipeline(CLI::App* bench, Action* action) {
  auto a = std::make_shared<BenchPipelineArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = bench->add_subcommand(
      "pipeline", "Two ping-ponged micro-batches against one: t_w, t_a, the bound and the speedup");
  c->add_option("--model", a->model, "a preset (tiny-mha, tiny-gqa) or a model directory")
      ->capture_default_str();
  paths->RecordInput("--model", &a->model);
  c->add_option("--seed", a->seed, "weight seed of a preset")
      ->transform(Seed())
      ->capture_default_str();
  c->add_option("--batch", a->bench.batch, "requests decoded together (split in two)")
      ->transform(Integer(2, 4096))
      ->capture_default_str();
  c->add_option("--context", a->bench.context_tokens, "context tokens per request")
      ->transform(Integer(1, int64_t{1} << 24))
      ->capture_default_str();
  c->add_option("--steps", a->bench.steps, "timed steps of each kind (p50 reported)")
      ->transform(Integer(1, 100000))
      ->capture_default_str();
  c->add_option("--warmup", a->bench.warmup_steps, "untimed steps of each kind first")
      ->transform(Integer(0, 1000))
      ->capture_default_str();
  c->add_option("--transport", a->bench.transport, "ucx | fake (in process)")
      ->check(CLI::IsMember({"fake", "ucx"}))
      ->capture_default_str();
  c->add_flag("--in-process", a->in_process, "run the ucx attention node in this process");
  c->add_flag("--no-pin", a->no_pin, "leave the processes' CPUs to the scheduler");
  c->add_flag("--proxy-cpu", a->proxy_cpu,
              "put this process's transport threads on the node's CPU (1), only the compute "
              "thread on CPU 0 (a host-proxy placement; the default keeps every thread on 0)");
  c->add_flag("--no-batch-messages", a->no_batch_messages,
              "send each request's queries and appends on their own (not one message per "
              "micro-batch, layer and node)");
  paths->Output(c, "--json", &a->json_path, "write the figures and every sample as JSON here");
  c->callback(
      [action, a, paths] { *action = Checked(paths, [a] { return RunBenchPipeline(*a); }); });
}

}  // namespace tessera::cli
