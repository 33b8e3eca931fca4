// `tessera kernelflume bench join` and `bench death`: KernelFlume's elasticity benchmarks
// (kernelflume/elastic_bench.h) on attention-node processes over UCX, every request checked
// against the monolithic model (bench death: with its control run and placebo noise band); and the
// hidden `load-model DIR` that the join benchmark starts as "a full model instance" (a process that
// loads the weights and exits).
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "core/json_util.h"
#include "core/stats.h"
#include "core/table.h"
#include "kernelflume/elastic_bench.h"
#include "kernelflume/generate_service.h"
#include "kernels/gemm.h"

namespace tessera::cli {
namespace {

struct ElasticBenchArgs {
  std::string model = "tiny-gqa";
  uint64_t seed = 1;
  kernelflume::ElasticBenchOptions bench;
  std::string json_path;
};

void AddCommonFlags(CLI::App* c, ElasticBenchArgs& a, CommandPaths& paths) {
  c->add_option("--model", a.model, "a preset (tiny-gqa, tiny-mha) or a Hugging Face directory")
      ->capture_default_str();
  c->add_option("--seed", a.seed, "weight seed of a preset; also seeds the prompts")
      ->transform(Seed())
      ->capture_default_str();
  c->add_option("--requests", a.bench.requests, "requests decoding at once")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  c->add_option("--prompt-tokens", a.bench.prompt_tokens, "tokens in each (random) prompt")
      ->transform(Integer(1, int64_t{1} << 20))
      ->capture_default_str();
  c->add_option("--max-tokens", a.bench.max_tokens, "tokens each request generates")
      ->transform(Integer(1, int64_t{1} << 20))
      ->capture_default_str();
  c->add_option("--nodes", a.bench.initial_nodes, "attention nodes at the start")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  c->add_option("--events", a.bench.events, "joins (bench join) or kills (bench death)")
      ->transform(Integer(1, 63))
      ->capture_default_str();
  c->add_option("--every-tokens", a.bench.every_tokens,
                "tokens generated (all requests) between two events")
      ->transform(Integer(1, int64_t{1} << 30))
      ->capture_default_str();
  c->add_option("--reroute-every", a.bench.reroute_every,
                "move each request's tail to another node every k tokens (0: only when needed)")
      ->transform(Integer(0, int64_t{1} << 30))
      ->capture_default_str();
  c->add_option("--partial-deadline-s", a.bench.min_partial_deadline_s,
                "floor of the deadline after which a node whose partial is late is fenced "
                "(the deadline is max(this, 20 x p99 of recent waits))")
      ->check(PositiveNumber(3600))
      ->capture_default_str();
  paths.Output(c, "--json", &a.json_path, "write the results as JSON here");
}

core::StatusOr<models::LlamaModel> OpenBenchModel(ElasticBenchArgs& a) {
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));
  a.bench.seed = a.seed;
  a.bench.node_command = {"/proc/self/exe", "kernelflume", "attn-node"};
  return models::LlamaModel::Open(a.model, a.seed);
}

std::string Ms(double v) { return fmt::format("{:.2f}", v); }

// The check rows every elasticity benchmark prints, and the JSON fields they come from.
void AddCheckRows(core::Table& t, const kernelflume::BenchCheck& c) {
  t.AddRow({"check: max logits rel. error", fmt::format("{:.2e}", c.max_rel_err)});
  t.AddRow({"check: requests with a greedy mismatch", std::to_string(c.mismatched_requests)});
}
void AddCheckJson(nlohmann::json& j, const kernelflume::BenchCheck& c) {
  j["max_rel_err"] = c.max_rel_err;
  j["mismatched_requests"] = c.mismatched_requests;
  j["generated_tokens"] = c.generated_tokens;
  j["measured_on"] = "this machine";
}

