#include "command_table_internal.h"

namespace tessera::fuzz::table_internal {

void AppendLaterSystems(const SampleFiles& s, const std::string& out,
                        std::vector<SubcommandSpec>* t_out) {
  std::vector<SubcommandSpec>& t = *t_out;
  // ---- kernelflume ----
  // generate decodes a few tokens of a seeded tiny model through attention nodes (in-process
  // fake nodes in the bases; a case that drops --transport starts ucx node processes).
  SubcommandSpec generate =
      Spec("generate", MpiUse::kNone, 3,
           {{"--model", K::kInputFile, {}},   {"--seed", K::kUint, {}},
            {"--prompt", K::kText, {}},       {"--prompt-ids", K::kInputFile, {}},
            {"--prompts", K::kInputFile, {}}, {"--max-tokens", K::kInt, {}},
            {"--attn-nodes", K::kInt, {}},    {"--range-tokens", K::kInt, {}},
            {"--reroute-every", K::kInt, {}}, {"--capacity-tokens", K::kInt, {}},
            {"--page-tokens", K::kInt, {}},   {"--transport", K::kText, {}},
            {"--in-process", K::kFlag, {}},   {"--temperature", K::kFloat, {}},
            {"--sample-seed", K::kUint, {}},  {"--ignore-eos", K::kFlag, {}},
            {"--check", K::kFlag, {}},        {"--quiet", K::kFlag, {}},
            {"--json", K::kOutputFile, {}},   {"--trace", K::kOutputFile, {}}});
  generate.group = "kernelflume";
  generate.bases = {
      {"--model", "tiny-gqa", "--prompt", "Hello", "--max-tokens", "4", "--transport", "fake"},
      {"--model", "tiny-mha", "--prompt", "ab", "--max-tokens", "6", "--attn-nodes", "2",
       "--reroute-every", "2", "--transport", "fake", "--check", "--json", out + "gen.json",
       "--trace", out + "gen_trace.json"},
      {"--model", "tiny-gqa", "--prompt", "x", "--max-tokens", "3", "--temperature", "0.8",
       "--sample-seed", "5", "--ignore-eos", "--quiet", "--transport", "fake"}};
  t.push_back(generate);
  // attn-node needs a weight node (needs_server): a closed port of the loopback (kept) fails the
  // join within the (kept) short timeout.
  SubcommandSpec attn_node = Spec("attn-node", MpiUse::kNone, 1,
                                  {{"--connect", K::kText, {}},
                                   {"--capacity-tokens", K::kInt, {}},
                                   {"--page-tokens", K::kInt, {}},
                                   {"--id", K::kInt, {}},
                                   {"--fingerprint", K::kText, {}},
                                   {"--transport", K::kText, {}},
                                   {"--join-timeout", K::kFloat, {}}});
  attn_node.group = "kernelflume";
  attn_node.needs_server = true;
  attn_node.bases = {{"--connect", "127.0.0.1:1", "--join-timeout", "1"},
                     {"--connect", "127.0.0.1:1", "--capacity-tokens", "1024", "--page-tokens",
                      "16", "--id", "3", "--fingerprint", "abc", "--join-timeout", "1"}};
  attn_node.keep = {"--connect", "--join-timeout"};
  t.push_back(attn_node);
  // serve listens for 0.2 s on a free port of the loopback with in-process nodes (kept), then
  // stops by itself; the options that size the node pool are kept.
  SubcommandSpec kf_serve = Spec("serve", MpiUse::kNone, 2,
                                 {{"--model", K::kInputFile, {}},
                                  {"--seed", K::kUint, {}},
                                  {"--host", K::kText, {}},
                                  {"--port", K::kInt, {}},
                                  {"--attn-nodes", K::kInt, {}},
                                  {"--max-attn-nodes", K::kInt, {}},
                                  {"--min-attn-nodes", K::kInt, {}},
                                  {"--capacity-tokens", K::kInt, {}},
                                  {"--page-tokens", K::kInt, {}},
                                  {"--reroute-every", K::kInt, {}},
                                  {"--max-active", K::kInt, {}},
                                  {"--max-queued", K::kInt, {}},
                                  {"--prefill-tokens-per-step", K::kInt, {}},
                                  {"--keep-alive-s", K::kFloat, {}},
                                  {"--no-autoscale", K::kFlag, {}},
                                  {"--transport", K::kText, {}},
                                  {"--duration-s", K::kFloat, {}}});
  kf_serve.group = "kernelflume";
  kf_serve.bases = {
      {"--model", "tiny-gqa", "--host", "127.0.0.1", "--port", "0", "--transport", "fake",
       "--duration-s", "0.2"},
      {"--model", "tiny-mha", "--host", "127.0.0.1", "--port", "0", "--transport", "fake",
       "--attn-nodes", "2", "--max-attn-nodes", "3", "--no-autoscale", "--duration-s", "0.2"}};
  kf_serve.keep = {"--host",       "--port",           "--transport",      "--duration-s",
                   "--attn-nodes", "--max-attn-nodes", "--capacity-tokens"};
  t.push_back(kf_serve);
  // abuse needs a completion server (needs_server): the closed port answers "cannot reach" at
  // once.
  SubcommandSpec kf_abuse = Spec("abuse", MpiUse::kNone, 2,
                                 {{"--url", K::kText, {}},
                                  {"--requests", K::kInt, {}},
                                  {"--connections", K::kInt, {}},
                                  {"--seed", K::kUint, {}},
                                  {"--server-pid", K::kInt, {}},
                                  {"--rss-bound", K::kText, {}},
                                  {"--json", K::kOutputFile, {}},
                                  {"--hostile", K::kFlag, {}},
                                  {"--cases", K::kText, {}},
                                  {"--slow-sockets", K::kInt, {}},
                                  {"--slow-seconds", K::kFloat, {}},
                                  {"--idle-sockets", K::kInt, {}},
                                  {"--idle-seconds", K::kFloat, {}},
                                  {"--flood-bytes", K::kText, {}},
                                  {"--shutdown", K::kFlag, {}},
                                  {"--drain-deadline-s", K::kFloat, {}}});
  kf_abuse.group = "kernelflume";
  kf_abuse.needs_server = true;
  kf_abuse.bases = {
      {"--url", "http://127.0.0.1:1", "--requests", "10", "--connections", "4"},
      {"--url", "http://127.0.0.1:1", "--requests", "20", "--connections", "2", "--seed", "3",
       "--server-pid", "1", "--rss-bound", "8MiB", "--json", out + "kf_abuse.json"}};
  kf_abuse.keep = {"--url"};
  t.push_back(kf_abuse);
  // cost is arithmetic over presets: quick whatever the flags.
  SubcommandSpec kf_cost = Spec("cost", MpiUse::kNone, 1,
                                {{"--model", K::kInputFile, {}},
                                 {"--cluster", K::kInputFile, {}},
                                 {"--batch", K::kInt, {}},
                                 {"--context", K::kInt, {}},
                                 {"--attn-nodes", K::kInt, {}},
                                 {"--weight-gpus", K::kInt, {}},
                                 {"--json", K::kOutputFile, {}}});
  kf_cost.group = "kernelflume";
  kf_cost.bases = {{"--model", "llama-3.1-8b", "--cluster", "h100x64"},
                   {"--model", "llama-3.1-70b", "--cluster", "a6000x32", "--weight-gpus", "4",
                    "--batch", "8", "--context", "4096", "--json", out + "kf_cost.json"}};
  t.push_back(kf_cost);
  // simulate runs the fleet simulator over a trace: the bases simulate a few generated sessions
  // or the sample trace; the options that size the trace are kept.
  SubcommandSpec kf_sim = Spec("simulate", MpiUse::kNone, 2,
                               {{"--trace", K::kInputFile, {}},
                                {"--sessions", K::kInt, {}},
                                {"--duration-s", K::kFloat, {}},
                                {"--seed", K::kUint, {}},
                                {"--model", K::kInputFile, {}},
                                {"--cluster", K::kInputFile, {}},
                                {"--system", K::kText, {}},
                                {"--attn-device", K::kText, {}},
                                {"--max-gpus", K::kInt, {}},
                                {"--attn-price-factor", K::kFloat, {}},
                                {"--weight-gpus", K::kInt, {}},
                                {"--weight-nodes", K::kInt, {}},
                                {"--max-weight-nodes", K::kInt, {}},
                                {"--max-batch", K::kInt, {}},
                                {"--no-pipeline", K::kFlag, {}},
                                {"--kv-high", K::kFloat, {}},
                                {"--kv-low", K::kFloat, {}},
                                {"--keep-alive-s", K::kFloat, {}},
                                {"--min-nodes", K::kInt, {}},
                                {"--max-nodes", K::kInt, {}},
                                {"--attn-start-s", K::kFloat, {}},
                                {"--instance-init-s", K::kFloat, {}},
                                {"--dram-bytes-per-s", K::kFloat, {}},
                                {"--ssd-bytes-per-s", K::kFloat, {}},
                                {"--cache-ttl-s", K::kFloat, {}},
                                {"--tpot-target-ms", K::kFloat, {}},
                                {"--prefill-chunk-tokens", K::kInt, {}},
                                {"--tick-s", K::kFloat, {}},
                                {"--max-context", K::kInt, {}},
                                {"--window-s", K::kFloat, {}},
                                {"--json", K::kOutputFile, {}},
                                {"--trace-out", K::kOutputFile, {}},
                                {"--plot", K::kOutputFile, {}}});
  kf_sim.group = "kernelflume";
  kf_sim.bases = {{"--sessions", "3", "--duration-s", "60", "--max-context", "200000"},
                  {"--trace", s.kf_trace, "--cluster", "a6000x32", "--max-gpus", "8", "--system",
                   "kernelflume", "--attn-device", "rtx-4090-24gb", "--json", out + "kf_sim.json",
                   "--trace-out", out + "kf_sim_trace.json"}};
  kf_sim.keep = {"--sessions", "--duration-s", "--max-context", "--trace"};
  t.push_back(kf_sim);
  // replay serves a scaled trace on attention nodes (in process in the bases) and simulates it:
  // the options that size the replay are kept (a fuzzed --max-requests 0 would replay every
  // request). --calibrate runs a 40 s trace: not in a base, it is never added.
  SubcommandSpec kf_replay = Spec("replay", MpiUse::kNone, 1,
                                  {{"--trace", K::kInputFile, {}},
                                   {"--calibrate", K::kFlag, {}},
                                   {"--no-noise", K::kFlag, {}},
                                   {"--token-scale", K::kFloat, {}},
                                   {"--output-scale", K::kFloat, {}},
                                   {"--time-scale", K::kFloat, {}},
                                   {"--start-s", K::kFloat, {}},
                                   {"--max-requests", K::kInt, {}},
                                   {"--seed", K::kUint, {}},
                                   {"--model", K::kInputFile, {}},
                                   {"--nodes", K::kInt, {}},
                                   {"--transport", K::kText, {}},
                                   {"--capacity-tokens", K::kInt, {}},
                                   {"--max-active", K::kInt, {}},
                                   {"--prefill-tokens-per-step", K::kInt, {}},
                                   {"--profile", K::kInputFile, {}},
                                   {"--fit-profile-out", K::kOutputFile, {}},
                                   {"--json", K::kOutputFile, {}}});
  kf_replay.group = "kernelflume";
  const std::vector<std::string> replay_size = {
      "--trace",        s.kf_trace, "--max-requests", "3",    "--token-scale", "0.01",
      "--output-scale", "0.01",     "--time-scale",   "0.01", "--transport",   "fake",
      "--nodes",        "1"};
  kf_replay.bases = {replay_size, replay_size};
  kf_replay.bases[0].insert(kf_replay.bases[0].end(),
                            {"--profile", s.kf_profile, "--json", out + "kf_replay.json"});
  kf_replay.bases[1][7] = "0.1";  // --output-scale: enough iterations to fit a profile
  kf_replay.bases[1].insert(kf_replay.bases[1].end(),
                            {"--no-noise", "--fit-profile-out", out + "kf_profile_out.json"});
  kf_replay.keep = {"--trace",      "--max-requests", "--token-scale", "--output-scale",
                    "--time-scale", "--transport",    "--nodes"};
  t.push_back(kf_replay);
  // bench pipeline starts an attention node (in process in the bases, a ucx process when a case
  // drops --transport) and times a few decode steps: the options that size the run are kept.
  SubcommandSpec bench_pipeline = Spec("pipeline", MpiUse::kNone, 1,
                                       {{"--model", K::kInputFile, {}},
                                        {"--seed", K::kUint, {}},
                                        {"--batch", K::kInt, {}},
                                        {"--context", K::kInt, {}},
                                        {"--steps", K::kInt, {}},
                                        {"--warmup", K::kInt, {}},
                                        {"--transport", K::kText, {}},
                                        {"--in-process", K::kFlag, {}},
                                        {"--no-pin", K::kFlag, {}},
                                        {"--no-batch-messages", K::kFlag, {}},
                                        {"--proxy-cpu", K::kFlag, {}},
                                        {"--json", K::kOutputFile, {}}});
  bench_pipeline.group = "kernelflume bench";
  bench_pipeline.bases = {
      {"--batch", "2", "--context", "8", "--steps", "1", "--warmup", "0", "--transport", "fake"},
      {"--model", "tiny-mha", "--batch", "3", "--context", "20", "--steps", "2", "--warmup", "1",
       "--transport", "fake", "--json", out + "pipeline.json"}};
  bench_pipeline.keep = {"--batch", "--context", "--steps", "--warmup"};
  t.push_back(bench_pipeline);
  // bench join / bench death start attention-node processes over ucx and decode a few tokens;
  // every option that sizes the run is kept (a fuzzed --max-tokens 10^6 would run for hours).
  std::vector<OptionSpec> elastic_bench = {
      {"--model", K::kInputFile, {}},   {"--seed", K::kUint, {}},
      {"--requests", K::kInt, {}},      {"--prompt-tokens", K::kInt, {}},
      {"--max-tokens", K::kInt, {}},    {"--nodes", K::kInt, {}},
      {"--events", K::kInt, {}},        {"--every-tokens", K::kInt, {}},
      {"--reroute-every", K::kInt, {}}, {"--partial-deadline-s", K::kFloat, {}},
      {"--json", K::kOutputFile, {}}};
  const std::vector<std::string> elastic_keep = {
      "--requests", "--prompt-tokens", "--max-tokens",   "--nodes",
      "--events",   "--every-tokens",  "--reroute-every"};
  SubcommandSpec bench_join = Spec("join", MpiUse::kNone, 1, elastic_bench);
  bench_join.group = "kernelflume bench";
  bench_join.bases = {{"--requests", "2", "--prompt-tokens", "8", "--max-tokens", "8", "--events",
                       "1", "--every-tokens", "4", "--nodes", "1", "--reroute-every", "0", "--json",
                       out + "join.json"}};
  bench_join.keep = elastic_keep;
  t.push_back(bench_join);
  std::vector<OptionSpec> death_bench = elastic_bench;
  death_bench.push_back({"--refill-nice", K::kInt, {}});
  death_bench.push_back({"--placebo-instants", K::kInt, {}});
  death_bench.push_back({"--join-delay-s", K::kFloat, {}});
  SubcommandSpec bench_death = Spec("death", MpiUse::kNone, 1, death_bench);
  bench_death.group = "kernelflume bench";
  bench_death.bases = {{"--requests", "2", "--prompt-tokens", "8", "--max-tokens", "8", "--events",
                        "1", "--every-tokens", "4", "--nodes", "2", "--reroute-every", "4"}};
  bench_death.keep = elastic_keep;
  t.push_back(bench_death);

  // bench tpot / bench scale serve a seeded trace on attention-node processes (and, for scale,
  // on whole instances): every option that sizes the run is kept.
  std::vector<OptionSpec> scale_bench = {{"--model", K::kInputFile, {}},
                                         {"--seed", K::kUint, {}},
                                         {"--duration-s", K::kFloat, {}},
                                         {"--base-rate", K::kFloat, {}},
                                         {"--burst-rate", K::kFloat, {}},
                                         {"--burst-start-s", K::kFloat, {}},
                                         {"--burst-end-s", K::kFloat, {}},
                                         {"--prompt-min", K::kInt, {}},
                                         {"--prompt-max", K::kInt, {}},
                                         {"--output-min", K::kInt, {}},
                                         {"--output-max", K::kInt, {}},
                                         {"--capacity-tokens", K::kInt, {}},
                                         {"--page-tokens", K::kInt, {}},
                                         {"--min-nodes", K::kInt, {}},
                                         {"--max-nodes", K::kInt, {}},
                                         {"--keep-alive-s", K::kFloat, {}},
                                         {"--window-s", K::kFloat, {}},
                                         {"--max-active", K::kInt, {}},
                                         {"--prefill-tokens-per-step", K::kInt, {}},
                                         {"--settle-s", K::kFloat, {}},
                                         {"--check", K::kFlag, {}},
                                         {"--json", K::kOutputFile, {}}};
  const std::vector<std::string> scale_keep = {
      "--duration-s",  "--base-rate",  "--burst-rate", "--burst-start-s",
      "--burst-end-s", "--prompt-min", "--prompt-max", "--output-min",
      "--output-max",  "--max-nodes",  "--settle-s",   "--keep-alive-s"};
  const std::vector<std::string> scale_base = {
      "--duration-s",  "1", "--base-rate",  "2", "--burst-rate", "2", "--burst-start-s", "0",
      "--burst-end-s", "1", "--prompt-min", "4", "--prompt-max", "8", "--output-min",    "2",
      "--output-max",  "4", "--max-nodes",  "2", "--settle-s",   "0", "--keep-alive-s",  "0"};
  SubcommandSpec bench_tpot = Spec("tpot", MpiUse::kNone, 1, scale_bench);
  bench_tpot.group = "kernelflume bench";
  bench_tpot.bases = {scale_base};
  bench_tpot.keep = scale_keep;
  t.push_back(bench_tpot);
  SubcommandSpec bench_scale = Spec("scale", MpiUse::kNone, 1, scale_bench);
  bench_scale.group = "kernelflume bench";
  bench_scale.bases = {scale_base};
  bench_scale.keep = scale_keep;
  t.push_back(bench_scale);

  // trace gen writes a seeded agentic trace (a few sessions in the bases; the options that size
  // it are kept, since a fuzzed --sessions 100000 would write gigabytes); trace stats reads one.
  SubcommandSpec trace_gen = Spec("gen", MpiUse::kNone, 2,
                                  {{"--kind", K::kText, {}},
                                   {"--seed", K::kUint, {}},
                                   {"--sessions", K::kInt, {}},
                                   {"--duration-s", K::kFloat, {}},
                                   {"--mean-turns", K::kFloat, {}},
                                   {"--burst-probability", K::kFloat, {}},
                                   {"--burst-sessions", K::kInt, {}},
                                   {"--burst-window-s", K::kFloat, {}},
                                   {"--initial-context-median", K::kInt, {}},
                                   {"--shared-prefix-tokens", K::kInt, {}},
                                   {"--append-median", K::kInt, {}},
                                   {"--output-median", K::kInt, {}},
                                   {"--tool-gap-median-s", K::kFloat, {}},
                                   {"--decode-ms-per-token", K::kFloat, {}},
                                   {"--max-context-tokens", K::kInt, {}},
                                   {"--out", K::kOutputFile, {}}});
  trace_gen.group = "kernelflume trace";
  trace_gen.bases = {
      {"--seed", "1", "--sessions", "4", "--mean-turns", "4", "--out", out + "gen_trace.jsonl"},
      {"--kind",
       "tracelab-like",
       "--seed",
       "7",
       "--sessions",
       "6",
       "--duration-s",
       "30",
       "--mean-turns",
       "3",
       "--burst-probability",
       "0.5",
       "--burst-sessions",
       "3",
       "--initial-context-median",
       "20000",
       "--max-context-tokens",
       "65536",
       "--out",
       out + "gen_trace.jsonl.gz"}};
  trace_gen.keep = {"--sessions", "--mean-turns", "--max-context-tokens",
                    "--initial-context-median"};
  t.push_back(trace_gen);
  SubcommandSpec trace_stats = Spec("stats", MpiUse::kNone, 2,
                                    {{"--trace", K::kInputFile, {}},
                                     {"--lenient", K::kFlag, {}},
                                     {"--json", K::kOutputFile, {}}});
  trace_stats.group = "kernelflume trace";
  trace_stats.bases = {{"--trace", s.kf_trace},
                       {"--trace", s.kf_trace, "--lenient", "--json", out + "trace_stats.json"}};
  t.push_back(trace_stats);

  // ---- elaswave ----
  // run starts a coordinator and worker processes: every option that sizes the job is kept
  // (a fuzzed --steps 1000000 would run for hours), the rest is fuzzed.
  std::vector<OptionSpec> elastic = {{"--model", K::kInputFile, {}},
                                     {"--dp", K::kInt, {}},
                                     {"--pp", K::kInt, {}},
                                     {"--tp", K::kInt, {}},
                                     {"--processes", K::kInt, {}},
                                     {"--global-batch", K::kInt, {}},
                                     {"--micro-batch", K::kInt, {}},
                                     {"--steps", K::kInt, {}},
                                     {"--seq", K::kInt, {}},
                                     {"--dropout", K::kFloat, {}},
                                     {"--lr", K::kFloat, {}},
                                     {"--seed", K::kUint, {}},
                                     {"--policy", K::kText, {}},
                                     {"--run-dir", K::kOutputDir, {}},
                                     {"--heartbeat-timeout", K::kFloat, {}},
                                     {"--op-timeout", K::kFloat, {}},
                                     {"--recovery-timeout", K::kFloat, {}},
                                     {"--coordinator-timeout", K::kFloat, {}},
                                     {"--job-timeout", K::kFloat, {}},
                                     {"--quiet", K::kFlag, {}}};
  const std::vector<std::string> small_job = {
      "--model",       "gpt-tiny", "--seq",   "8", "--global-batch", "4",
      "--micro-batch", "1",        "--steps", "2", "--dp",           "2",
      "--pp",          "1",        "--tp",    "1", "--job-timeout",  "60"};
  const std::vector<std::string> job_keep = {"--model",
                                             "--seq",
                                             "--global-batch",
                                             "--micro-batch",
                                             "--steps",
                                             "--dp",
                                             "--pp",
                                             "--tp",
                                             "--job-timeout",
                                             "--op-timeout",
                                             "--recovery-timeout",
                                             "--coordinator-timeout",
                                             "--heartbeat-timeout"};
  SubcommandSpec ew_run = Spec("run", MpiUse::kNone, 3, elastic);
  Append(&ew_run.options, {{"--faults", K::kInputFile, {}},
                           {"--save-ref", K::kOutputFile, {}},
                           {"--check", K::kInputFile, {}},
                           {"--json", K::kOutputFile, {}},
                           {"--trace", K::kOutputFile, {}}});
  ew_run.group = "elaswave";
  ew_run.bases = {small_job};
  ew_run.bases.push_back(small_job);
  for (const char* extra : {"--json", "--save-ref"}) {
    ew_run.bases.back().push_back(extra);
    ew_run.bases.back().push_back(out + "ew_" + std::string(extra + 2) + ".json");
  }
  ew_run.keep = job_keep;
  t.push_back(ew_run);
  SubcommandSpec ew_bench = Spec("bench", MpiUse::kNone, 1, elastic);
  Append(&ew_bench.options, {{"--runs", K::kInt, {}},
                             {"--fault-seed", K::kUint, {}},
                             {"--action", K::kText, {}},
                             {"--json", K::kOutputFile, {}}});
  ew_bench.group = "elaswave";
  ew_bench.bases = {small_job};
  ew_bench.bases.back().push_back("--runs");
  ew_bench.bases.back().push_back("1");
  ew_bench.keep = job_keep;
  ew_bench.keep.push_back("--runs");
  t.push_back(ew_bench);
  // comm-bench starts --ranks processes per repetition: --ranks and --repeats are kept so a
  // case stays at 4 processes once; the modes, the timeout and the paths are fuzzed.
  SubcommandSpec ew_comm = Spec("comm-bench", MpiUse::kNone, 1,
                                {{"--ranks", K::kIntList, {}},
                                 {"--mode", K::kText, {}},
                                 {"--repeats", K::kInt, {}},
                                 {"--timeout", K::kFloat, {}},
                                 {"--run-dir", K::kOutputDir, {}},
                                 {"--json", K::kOutputFile, {}},
                                 {"--quiet", K::kFlag, {}}});
  ew_comm.group = "elaswave";
  ew_comm.bases = {{"--ranks", "4", "--repeats", "1", "--mode", "inplace", "--quiet"}};
  ew_comm.keep = {"--ranks", "--repeats"};
  t.push_back(ew_comm);

  // plan starts nothing and only prints: every option is fuzzed.
  SubcommandSpec ew_plan = Spec("plan", MpiUse::kNone, 1,
                                {{"--model", K::kInputFile, {}},
                                 {"--dp", K::kInt, {}},
                                 {"--pp", K::kInt, {}},
                                 {"--tp", K::kInt, {}},
                                 {"--global-batch", K::kInt, {}},
                                 {"--micro-batch", K::kInt, {}},
                                 {"--seq", K::kInt, {}},
                                 {"--dead", K::kIntList, {}},
                                 {"--dvfs-range", K::kText, {}},
                                 {"--json", K::kOutputFile, {}}});
  ew_plan.group = "elaswave";
  ew_plan.bases = {{"--dp", "2", "--pp", "2", "--tp", "2", "--dead", "5"},
                   {"--dp", "2", "--pp", "2", "--tp", "1", "--dead", "3", "--dvfs-range", "0.5,1.3",
                    "--json", out + "ew_plan.json"}};
  t.push_back(ew_plan);

  // ---- tarot ----
  // scenes writes a folder of seeded scenes; --n is kept (a large valid count runs for long).
  SubcommandSpec scenes = Spec("scenes", MpiUse::kNone, 3,
                               {{"--set", K::kText, {}},
                                {"--seed", K::kUint, {}},
                                {"--n", K::kInt, {}},
                                {"--out", K::kOutputDir, {}}});
  scenes.group = "tarot";
  scenes.bases = {{"--seed", "3", "--n", "1", "--out", out + "scenes"},
                  {"--n", "2", "--out", out + "scenes2"},
                  {"--set", "fmnist", "--n", "1", "--out", out + "scenes3"}};
  scenes.keep = {"--n"};
  t.push_back(scenes);
  // run segments the harness's scene image: a query through the scene-reading backends, a box
  // prompt through the pixels-only segmenter, and the pixels-only pipeline with every output.
  std::vector<OptionSpec> backends = {{"--segmenter", K::kText, {}},
                                      {"--reasoner", K::kText, {}},
                                      {"--features", K::kText, {}},
                                      {"--segmenter-option", K::kKeyValue, {}},
                                      {"--reasoner-option", K::kKeyValue, {}},
                                      {"--features-option", K::kKeyValue, {}}};
  SubcommandSpec tarot_run = Spec("run", MpiUse::kNone, 6,
                                  {{"--image", K::kInputFile, {}},
                                   {"--query", K::kText, {}},
                                   {"--box", K::kText, {}},
                                   {"--scene", K::kInputFile, {}},
                                   {"--set", K::kText, {}},
                                   {"--system", K::kText, {}},
                                   {"--out", K::kOutputFile, {}},
                                   {"--overlay", K::kOutputFile, {}},
                                   {"--trace", K::kOutputFile, {}}});
  Append(&tarot_run.options, backends);
  tarot_run.group = "tarot";
  tarot_run.bases = {
      {"--image", s.tarot_image, "--scene", s.tarot_scene, "--query", "the red circle",
       "--segmenter", "synthetic", "--reasoner", "oracle", "--out", out + "mask.png"},
      {"--image", s.tarot_image, "--box", "0,0,60,60", "--segmenter", "classical", "--out",
       out + "box.png", "--overlay", out + "box_overlay.png"},
      {"--image", s.tarot_image, "--query", "the shape like a plus sign", "--segmenter",
       "classical", "--reasoner", "rule", "--system", "full", "--out", out + "m.png", "--overlay",
       out + "o.png", "--trace", out + "trace.json"}};
  t.push_back(tarot_run);
  // bench runs every system on one scene (--n kept: more scenes take seconds each).
  SubcommandSpec tarot_bench = Spec("bench", MpiUse::kNone, 3,
                                    {{"--set", K::kText, {}},
                                     {"--n", K::kInt, {}},
                                     {"--seed", K::kUint, {}},
                                     {"--systems", K::kTextList, {}},
                                     {"--resamples", K::kInt, {}},
                                     {"--sweep-reasoner-error", K::kFlag, {}},
                                     {"--sweep-skill", K::kText, {}},
                                     {"--no-boundary", K::kFlag, {}},
                                     {"--msr-rounds", K::kInt, {}},
                                     {"--msr-area-fraction", K::kFloat, {}},
                                     {"--msr-area-of", K::kText, {}},
                                     {"--msr-no-compare", K::kFlag, {}},
                                     {"--quiet", K::kFlag, {}},
                                     {"--json", K::kOutputFile, {}},
                                     {"--plot", K::kOutputFile, {}}});
  Append(&tarot_bench.options, backends);
  tarot_bench.group = "tarot";
  tarot_bench.bases = {{"--n", "1", "--systems", "naive,eri,full", "--resamples", "20", "--quiet"},
                       {"--n", "1", "--seed", "2", "--segmenter", "classical", "--systems",
                        "naive,box-only", "--resamples", "0", "--json", out + "bench.json"},
                       {"--n", "1", "--systems", "naive-coupling,full", "--sweep-reasoner-error",
                        "--sweep-skill", "box", "--no-boundary", "--resamples", "10"},
                       {"--n", "1", "--systems", "eri,full,msr-flat-features,msr-yes-judge",
                        "--msr-rounds", "3", "--msr-area-of", "image", "--msr-area-fraction",
                        "0.01", "--msr-no-compare", "--resamples", "10", "--quiet"}};
  tarot_bench.keep = {"--n", "--msr-rounds"};
  t.push_back(tarot_bench);
}

}  // namespace tessera::fuzz::table_internal
