#include "cli/compass/compass_options.h"

namespace tessera::cli {

void AddTopologyOption(CLI::App* c, std::string* topology, CommandPaths* paths) {
  c->add_option("--topology", *topology,
                "a topology preset (a6000x8, h100x8, rtx4090x4) or a topology JSON file")
      ->capture_default_str();
  paths->RecordInput("--topology", topology);
}

void AddEmulatorOptions(CLI::App* c, double* time_scale, double* op_timeout_s) {
  c->add_option("--time-scale", *time_scale,
                "emulated seconds per device second (default: measured from this core's GEMM)")
      ->check(Number(1e-3, 1e7));
  c->add_option("--op-timeout", *op_timeout_s, "seconds before a stuck op aborts the job")
      ->check(PositiveNumber(kMaxOpTimeoutS))
      ->capture_default_str();
}

}  // namespace tessera::cli
