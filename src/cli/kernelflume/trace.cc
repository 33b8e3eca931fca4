// `tessera kernelflume trace gen` and `trace stats`: request traces in the Mooncake format
// (workload/request_trace.h). gen writes a seeded agentic trace (workload/agentic_trace.h) and
// prints its step medians against TraceLab's; stats reads a trace (.jsonl or .jsonl.gz) and
// prints what it asks of a server (workload/trace_stats.h).
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "core/json_util.h"
#include "core/table.h"
#include "workload/agentic_trace.h"
#include "workload/request_trace.h"
#include "workload/trace_stats.h"

namespace tessera::cli {
namespace {

std::string Tokens(double v) { return fmt::format("{:.0f}", v); }

std::string Lengths(const workload::LengthPercentiles& p) {
  return fmt::format("{} / {} / {} / {}", Tokens(p.p50), Tokens(p.p90), Tokens(p.p99), p.max);
}

void PrintStats(const workload::TraceStats& s) {
  core::Table t({"what", "value"});
  t.AddRow({"requests", std::to_string(s.requests)});
  t.AddRow({"span (s)", fmt::format("{:.1f}", s.duration_s)});
  t.AddRow({"arrival rate (requests/s)", fmt::format("{:.3f}", s.arrival_rate_per_s)});
  t.AddRow({"input tokens p50 / p90 / p99 / max", Lengths(s.input_length)});
  t.AddRow({"output tokens p50 / p90 / p99 / max", Lengths(s.output_length)});
  t.AddRow(
      {"input / output tokens in all", fmt::format("{} / {}", s.input_tokens, s.output_tokens)});
  t.AddRow({"prefix reuse (blocks seen before)",
            fmt::format("{:.1f}% ({} of {} blocks of {} tokens)", 100 * s.prefix_reuse,
                        s.reused_blocks, s.hash_blocks, workload::kTraceBlockTokens)});
  std::printf("%s", t.Render().c_str());
}

core::Json LengthsJson(const workload::LengthPercentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"max", p.max}};
}

core::Json StatsJson(const workload::TraceStats& s) {
  return {{"requests", s.requests},
          {"duration_s", s.duration_s},
          {"arrival_rate_per_s", s.arrival_rate_per_s},
          {"input_length", LengthsJson(s.input_length)},
          {"output_length", LengthsJson(s.output_length)},
          {"input_tokens", s.input_tokens},
          {"output_tokens", s.output_tokens},
          {"block_tokens", workload::kTraceBlockTokens},
          {"hash_blocks", s.hash_blocks},
          {"reused_blocks", s.reused_blocks},
          {"prefix_reuse", s.prefix_reuse}};
}

// ---- trace stats ----

struct StatsArgs {
  std::string trace_path;
  bool lenient = false;
  std::string json_path;
};

core::Status RunStats(const StatsArgs& a) {
  ASSIGN_OR_RETURN(std::vector<workload::TraceRequest> trace,
                   workload::ReadMooncakeTrace(a.trace_path, {.lenient = a.lenient}));
  const workload::TraceStats s = workload::ComputeTraceStats(trace);
  std::printf("%s: a Mooncake-format trace\n", a.trace_path.c_str());
  PrintStats(s);
  if (!a.json_path.empty()) {
    core::Json j = StatsJson(s);
    j["trace"] = a.trace_path;
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, j));
  }
  return core::Status::Ok();
}

void AddStats(CLI::App* trace, Action* action) {
  auto a = std::make_shared<StatsArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = trace->add_subcommand(
      "stats", "Counts, arrival rate, length percentiles and prefix reuse of a request trace");
  paths
      ->Input(c, "--trace", &a->trace_path,
              "a Mooncake-format trace: JSONL, or gzip-compressed JSONL (e.g. "
              "data/traces/conversation_trace.jsonl.gz)")
      ->required();
  c->add_flag("--lenient", a->lenient, "ignore keys the format does not have");
  paths->Output(c, "--json", &a->json_path, "write the statistics as JSON here");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunStats(*a); }); });
}

// ---- trace gen ----

struct GenArgs {
  std::string kind = "tracelab-like";
  workload::AgenticTraceOptions options;
  std::string out_path;
};

