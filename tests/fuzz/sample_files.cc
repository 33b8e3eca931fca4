#include "sample_files.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "process_runner.h"

namespace tessera::fuzz {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using core::Status;
using core::StatusOr;

StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::NotFound(path + ": cannot read");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return core::Internal(path + ": cannot write");
  return Status::Ok();
}

StatusOr<Json> ReadJson(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadText(path));
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return core::InvalidArgument(path + ": not JSON");
  return j;
}

Status Copy(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) return core::Internal("copy " + from + " -> " + to + ": " + ec.message());
  return Status::Ok();
}

// Runs `bin group args...` in root; error unless it exits 0.
Status Tessera(const std::string& bin, const std::string& root,
               const std::vector<std::string>& args, const std::string& group = "zellige") {
  ProcessSpec spec;
  spec.argv = {bin, group};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = EnvironmentWith({"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"});
  spec.cwd = root;
  spec.timeout_s = 120;
  ProcessResult r = RunProcess(spec);
  std::string cmd;
  for (const std::string& a : spec.argv) cmd += (cmd.empty() ? "" : " ") + a;
  if (!r.started) return core::Internal(cmd + ": " + r.start_error);
  if (r.timed_out || r.exit_code != 0) {
    return core::Internal(cmd + ": " + (r.timed_out ? "timed out" : "failed") + ": " +
                          r.stderr_text);
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> SampleFiles::AllInputs() const {
  std::vector<std::string> v = {cluster, cluster1, device_cluster, model,         batch,       plan,
                                batch1,  plan1,    profile,        batch_profile, plan_profile};
  v.insert(v.end(), run_plans.begin(), run_plans.end());
  v.push_back(topology);
  v.push_back(trace);
  v.push_back(mix);
  v.push_back(tarot_scene);
  return v;
}

StatusOr<SampleFiles> SetUpSamples(const std::string& bin, const std::string& source_dir,
                                   const std::string& root_arg) {
  std::error_code ec;
  fs::create_directories(root_arg, ec);
  if (ec) return core::InvalidArgument("--workdir: " + root_arg + ": " + ec.message());
  const std::string root = fs::canonical(root_arg, ec).string();
  if (ec) return core::InvalidArgument("--workdir: " + root_arg + ": " + ec.message());
  if (!fs::is_empty(root, ec)) {
    return core::InvalidArgument("--workdir: " + root + " is not empty (the harness checks " +
                                 "that cases leave no files behind, so it needs its own folder)");
  }
  SampleFiles s;
  s.root = root;
  s.in_dir = root + "/in";
  s.out_dir = root + "/out";
  s.mut_dir = root + "/mut";
  s.harness_dir = root + "/.harness";
  for (const std::string& d : {s.in_dir, s.out_dir, s.mut_dir, s.harness_dir}) {
    fs::create_directories(d, ec);
    if (ec) return core::Internal(d + ": " + ec.message());
  }
  const std::string in = s.in_dir + "/";
  const fs::path src(source_dir);

  // Repository data.
  s.cluster = in + "cluster.json";
  RETURN_IF_ERROR(Copy(src / "data/hw/clusters/a800x8.json", s.cluster));
  ASSIGN_OR_RETURN(Json cluster, ReadJson(s.cluster));
  Json one = cluster;
  one["name"] = "a800x1";
  one["ranks_per_node"] = 1;
  s.cluster1 = in + "cluster1.json";
  RETURN_IF_ERROR(WriteText(s.cluster1, one.dump(2) + "\n"));
  s.device = in + "device.json";
  RETURN_IF_ERROR(Copy(src / "data/hw/devices/a800-sxm4-80gb.json", s.device));
  ASSIGN_OR_RETURN(Json device, ReadJson(s.device));
  Json inline_device = cluster;
  inline_device["device"] = device;
  s.device_cluster = in + "device_cluster.json";
  RETURN_IF_ERROR(WriteText(s.device_cluster, inline_device.dump(2) + "\n"));
  s.profile = in + "profile.json";
  RETURN_IF_ERROR(Copy(src / "src/zellige/testdata/profile_2rank.json", s.profile));
  s.topology = in + "topology.json";
  RETURN_IF_ERROR(Copy(src / "data/hw/topologies/a6000x8.json", s.topology));
  s.compass_grid = in + "compass_grid.json";
  RETURN_IF_ERROR(Copy(src / "src/cli/testdata/compass_tiny_grid.json", s.compass_grid));
  s.trace = in + "trace.json";
  RETURN_IF_ERROR(Copy(src / "src/xema/testdata/tiny_t2i.json", s.trace));
  s.mix = in + "mix.json";
  RETURN_IF_ERROR(Copy(src / "src/xema/serve/testdata/tiny_mix.json", s.mix));
  for (const char* name : {"mixed4.json", "illegal_config4.json", "train_mixed2.json"}) {
    s.run_plans.push_back(in + "run_" + name);
    RETURN_IF_ERROR(Copy(src / "src/cli/testdata" / name, s.run_plans.back()));
  }

  // Files tessera writes.
  s.plan = in + "plan.json";
  s.batch = in + "batch.json";
  const std::string plan_out = s.harness_dir + "/plan_result.json";
  RETURN_IF_ERROR(Tessera(bin, root,
                          {"plan", "--cluster", s.cluster, "--workload", "v50", "--planner", "usp",
                           "--save-plan", s.plan, "--save-batch", s.batch, "--json", plan_out}));
  ASSIGN_OR_RETURN(Json result, ReadJson(plan_out));
  if (!result.contains("model")) return core::Internal(plan_out + ": no \"model\"");
  s.model = in + "model.json";
  RETURN_IF_ERROR(WriteText(s.model, result["model"].dump(2) + "\n"));
  s.plan1 = in + "plan1.json";
  s.batch1 = in + "batch1.json";
  RETURN_IF_ERROR(Tessera(bin, root,
                          {"plan", "--cluster", s.cluster1, "--load", "2000", "--planner", "usp",
                           "--save-plan", s.plan1, "--save-batch", s.batch1}));
  s.plan_profile = in + "plan_profile.json";
  s.batch_profile = in + "batch_profile.json";
  RETURN_IF_ERROR(Tessera(bin, root,
                          {"plan", "--profile", s.profile, "--load", "2000", "--planner", "usp",
                           "--save-plan", s.plan_profile, "--save-batch", s.batch_profile}));

  const std::string scenes = s.harness_dir + "/tarot";
  RETURN_IF_ERROR(
      Tessera(bin, root, {"scenes", "--seed", "1", "--n", "1", "--out", scenes}, "tarot"));
  s.tarot_image = in + "tarot_scene.png";
  RETURN_IF_ERROR(Copy(scenes + "/scene_0000.png", s.tarot_image));
  s.tarot_scene = in + "tarot_scene.json";
  RETURN_IF_ERROR(Copy(scenes + "/scene_0000.json", s.tarot_scene));

  s.kf_trace = in + "kf_trace.jsonl";
  RETURN_IF_ERROR(Tessera(bin, root,
                          {"trace", "gen", "--seed", "1", "--sessions", "3", "--mean-turns", "3",
                           "--initial-context-median", "2000", "--out", s.kf_trace},
                          "kernelflume"));

  s.kf_profile = in + "kf_profile.json";
  RETURN_IF_ERROR(WriteText(
      s.kf_profile,
      R"({"kind": "kernelflume-engine-profile", "version": 1, "base_s": 0.004, "per_request_s": )"
      R"(0.0015, "per_kv_token_s": 0, "per_prefill_token_s": 0.0004, "per_prefill_pair_s": 1e-7})"
      "\n"));

  // Awkward paths.
  s.dir = in + "a_folder";
  fs::create_directory(s.dir, ec);
  s.empty_file = in + "empty.json";
  RETURN_IF_ERROR(WriteText(s.empty_file, ""));
  s.loop = in + "loop_a";
  fs::create_symlink("loop_b", s.loop, ec);
  fs::create_symlink("loop_a", in + "loop_b", ec);
  s.dangling = in + "dangling.json";
  fs::create_symlink("no_such_target.json", s.dangling, ec);
  s.link_to_cluster = in + "link_to_cluster.json";
  fs::create_symlink("cluster.json", s.link_to_cluster, ec);
  if (ec) return core::Internal("symlinks in " + s.in_dir + ": " + ec.message());
  s.missing = in + "missing.json";
  s.missing_dir_file = s.out_dir + "/no_such_folder/out.json";
  s.long_name = s.out_dir + "/" + std::string(295, 'n') + ".json";
  return s;
}

}  // namespace tessera::fuzz