core::Status RunJoin(ElasticBenchArgs& a) {
  ASSIGN_OR_RETURN(models::LlamaModel model, OpenBenchModel(a));
  // The full instance loads the same weights from disk: a preset is saved to a scratch folder.
  std::string dir = a.model;
  std::string scratch;
  if (!std::filesystem::is_directory(a.model)) {
    char tmpl[] = "/tmp/tessera-kf-weights-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return core::Internal("cannot create a scratch folder in /tmp");
    scratch = dir = tmpl;
    RETURN_IF_ERROR(model.Save(dir, models::TensorDtype::kF32));
  }
  a.bench.instance_command = {"/proc/self/exe", "kernelflume", "load-model"};
  a.bench.weights_dir = dir;
  auto report = kernelflume::RunJoinBench(model, a.bench);
  if (!scratch.empty()) std::filesystem::remove_all(scratch);
  if (!report.ok()) return report.status();
  const kernelflume::JoinBenchReport& r = *report;
  core::Table t({"join", "node", "start -> joined (ms)", "joined -> first token (ms)",
                 "start -> first token (ms)"});
  std::vector<double> joined, first, total;
  for (size_t i = 0; i < r.joins.size(); ++i) {
    const kernelflume::JoinSample& s = r.joins[i];
    t.AddRow({std::to_string(i + 1), std::to_string(s.node), Ms(s.start_to_joined_ms),
              s.joined_to_first_token_ms < 0 ? "never" : Ms(s.joined_to_first_token_ms),
              s.start_to_first_token_ms < 0 ? "never" : Ms(s.start_to_first_token_ms)});
    joined.push_back(s.start_to_joined_ms);
    if (s.joined_to_first_token_ms >= 0) first.push_back(s.joined_to_first_token_ms);
    if (s.start_to_first_token_ms >= 0) total.push_back(s.start_to_first_token_ms);
  }
  t.AddRow({"p50", "", Ms(core::Median(joined)), Ms(core::Median(first)), Ms(core::Median(total))});
  std::printf("%s", t.Render().c_str());
  core::Table s({"what", "value"});
  s.AddRow({"model", model.config().name});
  s.AddRow({"decode step p50 / p99 (ms, per request)",
            Ms(r.decode_step_ms_p50) + " / " + Ms(r.decode_step_ms_p99)});
  s.AddRow({"joined -> first token, worst (ms)",
            Ms(first.empty() ? 0 : *std::max_element(first.begin(), first.end()))});
  s.AddRow({"bar: joined -> first token <= 1 step + 1 ms", Ms(r.decode_step_ms_p50 + 1.0) + " ms"});
  s.AddRow({"full model instance start p50 (ms; process + weight load)",
            fmt::format("{} (of {})", Ms(r.instance_start_ms_p50), r.instance_start_ms.size())});
  AddCheckRows(s, r.check);
  std::printf("%s(measured on this machine; processes over UCX on loopback)\n", s.Render().c_str());
  if (!a.json_path.empty()) {
    nlohmann::json joins = nlohmann::json::array();
    for (const auto& j : r.joins) {
      joins.push_back({{"node", j.node},
                       {"start_to_joined_ms", j.start_to_joined_ms},
                       {"joined_to_first_token_ms", j.joined_to_first_token_ms},
                       {"start_to_first_token_ms", j.start_to_first_token_ms}});
    }
    nlohmann::json j{{"model", model.config().name},
                     {"joins", joins},
                     {"decode_step_ms_p50", r.decode_step_ms_p50},
                     {"decode_step_ms_p99", r.decode_step_ms_p99},
                     {"instance_start_ms", r.instance_start_ms}};
    AddCheckJson(j, r.check);
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, j));
  }
  return r.check.verdict;
}

size_t UnaffectedSamples(const kernelflume::DeathBenchReport& r) {
  size_t n = 0;
  for (const kernelflume::DeathSample& k : r.kills) n += k.spanning_gap_ms.size();
  return n;
}

