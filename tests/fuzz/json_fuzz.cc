#include "json_fuzz.h"

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
  const Cmd run = {"run", "--steps", "1"};
  auto with = [](Cmd a, const Cmd& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  std::vector<JsonTarget> t;
  const std::vector<Cmd> cluster_cmds = {
      {"plan", "--cluster", "{M}", "--planner", "usp"},
      {"plan", "--cluster", "{M}", "--planner", "dp", "--json", out + "plan.json"},
      {"simulate", "--cluster", "{M}", "--batch", s.batch, "--plan", s.plan},
      {"bench-planner", "--cluster", "{M}", "--mixes", "v50", "--batches", "1", "--skip-joint"}};
  t.push_back({"cluster", s.cluster, "", 12, cluster_cmds});
  t.push_back({"cluster",
               s.cluster1,
               "",
               3,
               {with(run, {"--cluster", "{M}", "--workload", "v50", "--planner", "usp",
                           "--token-scale", "0.002"})}});
  t.push_back({"device", s.device_cluster, "/device", 10, cluster_cmds});
  t.push_back({"model",
               s.model,
               "",
               10,
               {{"plan", "--cluster", s.cluster, "--model", "{M}", "--planner", "usp"},
                {"simulate", "--cluster", s.cluster, "--model", "{M}", "--batch", s.batch, "--plan",
                 s.plan},
                {"bench-planner", "--cluster", s.cluster, "--model", "{M}", "--mixes", "v50",
                 "--batches", "1", "--skip-joint"}}});
  t.push_back({"batch",
               s.batch,
               "",
               12,
               {{"simulate", "--cluster", s.cluster, "--batch", "{M}", "--plan", s.plan},
                {"plan", "--cluster", s.cluster, "--workload", "{M}", "--planner", "usp",
                 "--save-plan", out + "p.json"}}});
  t.push_back({"batch", s.batch1, "", 3, {with(run, {"--workload", "{M}", "--planner", "usp"})}});
  t.push_back({"plan",
               s.plan,
               "",
               14,
               {{"simulate", "--cluster", s.cluster, "--batch", s.batch, "--plan", "{M}"},
                {"simulate", "--cluster", s.cluster, "--batch", s.batch, "--plan", "{M}", "--trace",
                 out + "t.json"}}});
  t.push_back({"plan", s.plan1, "", 4, {with(run, {"--plan", "{M}"})}});
  for (const std::string& p : s.run_plans)
    t.push_back({"plan", p, "", 1, {with(run, {"--plan", "{M}"})}});
  t.push_back(
      {"profile",
       s.profile,
       "",
       12,
       {{"plan", "--profile", "{M}", "--load", "2000", "--planner", "usp"},
        {"simulate", "--profile", "{M}", "--batch", s.batch_profile, "--plan", s.plan_profile},
        {"bench-planner", "--profile", "{M}", "--load", "2000", "--mixes", "v50", "--batches", "1",
         "--skip-joint"}}});
  // validate / compare: the sample was measured with 2 ranks and hidden 256, so --ranks 3
  // --hidden 128 is refused once the profile is read, before mpiexec.
  t.push_back({"profile",
               s.profile,
               "",
               2,
               {{"validate", "--profile", "{M}", "--ranks", "3", "--hidden", "128"},
                {"compare", "--profile", "{M}", "--ranks", "3", "--hidden", "128"}}});
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
  const std::string path = s.mut_dir + "/case-" + std::to_string(index) + ".json";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(m.text.data(), static_cast<std::streamsize>(m.text.size()));
    if (!f) return core::Internal(path + ": cannot write");
  }
  c.case_files.push_back(path);
  const Cmd& cmd = target->commands[rng.Below(target->commands.size())];
  c.subcommand = cmd[0];
  c.args = {"zellige"};
  for (size_t i = 0; i < cmd.size(); ++i) {
    c.args.push_back(cmd[i] == "{M}" ? path : cmd[i]);
    if (i == 0 || cmd[i].rfind("--", 0) == 0) continue;
    const std::string& option = cmd[i - 1];
    const bool output = option == "--json" || option == "--trace" || option == "--save-plan" ||
                        option == "--save-batch";
    (output ? c.outputs : c.inputs).push_back(c.args.back());
  }
  if (c.subcommand == "validate" || c.subcommand == "compare") c.env.push_back(kNoMpiexecPath);
  const size_t slash = target->file.find_last_of('/');
  c.what = target->file.substr(slash + 1) + ": " + m.description;
  c.signature = "json " + target->kind + " -> " + c.subcommand;
  return c;
}

}  // namespace tessera::fuzz