core::Status RunGen(const GenArgs& a) {
  auto made = workload::MakeAgenticTrace(a.options);
  if (!made.ok()) {
    return NameFlags(made.status(), {{"sessions", "--sessions"},
                                     {"duration_s", "--duration-s"},
                                     {"mean_turns", "--mean-turns"},
                                     {"max_context_tokens", "--max-context-tokens"},
                                     {"initial_context_median_tokens", "--initial-context-median"},
                                     {"shared_prefix_tokens", "--shared-prefix-tokens"},
                                     {"append_median_tokens", "--append-median"},
                                     {"output_median_tokens", "--output-median"},
                                     {"tool_gap_median_s", "--tool-gap-median-s"}});
  }
  RETURN_IF_ERROR(workload::WriteMooncakeTrace(a.out_path, made->requests));
  const workload::AgenticMedians m = workload::AgenticStepMedians(*made);
  const workload::AgenticTraceOptions& o = a.options;
  std::printf("%s: %zu requests of %lld %s sessions (seed %llu)\n", a.out_path.c_str(),
              made->requests.size(), static_cast<long long>(o.sessions), a.kind.c_str(),
              static_cast<unsigned long long>(o.seed));
  core::Table t({"per step (turns after the first)", "median (tokens)", "TraceLab's median"});
  t.AddRow({"prefix (the context so far)", Tokens(m.prefix_tokens), "~120K"});
  t.AddRow({"append", Tokens(m.append_tokens), "~880"});
  t.AddRow({"output (every turn)", Tokens(m.output_tokens), "~200"});
  std::printf("%s", t.Render().c_str());
  std::printf("%lld steps after the first turns; the generator's parameters are our choice\n",
              static_cast<long long>(m.steps));
  PrintStats(workload::ComputeTraceStats(made->requests));
  return core::Status::Ok();
}

void AddGen(CLI::App* trace, Action* action) {
  auto a = std::make_shared<GenArgs>();
  auto paths = std::make_shared<CommandPaths>();
  workload::AgenticTraceOptions& o = a->options;
  CLI::App* c = trace->add_subcommand(
      "gen",
      "Write a seeded trace of agentic sessions (growing prefixes, tool gaps, bursts) in "
      "the Mooncake format");
  c->add_option("--kind", a->kind, "the generator: tracelab-like")
      ->check(CLI::IsMember({"tracelab-like"}))
      ->capture_default_str();
  c->add_option("--seed", o.seed, "every random choice comes from it")
      ->transform(Seed())
      ->capture_default_str();
  c->add_option("--sessions", o.sessions, "sessions in the trace")
      ->transform(Integer(1, 100000))
      ->capture_default_str();
  c->add_option("--duration-s", o.duration_s, "sessions start over about this long")
      ->check(Number(1e-3, 1e7))
      ->capture_default_str();
  c->add_option("--mean-turns", o.mean_turns, "mean turns (requests) per session")
      ->check(Number(1, 10000))
      ->capture_default_str();
  c->add_option("--burst-probability", o.burst_probability,
                "chance that a session arrival is a burst")
      ->check(Number(0, 1))
      ->capture_default_str();
  c->add_option("--burst-sessions", o.burst_sessions, "sessions a burst brings")
      ->transform(Integer(1, 10000))
      ->capture_default_str();
  c->add_option("--burst-window-s", o.burst_window_s, "a burst's sessions start within this")
      ->check(Number(0, 3600))
      ->capture_default_str();
  c->add_option("--initial-context-median", o.initial_context_median_tokens,
                "median first prompt of a session (tokens)")
      ->transform(Integer(1, workload::kMaxTraceTokens))
      ->capture_default_str();
  c->add_option("--shared-prefix-tokens", o.shared_prefix_tokens,
                "leading tokens every session's first prompt shares")
      ->transform(Integer(0, workload::kMaxTraceTokens))
      ->capture_default_str();
  c->add_option("--append-median", o.append_median_tokens, "median tokens a step appends")
      ->transform(Integer(1, workload::kMaxTraceTokens))
      ->capture_default_str();
  c->add_option("--output-median", o.output_median_tokens, "median tokens a step generates")
      ->transform(Integer(1, workload::kMaxTraceTokens))
      ->capture_default_str();
  c->add_option("--tool-gap-median-s", o.tool_gap_median_s, "median tool time between turns")
      ->check(Number(1e-6, 86400))
      ->capture_default_str();
  c->add_option("--decode-ms-per-token", o.decode_ms_per_token,
                "time a generated token takes before the next turn can start")
      ->check(Number(0, 10000))
      ->capture_default_str();
  c->add_option("--max-context-tokens", o.max_context_tokens,
                "a session ends before its prompt would pass this")
      ->transform(Integer(2, workload::kMaxTraceTokens))
      ->capture_default_str();
  paths->Output(c, "--out", &a->out_path, "write the trace here (gzip when it ends in .gz)")
      ->required();
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunGen(*a); }); });
}

}  // namespace

void AddKernelFlumeTrace(CLI::App* kernelflume, Action* action) {
  CLI::App* trace = kernelflume->add_subcommand(
      "trace", "Request traces in the Mooncake format: generate one, or summarise one");
  trace->require_subcommand(1);
  AddGen(trace, action);
  AddStats(trace, action);
}

}  // namespace tessera::cli