core::Status RunDeath(ElasticBenchArgs& a) {
  ASSIGN_OR_RETURN(models::LlamaModel model, OpenBenchModel(a));
  ASSIGN_OR_RETURN(kernelflume::DeathBenchReport r, kernelflume::RunDeathBench(model, a.bench));
  core::Table t({"kill", "node", "detected (ms)", "affected / unaffected / overlapped",
                 "stall p50 / max (ms)", "unaffected gap p50 (ms)"});
  for (size_t i = 0; i < r.kills.size(); ++i) {
    const kernelflume::DeathSample& k = r.kills[i];
    const double mx =
        k.stall_ms.empty() ? 0 : *std::max_element(k.stall_ms.begin(), k.stall_ms.end());
    t.AddRow({std::to_string(i + 1), std::to_string(k.node),
              k.detect_ms < 0 ? "never" : Ms(k.detect_ms),
              fmt::format("{} / {} / {}", k.affected, k.unaffected, k.overlapped),
              k.stall_ms.empty() ? "-" : Ms(core::Median(k.stall_ms)) + " / " + Ms(mx),
              k.spanning_gap_ms.empty() ? "-" : Ms(core::Median(k.spanning_gap_ms))});
  }
  std::printf("%s", t.Render().c_str());
  core::Table s({"what", "value"});
  s.AddRow({"model", model.config().name});
  s.AddRow({"SIGKILL -> node marked lost p50 / max (ms)",
            Ms(r.detect_ms_p50) + " / " + Ms(r.detect_ms_max)});
  s.AddRow({"affected requests: SIGKILL -> next token p50 / max (ms)",
            Ms(r.stall_ms_p50) + " / " + Ms(r.stall_ms_max)});
  s.AddRow({"unaffected requests: token gap spanning a kill, p50 (ms)",
            fmt::format("{} (of {})", Ms(r.unaffected_gap_ms_p50), UnaffectedSamples(r))});
  s.AddRow({"all requests: token gap over the run, p50 (ms)", Ms(r.token_gap_ms_p50)});
  if (r.placebo_instants > 0) {
    s.AddRow({"control run (no kill, no join): token gap spanning a placebo instant, p50 (ms)",
              fmt::format("{} (of {}, at {} instants)", Ms(r.placebo_gap_ms_p50),
                          r.placebo_gap_ms.size(), r.placebo_instants)});
    s.AddRow({fmt::format("noise band: p5 .. p95 of the median of {} placebo gaps (ms)",
                          r.placebo_band_ms.n),
              Ms(r.placebo_band_ms.p5) + " .. " + Ms(r.placebo_band_ms.p95)});
    s.AddRow(
        {"unaffected minus placebo p50 (ms)",
         fmt::format(
             "{:+.2f} ({:+.1f}%): {}", r.unaffected_excess_ms,
             r.placebo_gap_ms_p50 > 0 ? 100 * r.unaffected_excess_ms / r.placebo_gap_ms_p50 : 0.0,
             r.unaffected_within_noise ? "within the noise band" : "above the noise band")});
    s.AddRow({"control run: token gap over the run, p50 (ms)", Ms(r.control_token_gap_ms_p50)});
  }
  s.AddRow({"ranges re-prefilled", std::to_string(r.refills)});
  s.AddRow({"re-prefill priority (nice levels below the requests)",
            std::to_string(a.bench.refill_nice)});
  AddCheckRows(s, r.check);
  if (r.placebo_instants > 0) {
    s.AddRow({"control check: max logits rel. error / mismatched requests",
              fmt::format("{:.2e} / {}", r.control_check.max_rel_err,
                          r.control_check.mismatched_requests)});
  }
  std::printf("%s(measured on this machine; processes over UCX on loopback)\n", s.Render().c_str());
  if (!a.json_path.empty()) {
    nlohmann::json kills = nlohmann::json::array();
    for (const auto& k : r.kills) {
      kills.push_back({{"node", k.node},
                       {"detect_ms", k.detect_ms},
                       {"affected", k.affected},
                       {"unaffected", k.unaffected},
                       {"overlapped", k.overlapped},
                       {"stall_ms", k.stall_ms},
                       {"unaffected_spanning_gap_ms", k.spanning_gap_ms}});
    }
    nlohmann::json j{{"model", model.config().name},
                     {"kills", kills},
                     {"stall_ms_p50", r.stall_ms_p50},
                     {"stall_ms_max", r.stall_ms_max},
                     {"detect_ms_p50", r.detect_ms_p50},
                     {"detect_ms_max", r.detect_ms_max},
                     {"unaffected_gap_ms_p50", r.unaffected_gap_ms_p50},
                     {"token_gap_ms_p50", r.token_gap_ms_p50},
                     {"refills", r.refills},
                     {"refill_nice", a.bench.refill_nice},
                     {"placebo_instants", r.placebo_instants},
                     {"placebo_gap_ms", r.placebo_gap_ms},
                     {"placebo_gap_ms_p50", r.placebo_gap_ms_p50},
                     {"placebo_band_ms",
                      {{"n", r.placebo_band_ms.n},
                       {"draws", r.placebo_band_ms.draws},
                       {"p5", r.placebo_band_ms.p5},
                       {"p50", r.placebo_band_ms.p50},
                       {"p95", r.placebo_band_ms.p95}}},
                     {"unaffected_excess_ms", r.unaffected_excess_ms},
                     {"unaffected_within_noise", r.unaffected_within_noise},
                     {"control_token_gap_ms_p50", r.control_token_gap_ms_p50},
                     {"control_max_rel_err", r.control_check.max_rel_err},
                     {"control_mismatched_requests", r.control_check.mismatched_requests}};
    AddCheckJson(j, r.check);
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, j));
  }
  if (!r.check.verdict.ok()) return r.check.verdict;
  return r.control_check.verdict;
}

}  // namespace

