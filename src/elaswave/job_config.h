// ElasticJobConfig: everything the launcher, the coordinator and the workers of one elastic
// training job agree on, and its JSON form (the launcher writes it to the run directory; the
// processes it starts read it), so that every process derives the same plans.
// Errors: JobFromJson names the field, the value and what is allowed (unknown keys refused).
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "elaswave/fault_plan.h"
#include "elaswave/trainer.h"

namespace tessera::elaswave {

struct ElasticJobConfig {
  TrainerOptions trainer;
  int64_t steps = 10;
  std::vector<FaultEvent> faults;
  RecoveryPolicy policy = RecoveryPolicy::kElasWave;
  std::string transport = "ucx";
  // The restart policy: the job starts from the disk checkpoint of `resume_step` (-1: fresh) at
  // epoch `first_epoch`, skipping the fault events already delivered.
  int64_t resume_step = -1;
  int64_t first_epoch = 0;
  std::vector<int64_t> faults_done;
  std::string run_dir;                // logs, fault marks, the coordinator's address, spills
  double heartbeat_s = 0.1;           // worker -> coordinator
  double heartbeat_timeout_s = 1.0;   // silent this long: declared dead and fenced
  double op_timeout_s = 30;           // a collective or receive waiting this long fails
  double recovery_timeout_s = 60;     // a recovery not resumed by then ends the worker
  double coordinator_timeout_s = 30;  // no coordinator this long: spill and exit

  std::string AddressFile() const { return run_dir + "/coordinator.addr"; }
  std::string WorkerLog(int world) const;  // run_dir/worker-W.jsonl
  std::string CoordinatorLog() const { return run_dir + "/coordinator.jsonl"; }
  std::string FaultMark(size_t index) const;  // run_dir/fault-I.hit
  std::string SpillFile(int world) const;     // run_dir/spill-W.json
  // The restart policy's checkpoint of one slot's state at one tp rank after `step`:
  // run_dir/ckpt/step-T/slot-S-tp-R.bin (packed, slot_store.h).
  std::string CheckpointFile(int64_t step, int slot, int tp_rank) const;
};

core::Json JobToJson(const ElasticJobConfig& job);
// A model: a SmallGpt preset name (models/small_gpt_config.h) or a JSON file {vocab, hidden,
// heads, layers, ffn, max_seq[, init_seed, dropout, dropout_seed]}.
core::StatusOr<models::SmallGptConfig> LoadModel(const std::string& name_or_file);
core::StatusOr<models::SmallGptConfig> ModelFromJson(const core::Json& j,
                                                     const std::string& source);
core::StatusOr<ElasticJobConfig> JobFromJson(const core::Json& j, const std::string& source);

// Seconds on the clock every process of the machine shares (CLOCK_MONOTONIC), so the launcher
// can subtract a worker's event time from the time it sent a signal.
double MonotonicSeconds();

}  // namespace tessera::elaswave
