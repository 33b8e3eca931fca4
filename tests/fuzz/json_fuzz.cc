#include "json_fuzz.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "command_table.h"
#include "json_mutator.h"

namespace tessera::fuzz {
namespace {

using Cmd = std::vector<std::string>;

core::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::Internal(path + ": cannot read");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

std::vector<JsonTarget> JsonTargets(const SampleFiles& s) {
  const std::string out = s.out_dir + "/";
  std::vector<JsonTarget> t;
  auto add = [&t](std::string kind, std::string file, int weight, std::vector<Cmd> commands) {
    JsonTarget target;
    target.kind = std::move(kind);
    target.file = std::move(file);
    target.weight = weight;
    target.commands = std::move(commands);
    t.push_back(std::move(target));
    return &t.back();
  };
  auto run = [](const Cmd& more) {
    Cmd c = {"run", "--steps", "1"};
    c.insert(c.end(), more.begin(), more.end());
    return c;
  };
  const std::vector<Cmd> cluster_cmds = {
      {"plan", "--cluster", "{M}", "--planner", "usp"},
      {"plan", "--cluster", "{M}", "--planner", "dp", "--json", out + "plan.json"},
      {"simulate", "--cluster", "{M}", "--batch", s.batch, "--plan", s.plan},
      {"bench-planner", "--cluster", "{M}", "--mixes", "v50", "--batches", "1", "--skip-joint"}};
  add("cluster", s.cluster, 12, cluster_cmds);
  add("cluster", s.cluster1, 3,
      {run({"--cluster", "{M}", "--workload", "v50", "--planner", "usp", "--token-scale",
            "0.002"})});
  add("device", s.device_cluster, 8, cluster_cmds)->focus = "/device";
  // Presets by name, from $TESSERA_DATA_DIR: a800x8 and the device it names.
  add("cluster preset", s.cluster, 3,
      {{"plan", "--cluster", "a800x8", "--planner", "usp"},
       {"bench-planner", "--cluster", "a800x8", "--mixes", "v50", "--batches", "1",
        "--skip-joint"}})
      ->preset = "hw/clusters/a800x8.json";
  add("device preset", s.device, 4,
      {{"plan", "--cluster", s.cluster, "--planner", "usp"},
       {"simulate", "--cluster", s.cluster, "--batch", s.batch, "--plan", s.plan}})
      ->preset = "hw/devices/a800-sxm4-80gb.json";
  add("model", s.model, 10,
      {{"plan", "--cluster", s.cluster, "--model", "{M}", "--planner", "usp"},
       {"simulate", "--cluster", s.cluster, "--model", "{M}", "--batch", s.batch, "--plan", s.plan},
       {"bench-planner", "--cluster", s.cluster, "--model", "{M}", "--mixes", "v50", "--batches",
        "1", "--skip-joint"}});
  add("batch", s.batch, 12,
      {{"simulate", "--cluster", s.cluster, "--batch", "{M}", "--plan", s.plan},
       {"plan", "--cluster", s.cluster, "--workload", "{M}", "--planner", "usp", "--save-plan",
        out + "p.json"}});
  add("batch", s.batch1, 3, {run({"--workload", "{M}", "--planner", "usp"})});
  add("plan", s.plan, 14,
      {{"simulate", "--cluster", s.cluster, "--batch", s.batch, "--plan", "{M}"},
       {"simulate", "--cluster", s.cluster, "--batch", s.batch, "--plan", "{M}", "--trace",
        out + "t.json"}});
  add("plan", s.plan1, 4, {run({"--plan", "{M}"})});
  for (const std::string& p : s.run_plans) add("plan", p, 1, {run({"--plan", "{M}"})});
  add("profile", s.profile, 12,
      {{"plan", "--profile", "{M}", "--load", "2000", "--planner", "usp"},
       {"simulate", "--profile", "{M}", "--batch", s.batch_profile, "--plan", s.plan_profile},
       {"bench-planner", "--profile", "{M}", "--load", "2000", "--mixes", "v50", "--batches", "1",
        "--skip-joint"}});
  // validate / compare: the sample was measured with 2 ranks and hidden 256, so --ranks 3
  // --hidden 128 is refused once the profile is read, before mpiexec.
  add("profile", s.profile, 2,
      {{"validate", "--profile", "{M}", "--ranks", "3", "--hidden", "128"},
       {"compare", "--profile", "{M}", "--ranks", "3", "--hidden", "128"}});
  // Compass: a topology file (links also reads it before mpiexec; --ranks 9 is refused for
  // any topology of at most 8 devices, and the harness keeps mpiexec off the PATH).
  add("topology", s.topology, 8,
      {{"topo", "--topology", "{M}"},
       {"topo", "--topology", "{M}", "--tp", "2", "--json", out + "topo.json"},
       {"links", "--topology", "{M}", "--ranks", "9"}})
      ->group = "compass";
  // Xema: a memory trace.
  add("trace", s.trace, 10,
      {{"intervals", "--trace", "{M}", "--budget", "40MiB"},
       {"layout", "--trace", "{M}", "--algo", "tflite", "--out", out + "layout.json"},
       {"allocsim", "--trace", "{M}", "--json", out + "allocsim.json"}})
      ->group = "xema";
  return t;
}

core::StatusOr<FuzzCase> MakeJsonCase(int index, const std::vector<JsonTarget>& targets,
                                      const SampleFiles& s, core::Rng& rng) {
  int total = 0;
  for (const JsonTarget& t : targets) total += t.weight;
  int r = static_cast<int>(rng.Below(total));
  const JsonTarget* target = &targets.back();
  for (const JsonTarget& t : targets) {
    if (r < t.weight) {
      target = &t;
      break;
    }
    r -= t.weight;
  }
  ASSIGN_OR_RETURN(std::string text, ReadText(target->file));
  // Device edits go under /device most of the time; the rest anywhere.
  const std::string focus = rng.Below(5) == 0 ? "" : target->focus;
  JsonMutation m = MutateJson(text, focus, rng);
  FuzzCase c;
  c.index = index;
  c.family = Family::kJson;
  const std::string stem = s.mut_dir + "/case-" + std::to_string(index);
  std::string path = stem + ".json";
  c.case_files.push_back(path);
  if (!target->preset.empty()) {
    path = stem + "/" + target->preset;
    c.case_files = {stem};
    c.env.push_back("TESSERA_DATA_DIR=" + stem);
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  }
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(m.text.data(), static_cast<std::streamsize>(m.text.size()));
    if (!f) return core::Internal(path + ": cannot write");
  }
  const Cmd& cmd = target->commands[rng.Below(target->commands.size())];
  c.subcommand = cmd[0];
  c.args = {target->group};
  for (size_t i = 0; i < cmd.size(); ++i) {
    c.args.push_back(cmd[i] == "{M}" ? path : cmd[i]);
    if (i == 0 || cmd[i].rfind("--", 0) == 0) continue;
    const std::string& option = cmd[i - 1];
    const bool output = option == "--json" || option == "--save-plan" || option == "--save-batch" ||
                        option == "--out" || (option == "--trace" && target->group == "zellige");
    (output ? c.outputs : c.inputs).push_back(c.args.back());
  }
  if (c.subcommand == "validate" || c.subcommand == "compare" || c.subcommand == "links") {
    c.env.push_back(kNoMpiexecPath);
  }
  const size_t slash = target->file.find_last_of('/');
  c.what = target->file.substr(slash + 1) + ": " + m.description;
  c.signature = "json " + target->kind + " -> " + c.subcommand;
  return c;
}

}  // namespace tessera::fuzz
