#include "cli/zellige/cost_model_args.h"

#include "hw/cluster.h"
#include "models/dit_spec.h"
#include "zellige/profile.h"

namespace tessera::cli {

void AddCostModelOptions(CLI::App* cmd, CostModelArgs* args, CommandPaths* paths) {
  if (paths != nullptr) {
    paths->RecordInput("--cluster", &args->cluster);
    paths->RecordInput("--model", &args->model);
    paths->RecordInput("--profile", &args->profile);
  }
  cmd->add_option(
      "--cluster", args->cluster,
      std::string("preset (a800x8, a800x16, a6000x32, h100x64) or JSON file; default ") +
          kDefaultCluster + "; not with --profile");
  cmd->add_option(
      "--model", args->model,
      std::string("DiT preset or JSON file; default ") + kDefaultModel + "; not with --profile");
  cmd->add_option("--profile", args->profile,
                  "price with a measured profile (`tessera zellige profile`) instead of the "
                  "analytic model; its machine is the cluster, its SmallDit the model; pass a "
                  "small --load (e.g. 2000)");
}

core::StatusOr<std::unique_ptr<zellige::CostModel>> MakeCostModel(const std::string& cluster_arg,
                                                                  const std::string& model_arg,
                                                                  const std::string& profile_arg) {
  if (!profile_arg.empty()) {
    if (!cluster_arg.empty()) {
      return core::InvalidArgument("--cluster: got '" + cluster_arg +
                                   "', cannot be combined with --profile (the profile's machine "
                                   "is the cluster)");
    }
    if (!model_arg.empty()) {
      return core::InvalidArgument("--model: got '" + model_arg +
                                   "', cannot be combined with --profile (the profile's SmallDit "
                                   "is the model)");
    }
    ASSIGN_OR_RETURN(zellige::Profile profile, zellige::LoadProfile(profile_arg));
    return zellige::MakeProfileCostModel(
        std::make_shared<const zellige::Profile>(std::move(profile)));
  }
  ASSIGN_OR_RETURN(hw::Cluster cluster,
                   hw::LoadCluster(cluster_arg.empty() ? kDefaultCluster : cluster_arg));
  ASSIGN_OR_RETURN(models::DitModel model,
                   models::LoadDitModel(model_arg.empty() ? kDefaultModel : model_arg));
  return zellige::MakeAnalyticCostModel(std::move(cluster), std::move(model));
}

core::StatusOr<std::unique_ptr<zellige::CostModel>> MakeCostModel(const CostModelArgs& args) {
  return MakeCostModel(args.cluster, args.model, args.profile);
}

std::string DescribeCostModel(const zellige::CostModel& cost) {
  if (cost.profile() != nullptr) {
    return "profile-priced cost model (" + cost.cluster().provenance + ")";
  }
  return "analytic cost model on a cluster profile " + cost.cluster().provenance;
}

}  // namespace tessera::cli
