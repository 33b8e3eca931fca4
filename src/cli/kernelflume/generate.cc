// `tessera kernelflume generate`: decodes prompts with a Llama model whose core attention runs
// on attention nodes that this command starts on this machine (processes over UCX by default),
// optionally checking every step against the same model run in one process (--check).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "core/input_file.h"
#include "core/json_util.h"
#include "core/progress.h"
#include "core/stats.h"
#include "core/table.h"
#include "kernelflume/generate_service.h"
#include "kernels/gemm.h"
#include "models/byte_tokenizer.h"

namespace tessera::cli {
namespace {

struct GenerateArgs {
  std::string model;
  uint64_t seed = 1;
  std::string prompt;
  std::string prompt_ids_path;
  std::string prompts_path;
  int64_t max_tokens = 64;
  int attn_nodes = 3;
  int64_t range_tokens = 16384;
  int64_t reroute_every = 0;
  int64_t capacity_tokens = 65536;
  int64_t page_tokens = 0;  // 0: min(256, reroute_every) or 256
  std::string transport = "ucx";
  bool in_process = false;
  double temperature = 0;
  uint64_t sample_seed = 0;
  bool ignore_eos = false;
  bool check = false;
  bool quiet = false;
  std::string json_path;
  std::string trace_path;
};

core::StatusOr<std::vector<std::vector<int32_t>>> Prompts(const GenerateArgs& a,
                                                          const models::LlamaConfig& c) {
  const int given = !a.prompt.empty() + !a.prompt_ids_path.empty() + !a.prompts_path.empty();
  if (given != 1) {
    return core::InvalidArgument(
        "give exactly one of --prompt TEXT, --prompt-ids FILE or --prompts FILE");
  }
  const bool bytes = c.vocab == models::ByteTokenizer::kVocab;
  if (!a.prompt_ids_path.empty()) {
    ASSIGN_OR_RETURN(std::string text, core::ReadInputFile(a.prompt_ids_path));
    ASSIGN_OR_RETURN(std::vector<int32_t> ids, models::ParseTokenIds(text, c.vocab));
    return std::vector<std::vector<int32_t>>{ids};
  }
  if (!bytes) {
    return core::InvalidArgument(fmt::format(
        "--prompt/--prompts: text prompts need the byte tokenizer (vocab {}); model {} has vocab "
        "{}: give token ids with --prompt-ids FILE",
        models::ByteTokenizer::kVocab, c.name, c.vocab));
  }
  if (!a.prompt.empty()) {
    return std::vector<std::vector<int32_t>>{models::ByteTokenizer::Encode(a.prompt)};
  }
  ASSIGN_OR_RETURN(std::string text, core::ReadInputFile(a.prompts_path));
  return kernelflume::EncodePromptLines(text, "--prompts " + a.prompts_path);
}

std::string Shown(const models::LlamaConfig& c, const std::vector<int32_t>& ids) {
  if (c.vocab == models::ByteTokenizer::kVocab) {
    return core::Utf8Escaped(models::ByteTokenizer::Decode(ids));
  }
  std::string s;
  for (int32_t t : ids) s += (s.empty() ? "" : " ") + std::to_string(t);
  return s;
}

core::Json ToJson(const kernelflume::GenerateReport& r, const models::LlamaConfig& c,
                  const GenerateArgs& a) {
  core::Json prompts = core::Json::array();
  for (const auto& p : r.prompts) {
    prompts.push_back({{"prompt_tokens", p.prompt.size()},
                       {"tokens", p.tokens},
                       {"text", Shown(c, p.tokens)},
                       {"prefill_ms", p.prefill_ms},
                       {"step_ms_p50", core::Percentile(p.step_ms, 50)},
                       {"max_rel_err", p.max_rel_err},
                       {"first_mismatch", p.first_mismatch}});
  }
  return {{"model", c.name},
          {"attn_nodes", r.num_nodes},
          {"transport", a.transport},
          {"processes", a.transport == "ucx" && !a.in_process},
          {"check", a.check},
          {"max_rel_err", r.max_rel_err},
          {"mismatched_prompts", r.mismatched_prompts},
          {"generated_tokens", r.generated_tokens},
          {"routing_version", r.routing_version},
          {"reroutes", r.reroutes},
          {"nodes_lost", r.nodes_lost},
          {"ranges_refilled", r.ranges_refilled},
          {"wall_s", r.wall_s},
          {"measured_on", "this machine"},
          {"prompts", prompts}};
}

core::Status RunGenerateCommand(const GenerateArgs& a) {
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));
  ASSIGN_OR_RETURN(models::LlamaModel model, models::LlamaModel::Open(a.model, a.seed));
  const models::LlamaConfig& c = model.config();
  ASSIGN_OR_RETURN(auto prompts, Prompts(a, c));
  kernelflume::AttentionClusterOptions o;
  o.num_nodes = a.attn_nodes;
  o.transport = a.transport;
  o.processes = a.transport == "ucx" && !a.in_process;
  o.node_command = {"/proc/self/exe", "kernelflume", "attn-node"};
  o.capacity_tokens = a.capacity_tokens;
  o.page_tokens = static_cast<int32_t>(
      a.page_tokens > 0 ? a.page_tokens
                        : (a.reroute_every > 0 ? std::min<int64_t>(256, a.reroute_every) : 256));
  o.weight_node.router.range_tokens_max = a.range_tokens;
  o.weight_node.router.reroute_every = a.reroute_every;
  auto cluster = kernelflume::AttentionCluster::Start(kernelflume::AttentionShapeOf(c),
                                                      model.Fingerprint(), o);
  if (!cluster.ok()) {
    return NameFlags(cluster.status(), {{"attn_nodes", "--attn-nodes"},
                                        {"capacity_tokens", "--capacity-tokens"},
                                        {"range_tokens", "--range-tokens"},
                                        {"transport", "--transport"}});
  }
  kernelflume::GenerateOptions g;
  g.max_tokens = a.max_tokens;
  g.sampling.temperature = a.temperature;
  g.sampling.seed = a.sample_seed;
  g.sampling.stop_at_eos = !a.ignore_eos;
  g.check = a.check;
  core::TraceWriter trace;
  trace.NameTrack(0, "weight node");
  std::unique_ptr<core::ProgressBar> bar;
  if (prompts.size() > 1) bar = std::make_unique<core::ProgressBar>("generate", prompts.size());
  auto report = kernelflume::RunGenerate(model, **cluster, prompts, g,
                                         a.trace_path.empty() ? nullptr : &trace,
                                         [&](size_t i, const kernelflume::PromptResult&) {
                                           if (bar) bar->Update(static_cast<long>(i + 1));
                                         });
  if (bar) bar->Done();
  if (!report.ok()) return NameFlags(report.status(), {{"max_tokens", "--max-tokens"}});
  const kernelflume::GenerateReport& r = *report;
  if (!a.quiet) {
    for (const auto& p : r.prompts) {
      std::vector<int32_t> all = p.prompt;
      all.insert(all.end(), p.tokens.begin(), p.tokens.end());
      std::printf("%s\n", Shown(c, all).c_str());
      if (r.prompts.size() > 1) std::printf("---\n");
    }
  }
  std::vector<double> steps, mono;
  for (const auto& p : r.prompts) {
    steps.insert(steps.end(), p.step_ms.begin(), p.step_ms.end());
    mono.insert(mono.end(), p.mono_step_ms.begin(), p.mono_step_ms.end());
  }
  core::Table t({"what", "value"});
  t.AddRow({"model", c.name + " (fingerprint " + model.Fingerprint() + ")"});
  t.AddRow({"attention nodes", fmt::format("{} ({}{})", r.num_nodes, a.transport,
                                           o.processes ? ", separate processes" : ", in process")});
  t.AddRow(
      {"prompts / generated tokens", fmt::format("{} / {}", r.prompts.size(), r.generated_tokens)});
  t.AddRow(
      {"decode step p50 / p99 (ms)",
       fmt::format("{:.2f} / {:.2f}", core::Percentile(steps, 50), core::Percentile(steps, 99))});
  t.AddRow({"routing version / re-routes", fmt::format("{} / {}", r.routing_version, r.reroutes)});
  t.AddRow({"nodes lost / ranges re-prefilled",
            fmt::format("{} / {}", r.nodes_lost, r.ranges_refilled)});
  if (a.check) {
    t.AddRow({"monolithic step p50 (ms)", fmt::format("{:.2f}", core::Percentile(mono, 50))});
    t.AddRow({"check: max logits rel. error",
              fmt::format("{:.2e} (bar {:.0e})", r.max_rel_err, kernelflume::kCheckRelErrBar)});
    if (a.temperature == 0) {
      t.AddRow({"check: greedy tokens equal",
                fmt::format("{} of {} prompts", r.prompts.size() - r.mismatched_prompts,
                            r.prompts.size())});
    }
  }
  std::printf("%s(measured on this machine, one BLAS thread per process)\n", t.Render().c_str());
  if (!a.json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, ToJson(r, c, a)));
  if (!a.trace_path.empty()) RETURN_IF_ERROR(trace.Write(a.trace_path));
  return kernelflume::CheckVerdict(r, g);
}

}  // namespace

