// Shared by dit_training_test.cc (fake ranks) and dit_training_mpi_test.cc (MPI): a tiny
// SmallDit, a 2-rank plan mixing whole and split sequences, the single-process reference
// loss curve and a distributed run on one rank. Test-only.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.h"
#include "core/status.h"
#include "models/adamw.h"
#include "models/flow_matching.h"
#include "models/small_dit.h"
#include "zellige/engine/dit_training.h"
#include "zellige/engine/engine_check.h"
#include "zellige/plan.h"

namespace tessera::zellige::engine::testing {

constexpr uint64_t kDataSeed = 7;
constexpr int kSteps = 15;

inline models::SmallDitConfig TinyConfig() {
  models::SmallDitConfig c;
  c.in_channels = 4;
  c.hidden = 32;
  c.num_heads = 2;
  c.num_layers = 2;
  c.ffn_hidden = 64;
  c.timestep_freq_dim = 16;
  c.init_seed = 3;
  return c;
}

inline models::AdamWOptions TinyAdamW() {
  models::AdamWOptions o;
  o.learning_rate = 3e-3f;
  o.weight_decay = 0.01f;
  return o;
}

struct TrainCase {
  zellige::Plan plan;
  workload::Batch batch;
};

// 2 ranks: whole sequences on each rank, a ring (1,1,2), a Ulysses (1,2,1) and an all-gather
// (2,1,1) split sequence (odd lengths, so chunks differ by one token).
inline TrainCase MixedCase() {
  TrainCase c;
  c.batch = MakeBatch({40, 30, 51, 24, 37, 20});
  c.plan.planner = "test";
  c.plan.num_ranks = 2;
  auto add = [&](int seq, int q, int h, int k, std::vector<int> ranks) {
    zellige::Placement p;
    p.seq = seq;
    p.config = {q, h, k};
    p.ranks = std::move(ranks);
    c.plan.placements.push_back(p);
  };
  add(0, 1, 1, 1, {0});
  add(1, 1, 1, 1, {1});
  add(2, 1, 1, 2, {0, 1});
  add(3, 1, 2, 1, {0, 1});
  add(4, 2, 1, 1, {0, 1});
  add(5, 1, 1, 1, {0});
  return c;
}

struct TrainResult {
  std::vector<double> losses;
  std::vector<float> params;
};

// SmallDit + LocalAttentionBackend on the whole batch in one process.
inline core::StatusOr<TrainResult> ReferenceRun(const TrainCase& c, int steps) {
  ASSIGN_OR_RETURN(models::SmallDit model, models::SmallDit::Create(TinyConfig()));
  ASSIGN_OR_RETURN(models::AdamW opt, models::AdamW::Create(model.NumParameters(), TinyAdamW()));
  std::vector<int64_t> ids, lengths;
  for (size_t i = 0; i < c.batch.sequences.size(); ++i) {
    ids.push_back(static_cast<int64_t>(i));
    lengths.push_back(c.batch.sequences[i].tokens);
  }
  models::LocalAttentionBackend backend;
  models::SmallDitActivations acts;
  TrainResult r;
  for (int s = 0; s < steps; ++s) {
    ASSIGN_OR_RETURN(
        models::FlowMatchingBatch b,
        models::MakeFlowMatchingBatch(kDataSeed, TinyConfig().in_channels, ids, lengths, s));
    ASSIGN_OR_RETURN(double loss, models::TrainStep(model, opt, b, backend, &acts));
    r.losses.push_back(loss);
  }
  r.params.assign(model.Parameters().begin(), model.Parameters().end());
  return r;
}

// This rank's share of the distributed run (collective over world).
inline core::StatusOr<TrainResult> DistributedRun(const TrainCase& c, int steps,
                                                  comm::Communicator& world) {
  const models::SmallDitConfig cfg = TinyConfig();
  ASSIGN_OR_RETURN(models::SmallDit model, models::SmallDit::Create(cfg));
  ASSIGN_OR_RETURN(models::AdamW opt, models::AdamW::Create(model.NumParameters(), TinyAdamW()));
  ASSIGN_OR_RETURN(auto engine,
                   AttentionEngine::Create(c.plan, c.batch, cfg.num_heads, cfg.head_dim(), &world));
  EngineAttentionBackend backend(engine.get(), static_cast<int>(cfg.num_layers));
  models::SmallDitActivations acts;
  TrainResult r;
  for (int s = 0; s < steps; ++s) {
    ASSIGN_OR_RETURN(double loss, DistributedTrainStep(model, opt, backend, world, c.batch,
                                                       kDataSeed, s, &acts));
    r.losses.push_back(loss);
  }
  r.params.assign(model.Parameters().begin(), model.Parameters().end());
  return r;
}

}  // namespace tessera::zellige::engine::testing
