// Command-line options describing the SmallDit the profiler, validate and compare run
// (--hidden, --heads, --layers, --ffn, --channels), shared so every subcommand names and
// checks them alike. Plain values.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>

#include "core/status.h"
#include "models/small_dit.h"
#include "zellige/profile.h"

namespace tessera::cli {

struct SmallDitArgs {
  int64_t hidden = 256;
  int64_t heads = 4;
  int64_t layers = 4;
  int64_t ffn = 1024;
  int64_t channels = 16;
  uint64_t init_seed = 1;
};

void AddSmallDitOptions(CLI::App* app, SmallDitArgs* a);
// InvalidArgument when a size is < 1 or heads does not divide hidden.
core::Status ValidateSmallDitArgs(const SmallDitArgs& a);
models::SmallDitConfig ToSmallDitConfig(const SmallDitArgs& a);
zellige::ProfileModel ToProfileModel(const SmallDitArgs& a);

}  // namespace tessera::cli