void AddKernelFlumeGenerate(CLI::App* kernelflume, Action* action) {
  auto a = std::make_shared<GenerateArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = kernelflume->add_subcommand(
      "generate", "Generate text with core attention on attention nodes started here");
  c->add_option("--model", a->model,
                "a preset (tiny-mha, tiny-gqa: seeded weights) or a Hugging Face style directory "
                "(config.json + *.safetensors)")
      ->required();
  paths->RecordInput("--model", &a->model);
  c->add_option("--seed", a->seed, "weight seed of a preset")
      ->transform(Seed())
      ->capture_default_str();
  c->add_option("--prompt", a->prompt, "a text prompt (byte-tokenizer models)");
  paths->Input(c, "--prompt-ids", &a->prompt_ids_path, "a file of token ids (any model)");
  paths->Input(c, "--prompts", &a->prompts_path, "a file of text prompts, one per line");
  c->add_option("--max-tokens", a->max_tokens, "tokens to generate per prompt")
      ->transform(Integer(1, int64_t{1} << 30))
      ->capture_default_str();
  c->add_option("--attn-nodes", a->attn_nodes, "attention nodes to start")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  c->add_option("--range-tokens", a->range_tokens, "most tokens in one KV range")
      ->transform(Integer(512, int64_t{1} << 30))
      ->capture_default_str();
  c->add_option("--reroute-every", a->reroute_every,
                "move each request's tail to another node every k tokens (0: only when needed)")
      ->transform(Integer(0, int64_t{1} << 30))
      ->capture_default_str();
  c->add_option("--capacity-tokens", a->capacity_tokens, "KV tokens per attention node")
      ->transform(Integer(1, int64_t{1} << 34))
      ->capture_default_str();
  c->add_option("--page-tokens", a->page_tokens,
                "tokens per KV page (0: 256, or the re-route period if smaller)")
      ->transform(Integer(0, 1 << 16))
      ->capture_default_str();
  c->add_option("--transport", a->transport, "fake (in process) | ucx")
      ->check(CLI::IsMember({"fake", "ucx"}))
      ->capture_default_str();
  c->add_flag("--in-process", a->in_process, "run ucx attention nodes in this process");
  c->add_option("--temperature", a->temperature, "sampling temperature (0: greedy)")
      ->check(Number(0, 100))
      ->capture_default_str();
  c->add_option("--sample-seed", a->sample_seed, "sampling seed")->transform(Seed());
  c->add_flag("--ignore-eos", a->ignore_eos, "keep generating after the end-of-text token");
  c->add_flag("--check", a->check,
              "compare every step with the model run in one process (teacher-forced logits; "
              "greedy tokens)");
  c->add_flag("--quiet", a->quiet, "print only the summary table");
  paths->Output(c, "--json", &a->json_path, "write the results as JSON here");
  paths->Output(c, "--trace", &a->trace_path, "write a Chrome/Perfetto trace of the steps here");
  c->callback(
      [action, a, paths] { *action = Checked(paths, [a] { return RunGenerateCommand(*a); }); });
}

}  // namespace tessera::cli