void AddKernelFlumeBenchElastic(CLI::App* bench, Action* action) {
  auto join = std::make_shared<ElasticBenchArgs>();
  auto join_paths = std::make_shared<CommandPaths>();
  join->bench.initial_nodes = 1;
  CLI::App* j = bench->add_subcommand(
      "join",
      "Attention nodes join a live decode: process start -> first token routed to it, "
      "against starting a full model instance");
  AddCommonFlags(j, *join, *join_paths);
  j->callback([action, join, join_paths] {
    *action = Checked(join_paths, [join] { return RunJoin(*join); });
  });

  auto death = std::make_shared<ElasticBenchArgs>();
  auto death_paths = std::make_shared<CommandPaths>();
  death->bench.initial_nodes = 3;
  death->bench.events = 20;
  death->bench.every_tokens = 30;
  CLI::App* d = bench->add_subcommand(
      "death",
      "SIGKILL attention nodes under a live decode: the affected requests' stall and "
      "the others' token gaps");
  AddCommonFlags(d, *death, *death_paths);
  d->add_option("--refill-nice", death->bench.refill_nice,
                "re-prefill a lost node's ranges this many nice levels below the request threads "
                "(0: on the request's thread)")
      ->transform(Integer(0, 19))
      ->capture_default_str();
  d->add_option("--placebo-instants", death->bench.placebo_instants,
                "placebo instants of the control run (no kill, no join) that the unaffected "
                "requests' gap spanning a kill is compared with (0: no control run)")
      ->transform(Integer(0, 100000))
      ->capture_default_str();
  d->add_option("--join-delay-s", death->bench.join_delay_s,
                "start each replacement node this long after its kill (a diagnostic: the "
                "others' gap without a join right at the kill)")
      ->transform(Number(0, 60))
      ->capture_default_str();
  d->callback([action, death, death_paths] {
    *action = Checked(death_paths, [death] { return RunDeath(*death); });
  });
}

void AddKernelFlumeLoadModel(CLI::App* kernelflume, Action* action) {
  auto dir = std::make_shared<std::string>();
  CLI::App* c = kernelflume->add_subcommand(
      "load-model", "Load a model's weights and exit (a full instance's start, for bench join)");
  c->group("");  // hidden: benchmarks start it
  c->add_option("dir", *dir, "a Hugging Face style directory")->required();
  c->callback([action, dir] {
    *action = [dir]() -> core::Status { return models::LlamaModel::Load(*dir).status(); };
  });
}

}  // namespace tessera::cli
