// The request template a `tessera xema` command runs on the tiny diffusion pipeline:
// --model tiny-t2i|tiny-t2v|FILE --size WxH [--frames F] --steps N [--cfg on|off] [--guidance G]
// [--prompt TEXT] [--seed S] [--attention fused|chunked] [--attention-chunks K]
// [--vae-slices N] [--ffn-chunks K] [--vae-tiles T]. Values are checked by the library
// (ValidateRequest), so the messages are the same from every entry point.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "core/status.h"
#include "xema/pipeline/tiny_pipeline.h"

namespace tessera::cli {

struct RequestArgs {
  std::string model = "tiny-t2i";
  std::string size = "64x64";
  int64_t frames = 1;
  int64_t steps = 4;
  std::string cfg = "on";
  double guidance = 4.0;
  std::string prompt = "a red cube on a wooden table";
  uint64_t seed = 1;
  std::string attention = "fused";
  int64_t attention_chunks = 1;
  int64_t vae_slices = 1;
  int64_t ffn_chunks = 1;
  int64_t vae_tiles = 1;
};

void AddRequestOptions(CLI::App* app, RequestArgs* args);
// The request for `spec` (its name becomes request.model), validated against it.
core::StatusOr<xema::DiffusionRequest> ToRequest(const RequestArgs& args,
                                                 const xema::TinyModelSpec& spec);

}  // namespace tessera::cli
