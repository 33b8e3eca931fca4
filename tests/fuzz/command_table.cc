#include "command_table.h"

#include <algorithm>

#include "command_table_internal.h"

namespace tessera::fuzz {
namespace {

using K = ValueKind;
using table_internal::Append;
using table_internal::Spec;

// Values every integer option of a kRelaunch subcommand refuses at parse time (not numbers).
const std::vector<std::string> kNotANumber = {"abc", "x1", "ünï", "one", "#"};

std::vector<std::string> With(std::vector<std::string> v) {
  v.insert(v.end(), kNotANumber.begin(), kNotANumber.end());
  return v;
}

std::vector<OptionSpec> CostModelOptions() {
  return {{"--cluster", K::kInputFile, {}},
          {"--model", K::kInputFile, {}},
          {"--profile", K::kInputFile, {}}};
}

// SmallDit shape options of profile / validate / compare: each refuses < 1 before launching.
std::vector<OptionSpec> SmallDitOptions() {
  return {{"--hidden", K::kInt, With({"0", "-4"})},
          {"--heads", K::kInt, With({"0", "-1"})},
          {"--layers", K::kInt, With({"0", "-1"})},
          {"--ffn", K::kInt, With({"0", "-1"})},
          {"--channels", K::kInt, With({"0", "-2"})}};
}

// Options every profile-priced job (validate, compare) shares. The sample profile was measured
// with 2 ranks, so any other --ranks is refused before launching.
std::vector<OptionSpec> ProfileJobOptions(const SampleFiles& s) {
  std::vector<OptionSpec> o = {
      {"--profile",
       K::kInputFile,
       {s.missing, s.dir, s.empty_file, "/dev/null", s.loop, s.dangling, s.plan, s.cluster,
        s.run_plans[0]}},
      {"--ranks", K::kInt, With({"3", "0", "-1", "1"})},
      {"--repeats", K::kInt, With({"0", "-1"})},
      {"--warmup", K::kInt, With({"-1", "-5"})},
      {"--seed", K::kUint, kNotANumber},
      {"--op-timeout", K::kFloat, kNotANumber},
  };
  for (OptionSpec& d : SmallDitOptions()) o.push_back(d);
  return o;
}

}  // namespace

std::vector<std::string> GroupWords(const std::string& group) {
  std::vector<std::string> words;
  size_t start = 0;
  while (start <= group.size()) {
    const size_t end = std::min(group.find(' ', start), group.size());
    if (end > start) words.push_back(group.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

const OptionSpec* SubcommandSpec::Find(const std::string& option) const {
  for (const OptionSpec& o : options)
    if (o.name == option) return &o;
  return nullptr;
}

std::vector<SubcommandSpec> CommandTable(const SampleFiles& s) {
  const std::string out = s.out_dir + "/";
  std::vector<SubcommandSpec> t;

  SubcommandSpec tokens = Spec("tokens", MpiUse::kNone, 8, {});
  tokens.options = {{"--kind", K::kText, {}},
                    {"--res", K::kText, {}},
                    {"--seconds", K::kFloat, {}},
                    {"--fps", K::kInt, {}}};
  tokens.bases = {{},
                  {"--kind", "image", "--res", "720p"},
                  {"--kind", "video", "--res", "1280x720", "--seconds", "5", "--fps", "8"}};
  t.push_back(tokens);

  SubcommandSpec plan = Spec("plan", MpiUse::kNone, 30, CostModelOptions());
  Append(&plan.options, {{"--time-limit", K::kFloat, {}},
                         {"--joint-time-limit", K::kFloat, {}},
                         {"--workload", K::kInputFile, {}},
                         {"--load", K::kText, {}},
                         {"--video-seconds", K::kFloat, {}},
                         {"--seed", K::kUint, {}},
                         {"--planner", K::kText, {}},
                         {"--option", K::kKeyValue, {}},
                         {"--json", K::kOutputFile, {}},
                         {"--trace", K::kOutputFile, {}},
                         {"--save-plan", K::kOutputFile, {}},
                         {"--save-batch", K::kOutputFile, {}},
                         {"--plot", K::kOutputFile, {}}});
  plan.bases = {
      {"--cluster", s.cluster, "--workload", "v50", "--planner", "usp"},
      {"--cluster", s.cluster, "--planner", "dp", "--load", "low", "--json", out + "plan.json"},
      {"--cluster", s.cluster, "--planner", "knapformer", "--option", "knapformer.bags=g8n1"},
      {"--cluster", s.cluster, "--model", s.model, "--workload", s.batch, "--planner", "usp",
       "--save-plan", out + "p.json", "--save-batch", out + "b.json", "--trace", out + "t.json",
       "--json", out + "r.json"},
      {"--profile", s.profile, "--load", "2000", "--planner", "usp", "--save-plan", out + "p.json"},
      {"--cluster", s.cluster1, "--load", "2000", "--planner", "zellige", "--option",
       "zellige.time_limit_s=0.5"},
      {"--cluster", s.cluster, "--video-seconds", "5", "--seed", "3", "--planner", "adaptiveload"}};
  t.push_back(plan);

  SubcommandSpec simulate = Spec("simulate", MpiUse::kNone, 20, CostModelOptions());
  Append(&simulate.options, {{"--batch", K::kInputFile, {}},
                             {"--plan", K::kInputFile, {}},
                             {"--json", K::kOutputFile, {}},
                             {"--trace", K::kOutputFile, {}}});
  simulate.bases = {{"--cluster", s.cluster, "--batch", s.batch, "--plan", s.plan},
                    {"--cluster", s.cluster, "--model", s.model, "--batch", s.batch, "--plan",
                     s.plan, "--json", out + "s.json", "--trace", out + "t.json"},
                    {"--profile", s.profile, "--batch", s.batch_profile, "--plan", s.plan_profile}};
  t.push_back(simulate);

  SubcommandSpec bench = Spec("bench-planner", MpiUse::kNone, 10, CostModelOptions());
  Append(&bench.options, {{"--mixes", K::kTextList, {}},
                          {"--load", K::kText, {}},
                          {"--video-seconds", K::kFloat, {}},
                          {"--batches", K::kInt, {}},
                          {"--seed", K::kUint, {}},
                          {"--joint-time-limit", K::kFloat, {}},
                          {"--time-limit", K::kFloat, {}},
                          {"--skip-joint", K::kFlag, {}},
                          {"--option", K::kKeyValue, {}},
                          {"--json", K::kOutputFile, {}}});
  bench.bases = {{"--cluster", s.cluster, "--mixes", "v50", "--batches", "1", "--skip-joint"},
                 {"--profile", s.profile, "--load", "2000", "--mixes", "v35,v60", "--batches", "1",
                  "--skip-joint", "--json", out + "bench.json"},
                 {"--cluster", s.cluster, "--load", "20000", "--mixes", "v50", "--batches", "1",
                  "--joint-time-limit", "0.05"}};
  // The joint MILP runs a minute by default: keep it skipped or its time limit set.
  bench.keep = {"--skip-joint"};
  bench.never_drop = {"--joint-time-limit"};
  t.push_back(bench);

  SubcommandSpec run = Spec("run", MpiUse::kSingleton, 12, {});
  run.options = {{"--plan", K::kInputFile, {}},
                 {"--workload", K::kInputFile, {}},
                 {"--planner", K::kText, {}},
                 {"--seed", K::kUint, {}},
                 {"--load", K::kText, {}},
                 {"--video-seconds", K::kFloat, {}},
                 {"--token-scale", K::kFloat, {}},
                 {"--profile", K::kInputFile, {}},
                 {"--cluster", K::kInputFile, {}},
                 {"--steps", K::kInt, {}},
                 {"--check", K::kFlag, {}},
                 {"--json", K::kOutputFile, {}},
                 {"--heads", K::kInt, {}},
                 {"--head-dim", K::kInt, {}},
                 {"--train", K::kFlag, {}},
                 {"--hidden", K::kInt, {}},
                 {"--layers", K::kInt, {}},
                 {"--ffn", K::kInt, {}},
                 {"--channels", K::kInt, {}},
                 {"--lr", K::kFloat, {}},
                 {"--max-loss-ratio", K::kFloat, {}},
                 {"--op-timeout", K::kFloat, {}}};
  run.bases = {
      {"--workload", "v50", "--planner", "usp", "--token-scale", "0.002", "--steps", "1"},
      {"--plan", s.plan1, "--steps", "1", "--json", out + "run.json"},
      {"--cluster", s.cluster1, "--workload", s.batch1, "--planner", "dp", "--steps", "1",
       "--check"},
      {"--train", "--workload", "v50", "--planner", "usp", "--token-scale", "0.002", "--steps", "1",
       "--hidden", "32", "--heads", "2", "--layers", "1", "--ffn", "64", "--channels", "4"}};
  t.push_back(run);

  SubcommandSpec profile = Spec("profile", MpiUse::kRelaunch, 2, {});
  profile.options = {
      {"--ranks", K::kInt, With({"0", "-1"})},
      {"--out", K::kOutputFile, {}},
      {"--buckets", K::kIntList, {"0", "8,0", "8,-1", "8,x", "x", "8,,16", "8,", ""}},
      {"--whole-tokens", K::kInt, With({"0", "-1"})},
      {"--repeats", K::kInt, With({"0", "-1"})},
      {"--warmup", K::kInt, With({"-1", "-5"})},
      {"--seed", K::kUint, kNotANumber},
      {"--op-timeout", K::kFloat, kNotANumber}};
  Append(&profile.options, SmallDitOptions());
  profile.bases = {{"--out", out + "profile.json", "--buckets", "8,16", "--repeats", "1",
                    "--warmup", "0", "--hidden", "32", "--heads", "2", "--layers", "1", "--ffn",
                    "64", "--channels", "4"}};
  t.push_back(profile);

  SubcommandSpec validate = Spec("validate", MpiUse::kRelaunch, 2, ProfileJobOptions(s));
  Append(&validate.options,
         {{"--token-scale", K::kFloat, kNotANumber}, {"--json", K::kOutputFile, {}}});
  validate.bases = {
      {"--profile", s.profile, "--repeats", "1", "--warmup", "0", "--json", out + "validate.json"}};
  t.push_back(validate);

  SubcommandSpec compare = Spec("compare", MpiUse::kRelaunch, 2, ProfileJobOptions(s));
  Append(&compare.options, {{"--mixes", K::kTextList, {"v50,,v60", ","}},
                            {"--planners", K::kTextList, {"usp,", ""}},
                            {"--load", K::kText, {}},
                            {"--video-seconds", K::kFloat, kNotANumber},
                            {"--token-scale", K::kFloat, kNotANumber},
                            {"--json", K::kOutputFile, {}}});
  compare.bases = {{"--profile", s.profile, "--repeats", "1", "--warmup", "0", "--mixes", "v50",
                    "--json", out + "compare.json"}};
  t.push_back(compare);

  // ---- compass ----
  SubcommandSpec topo = Spec("topo", MpiUse::kNone, 6, {});
  topo.group = "compass";
  topo.options = {
      {"--topology", K::kInputFile, {}}, {"--tp", K::kInt, {}}, {"--json", K::kOutputFile, {}}};
  topo.bases = {{"--topology", "a6000x8"},
                {"--topology", s.topology, "--tp", "4", "--json", out + "topo.json"},
                {"--topology", "h100x8", "--tp", "2"}};
  t.push_back(topo);

  SubcommandSpec compass_plan = Spec("plan", MpiUse::kNone, 8, {});
  compass_plan.group = "compass";
  compass_plan.options = {{"--topology", K::kInputFile, {}},
                          {"--model", K::kInputFile, With({"llama9", "gpt", ""})},
                          {"--tp", K::kInt, With({"3", "16", "0", "1"})},
                          {"--seq", K::kInt, With({"0", "4095", "-1"})},
                          {"--mbs", K::kInt, With({"0", "-2"})},
                          {"--profile", K::kInputFile, {s.missing, s.dir, s.empty_file, s.cluster}},
                          {"--margin", K::kFloat, With({"-0.1", "1", "2"})},
                          {"--json", K::kOutputFile, {}},
                          {"--trace", K::kOutputFile, {}},
                          {"--emit-te-ub-cfg", K::kOutputFile, {}}};
  compass_plan.bases = {
      {"--topology", "a6000x8", "--model", "llama2-7b", "--tp", "8"},
      {"--topology", s.topology, "--model", "llama3-8b", "--tp", "4", "--seq", "2048", "--json",
       out + "plan.json", "--trace", out + "plan_trace.json", "--emit-te-ub-cfg", out + "te.json"},
      {"--topology", "h100x8", "--model", "llama2-70b", "--tp", "8", "--mbs", "2"}};
  t.push_back(compass_plan);

  SubcommandSpec compass_grid = Spec("grid", MpiUse::kNone, 3, {});
  compass_grid.group = "compass";
  compass_grid.options = {{"--topology", K::kInputFile, {}}, {"--json", K::kOutputFile, {}}};
  compass_grid.bases = {{"--topology", "rtx4090x4"},
                        {"--topology", s.topology, "--json", out + "grid.json"}};
  t.push_back(compass_grid);

  // links checks its topology and --ranks (at most 8 devices in every preset) before mpiexec.
  SubcommandSpec links = Spec("links", MpiUse::kRelaunch, 2, {});
  links.group = "compass";
  links.options = {{"--ranks", K::kInt, With({"9", "0", "1", "-1"})},
                   {"--topology", K::kInputFile, {s.missing, s.dir, s.empty_file, s.cluster}},
                   {"--sizes-kib", K::kIntList, {"0", "x", "64,0", "64,-1", "64,,128", ""}},
                   {"--repeats", K::kInt, With({"0", "-1"})},
                   {"--probe-bytes", K::kInt, With({"1", "0"})},
                   {"--probe-repeats", K::kInt, With({"0", "-1"})},
                   {"--time-scale", K::kFloat, With({"0", "-1", "1e9"})},
                   {"--json", K::kOutputFile, {}},
                   {"--op-timeout", K::kFloat, kNotANumber}};
  links.bases = {{"--ranks", "2", "--repeats", "1", "--probe-repeats", "1", "--sizes-kib", "64",
                  "--time-scale", "10", "--json", out + "links.json"}};
  t.push_back(links);

  // bench checks its topology, --ranks and grid (shapes divisible by TP) before mpiexec.
  SubcommandSpec compass_bench = Spec("bench", MpiUse::kRelaunch, 2, {});
  compass_bench.group = "compass";
  compass_bench.options = {
      {"--ranks", K::kInt, With({"9", "0", "-1"})},
      {"--topology", K::kInputFile, {s.missing, s.dir, s.empty_file, s.cluster}},
      {"--grid", K::kInputFile, {s.missing, s.dir, s.empty_file, s.cluster}},
      {"--compute", K::kText, {"sleep", "", "REAL"}},
      {"--check", K::kFlag, {}},
      {"--repeats", K::kInt, With({"-1", "1001"})},
      {"--time-scale", K::kFloat, With({"0", "-1", "1e9"})},
      {"--json", K::kOutputFile, {}},
      {"--op-timeout", K::kFloat, kNotANumber}};
  compass_bench.bases = {{"--ranks", "2", "--repeats", "1", "--time-scale", "10", "--json",
                          out + "compass_bench.json"}};
  t.push_back(compass_bench);

  // profile checks its topology, --ranks (>= 2) and grid before mpiexec.
  SubcommandSpec compass_profile = Spec("profile", MpiUse::kRelaunch, 2, {});
  compass_profile.group = "compass";
  compass_profile.options = {
      {"--ranks", K::kInt, With({"1", "9", "0", "-1"})},
      {"--topology", K::kInputFile, {s.missing, s.dir, s.empty_file, s.cluster}},
      {"--grid", K::kInputFile, {s.missing, s.dir, s.empty_file, s.cluster}},
      {"--repeats", K::kInt, With({"0", "1001"})},
      {"--time-scale", K::kFloat, With({"0", "-1", "1e9"})},
      {"--out", K::kOutputFile, {}},
      {"--op-timeout", K::kFloat, kNotANumber}};
  compass_profile.bases = {{"--ranks", "2", "--grid", s.compass_grid, "--repeats", "1",
                            "--time-scale", "10", "--out", out + "compass_profile.json"}};
  t.push_back(compass_profile);

  // run checks its topology, --ranks, model, strategy, batch shape and profile before mpiexec.
  SubcommandSpec compass_run = Spec("run", MpiUse::kRelaunch, 2, {});
  compass_run.group = "compass";
  compass_run.options = {{"--ranks", K::kInt, With({"3", "9", "0", "-1"})},
                         {"--topology", K::kInputFile, {s.missing, s.dir, s.empty_file, s.cluster}},
                         {"--model", K::kText, {"gpt-huge", "", "GPT-TINY"}},
                         {"--strategy", K::kText, {"ring9", "decomp:0", "decomp:x", ""}},
                         {"--steps", K::kInt, With({"0", "1001"})},
                         {"--batch", K::kInt, With({"0", "-1"})},
                         {"--seq", K::kInt, With({"0", "65", "-3"})},
                         {"--check", K::kFlag, {}},
                         {"--compute", K::kText, {"sleep", "", "REAL"}},
                         {"--profile", K::kInputFile, {s.missing, s.dir, s.empty_file, s.cluster}},
                         {"--time-scale", K::kFloat, With({"0", "-1", "1e9"})},
                         {"--json", K::kOutputFile, {}},
                         {"--trace", K::kOutputFile, {}},
                         {"--op-timeout", K::kFloat, kNotANumber}};
  compass_run.bases = {{"--ranks", "2", "--model", "gpt-tiny", "--batch", "2", "--seq", "32",
                        "--steps", "1", "--strategy", "none", "--time-scale", "10", "--json",
                        out + "compass_run.json"}};
  t.push_back(compass_run);

  // ---- xema ----
  auto trace_source = [](std::vector<OptionSpec> more) {
    std::vector<OptionSpec> o = {{"--trace", K::kInputFile, {}},
                                 {"--analytic", K::kText, {}},
                                 {"--size", K::kText, {}},
                                 {"--frames", K::kInt, {}},
                                 {"--steps", K::kInt, {}},
                                 {"--cfg", K::kText, {}},
                                 {"--unfused-attention", K::kFlag, {}}};
    Append(&o, more);
    return o;
  };
  SubcommandSpec intervals = Spec("intervals", MpiUse::kNone, 6,
                                  trace_source({{"--budget", K::kText, {}},
                                                {"--reserve", K::kText, {}},
                                                {"--json", K::kOutputFile, {}}}));
  intervals.group = "xema";
  intervals.bases = {{"--trace", s.trace, "--budget", "40MiB"},
                     {"--trace", s.trace, "--budget", "1GiB", "--json", out + "intervals.json"},
                     {"--analytic", "flux2-dev", "--steps", "2", "--budget", "141GB"}};
  t.push_back(intervals);

  SubcommandSpec layout = Spec("layout", MpiUse::kNone, 6,
                               trace_source({{"--algo", K::kText, {}},
                                             {"--milp-time-limit", K::kFloat, {}},
                                             {"--out", K::kOutputFile, {}},
                                             {"--json", K::kOutputFile, {}}}));
  layout.group = "xema";
  layout.bases = {
      {"--trace", s.trace, "--algo", "tflite"},
      {"--trace", s.trace, "--algo", "all", "--milp-time-limit", "2", "--out", out + "layout.json"},
      {"--analytic", "cogvideox-5b", "--steps", "2", "--algo", "xla", "--json",
       out + "layout_cmp.json"}};
  t.push_back(layout);

  SubcommandSpec allocsim = Spec("allocsim", MpiUse::kNone, 6,
                                 trace_source({{"--policy", K::kText, {}},
                                               {"--device-memory", K::kText, {}},
                                               {"--json", K::kOutputFile, {}}}));
  allocsim.group = "xema";
  allocsim.bases = {{"--trace", s.trace},
                    {"--trace", s.trace, "--policy", "pytorch:expandable_segments", "--json",
                     out + "allocsim.json"},
                    {"--analytic", "ltx-2", "--steps", "2", "--policy",
                     "pytorch,max_split_size_mb=64", "--device-memory", "141GB"}};
  t.push_back(allocsim);

  // trace and check run the tiny pipeline for real: bases are tiny (16x16, 1 step) so a case
  // stays well under a second; check reruns it about six times.
  auto request = [](std::vector<OptionSpec> more) {
    std::vector<OptionSpec> o = {{"--model", K::kText, {}},     {"--size", K::kText, {}},
                                 {"--frames", K::kInt, {}},     {"--steps", K::kInt, {}},
                                 {"--cfg", K::kText, {}},       {"--guidance", K::kFloat, {}},
                                 {"--prompt", K::kText, {}},    {"--seed", K::kUint, {}},
                                 {"--attention", K::kText, {}}, {"--attention-chunks", K::kInt, {}},
                                 {"--vae-slices", K::kInt, {}}, {"--ffn-chunks", K::kInt, {}},
                                 {"--vae-tiles", K::kInt, {}}};
    Append(&o, more);
    return o;
  };
  // --offload runs over an emulated host link: its base fixes a fast time scale (the slowest link
  // a case can ask for, 1e-3 GB/s at scale 10, moves its few KiB in about a second).
  SubcommandSpec trace = Spec("trace", MpiUse::kNone, 3,
                              request({{"--out", K::kOutputFile, {}},
                                       {"--timeline", K::kOutputFile, {}},
                                       {"--analytic", K::kText, {}},
                                       {"--offload", K::kText, {}},
                                       {"--host-gbps", K::kFloat, {}},
                                       {"--time-scale", K::kFloat, {}}}));
  trace.group = "xema";
  trace.bases = {
      {"--size", "16x16", "--steps", "1", "--out", out + "trace.json"},
      {"--size", "16x16", "--steps", "1", "--offload", "text,latent,image,weights", "--time-scale",
       "10", "--out", out + "trace.json"},
      {"--model", "tiny-t2v", "--size", "16x16", "--frames", "5", "--steps", "1", "--vae-slices",
       "2", "--out", out + "trace.json", "--timeline", out + "timeline.csv"},
      {"--size", "32x16", "--steps", "1", "--ffn-chunks", "3", "--vae-tiles", "2", "--out",
       out + "trace.json"}};
  t.push_back(trace);

  SubcommandSpec check =
      Spec("check", MpiUse::kNone, 2,
           request({{"--milp-time-limit", K::kFloat, {}}, {"--json", K::kOutputFile, {}}}));
  check.group = "xema";
  check.bases = {{"--size", "16x16", "--steps", "1", "--cfg", "off", "--json", out + "check.json"}};
  t.push_back(check);

  // mitigate profiles every candidate: a 16x16 one-step template keeps a case under a second.
  SubcommandSpec mitigate = Spec("mitigate", MpiUse::kNone, 2,
                                 request({{"--budget", K::kText, {}},
                                          {"--reserve", K::kText, {}},
                                          {"--repeats", K::kInt, {}},
                                          {"--profile-steps", K::kInt, {}},
                                          {"--consider-offload", K::kFlag, {}},
                                          {"--host-gbps", K::kFloat, {}},
                                          {"--time-scale", K::kFloat, {}},
                                          {"--json", K::kOutputFile, {}}}));
  mitigate.group = "xema";
  mitigate.bases = {{"--size", "16x16", "--steps", "1", "--cfg", "off", "--budget", "40MiB",
                     "--repeats", "1", "--json", out + "mitigate.json"},
                    {"--size", "16x16", "--steps", "1", "--cfg", "off", "--budget", "40MiB",
                     "--repeats", "1", "--consider-offload", "--time-scale", "50"}};
  t.push_back(mitigate);

  // serve listens for 0.2 s on a free port of the loopback (kept), then stops by itself.
  SubcommandSpec serve = Spec("serve", MpiUse::kNone, 2,
                              {{"--host", K::kText, {}},
                               {"--port", K::kInt, {}},
                               {"--policy", K::kText, {}},
                               {"--budget", K::kText, {}},
                               {"--devices", K::kInt, {}},
                               {"--queue", K::kInt, {}},
                               {"--max-requests", K::kInt, {}},
                               {"--duration-s", K::kFloat, {}},
                               {"--max-body-bytes", K::kText, {}},
                               {"--header-deadline-s", K::kFloat, {}},
                               {"--body-deadline-s", K::kFloat, {}},
                               {"--max-header-bytes", K::kText, {}},
                               {"--max-header-count", K::kInt, {}},
                               {"--max-connections", K::kInt, {}},
                               {"--drain-deadline-s", K::kFloat, {}},
                               {"--host-gbps", K::kFloat, {}},
                               {"--time-scale", K::kFloat, {}},
                               {"--plan", K::kInputFile, {}},
                               {"--warm-up", K::kInputFile, {}}});
  serve.group = "xema";
  serve.bases = {
      {"--host", "127.0.0.1", "--port", "0", "--budget", "256MiB", "--duration-s", "0.2"},
      {"--host", "127.0.0.1", "--port", "0", "--policy", "static", "--budget", "1GiB", "--devices",
       "2", "--queue", "4", "--max-requests", "1", "--duration-s", "0.2"}};
  serve.keep = {"--host", "--port", "--duration-s"};
  t.push_back(serve);

  // loadgen needs a server: no base passes here (needs_server); a closed port of the loopback
  // (kept) answers "cannot reach" at once.
  SubcommandSpec loadgen = Spec("loadgen", MpiUse::kNone, 2,
                                {{"--url", K::kText, {}},
                                 {"--rate", K::kFloat, {}},
                                 {"--arrivals", K::kText, {}},
                                 {"--cv", K::kFloat, {}},
                                 {"--mix", K::kInputFile, {}},
                                 {"--trace", K::kInputFile, {}},
                                 {"--duration", K::kFloat, {}},
                                 {"--seed", K::kUint, {}},
                                 {"--slo-scale", K::kFloat, {}},
                                 {"--slo-reference", K::kText, {}},
                                 {"--json", K::kOutputFile, {}}});
  loadgen.group = "xema";
  loadgen.needs_server = true;
  loadgen.bases = {
      {"--url", "http://127.0.0.1:1", "--mix", s.mix, "--duration", "1"},
      {"--url", "http://127.0.0.1:1", "--mix", s.mix, "--arrivals", "gamma", "--cv", "2", "--rate",
       "2", "--duration", "1", "--seed", "3", "--slo-scale", "4", "--json", out + "loadgen.json"}};
  loadgen.keep = {"--url"};
  t.push_back(loadgen);

  // bench starts in-process servers: one policy, one short point keeps a case about 3 s.
  SubcommandSpec xema_bench = Spec("bench", MpiUse::kNone, 2,
                                   {{"--policies", K::kText, {}},
                                    {"--budgets", K::kText, {}},
                                    {"--rates", K::kText, {}},
                                    {"--slo-scales", K::kText, {}},
                                    {"--mix", K::kInputFile, {}},
                                    {"--duration", K::kFloat, {}},
                                    {"--seed", K::kUint, {}},
                                    {"--devices", K::kInt, {}},
                                    {"--queue", K::kInt, {}},
                                    {"--host-gbps", K::kFloat, {}},
                                    {"--time-scale", K::kFloat, {}},
                                    {"--json", K::kOutputFile, {}}});
  xema_bench.group = "xema";
  xema_bench.bases = {{"--policies", "none", "--budgets", "256MiB", "--rates", "2", "--mix", s.mix,
                       "--duration", "0.5", "--json", out + "bench.json"}};
  // The default duration (20 s a point) and the default six policies outlast a case.
  xema_bench.keep = {"--duration", "--policies"};
  t.push_back(xema_bench);
  // plan profiles the mix for real: one timed run, no concurrency, a one-second trace.
  SubcommandSpec xema_plan = Spec("plan", MpiUse::kNone, 2,
                                  {{"--mix", K::kInputFile, {}},
                                   {"--device", K::kText, {}},
                                   {"--budget", K::kText, {}},
                                   {"--devices", K::kInt, {}},
                                   {"--rate", K::kFloat, {}},
                                   {"--slo-scale", K::kFloat, {}},
                                   {"--duration", K::kFloat, {}},
                                   {"--seed", K::kUint, {}},
                                   {"--queue", K::kInt, {}},
                                   {"--max-concurrency", K::kInt, {}},
                                   {"--max-sp", K::kInt, {}},
                                   {"--max-batch", K::kInt, {}},
                                   {"--timing-runs", K::kInt, {}},
                                   {"--overhead", K::kFloat, {}},
                                   {"--grid", K::kText, {}},
                                   {"--out", K::kOutputFile, {}},
                                   {"--json", K::kOutputFile, {}}});
  xema_plan.group = "xema";
  xema_plan.bases = {{"--mix", s.mix, "--budget", "256MiB", "--max-concurrency", "1",
                      "--timing-runs", "1", "--duration", "1", "--out", out + "plan.json"}};
  xema_plan.keep = {"--max-concurrency", "--timing-runs"};  // a case stays a few seconds
  t.push_back(xema_plan);
  // deployed is modeled: one device, GPU count, model and load keep a case under a second.
  SubcommandSpec xema_deployed = Spec("deployed", MpiUse::kNone, 2,
                                      {{"--devices", K::kText, {}},
                                       {"--gpus", K::kText, {}},
                                       {"--models", K::kText, {}},
                                       {"--loads", K::kText, {}},
                                       {"--policies", K::kText, {}},
                                       {"--slo-scale", K::kFloat, {}},
                                       {"--requests", K::kFloat, {}},
                                       {"--seed", K::kUint, {}},
                                       {"--max-batch", K::kInt, {}},
                                       {"--max-concurrency", K::kInt, {}},
                                       {"--offload-host-gbps", K::kFloat, {}},
                                       {"--json", K::kOutputFile, {}}});
  xema_deployed.group = "xema";
  xema_deployed.bases = {{"--devices", "h100-80g", "--gpus", "1", "--models", "cogvideox-5b",
                          "--loads", "0.5", "--requests", "50", "--json", out + "deployed.json"}};
  xema_deployed.keep = {"--devices", "--gpus", "--models", "--loads", "--requests"};
  t.push_back(xema_deployed);
  // abuse needs a server too (needs_server): the closed port answers "cannot reach" at once.
  SubcommandSpec abuse = Spec("abuse", MpiUse::kNone, 2,
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
  abuse.group = "xema";
  abuse.needs_server = true;
  abuse.bases = {{"--url", "http://127.0.0.1:1", "--requests", "10", "--connections", "4"},
                 {"--url", "http://127.0.0.1:1", "--requests", "20", "--connections", "2", "--seed",
                  "3", "--server-pid", "1", "--rss-bound", "8MiB", "--json", out + "abuse.json"}};
  abuse.keep = {"--url"};
  t.push_back(abuse);

  table_internal::AppendLaterSystems(s, out, &t);
  return t;
}

}  // namespace tessera::fuzz
