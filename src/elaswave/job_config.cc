#include "elaswave/job_config.h"

#include <fmt/format.h>
#include <time.h>

#include "core/input_file.h"

namespace tessera::elaswave {

std::string ElasticJobConfig::WorkerLog(int world) const {
  return fmt::format("{}/worker-{}.jsonl", run_dir, world);
}
std::string ElasticJobConfig::FaultMark(size_t index) const {
  return fmt::format("{}/fault-{}.hit", run_dir, index);
}
std::string ElasticJobConfig::CheckpointFile(int64_t step, int slot, int tp_rank) const {
  return fmt::format("{}/ckpt/step-{}/slot-{}-tp-{}.bin", run_dir, step, slot, tp_rank);
}

std::string ElasticJobConfig::SpillFile(int world) const {
  return fmt::format("{}/spill-{}.json", run_dir, world);
}

double MonotonicSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

core::Json JobToJson(const ElasticJobConfig& job) {
  const TrainerOptions& t = job.trainer;
  core::Json j;
  j["kind"] = "elaswave-job";
  j["version"] = 1;
  j["shape"] = {{"dp", t.shape.dp},
                {"pp", t.shape.pp},
                {"tp", t.shape.tp},
                {"layers", t.shape.num_blocks},
                {"global_batch", t.shape.global_batch},
                {"micro_batch", t.shape.micro_batch}};
  j["model"] = {{"vocab", t.model.vocab},
                {"hidden", t.model.hidden},
                {"heads", t.model.num_heads},
                {"layers", t.model.num_layers},
                {"ffn", t.model.ffn_hidden},
                {"max_seq", t.model.max_seq},
                {"init_seed", t.model.init_seed},
                {"dropout", t.model.dropout},
                {"dropout_seed", t.model.dropout_seed}};
  j["seq"] = t.seq;
  j["data_seed"] = t.data_seed;
  j["learning_rate"] = t.adamw.learning_rate;
  j["steps"] = job.steps;
  j["faults"] = FaultPlanToJson(job.faults);
  j["policy"] = RecoveryPolicyName(job.policy);
  j["transport"] = job.transport;
  j["resume_step"] = job.resume_step;
  j["first_epoch"] = job.first_epoch;
  j["faults_done"] = job.faults_done;
  j["run_dir"] = job.run_dir;
  j["heartbeat_s"] = job.heartbeat_s;
  j["heartbeat_timeout_s"] = job.heartbeat_timeout_s;
  j["op_timeout_s"] = job.op_timeout_s;
  j["recovery_timeout_s"] = job.recovery_timeout_s;
  j["coordinator_timeout_s"] = job.coordinator_timeout_s;
  return j;
}

core::StatusOr<models::SmallGptConfig> ModelFromJson(const core::Json& model,
                                                     const std::string& mp) {
  RETURN_IF_ERROR(core::CheckKnownKeys(model, mp,
                                       {"vocab", "hidden", "heads", "layers", "ffn", "max_seq",
                                        "init_seed", "dropout", "dropout_seed"}));
  models::SmallGptConfig m;
  ASSIGN_OR_RETURN(m.vocab, core::GetPositiveInt(model, mp, "vocab"));
  ASSIGN_OR_RETURN(m.hidden, core::GetPositiveInt(model, mp, "hidden"));
  ASSIGN_OR_RETURN(m.num_heads, core::GetPositiveInt(model, mp, "heads"));
  ASSIGN_OR_RETURN(m.num_layers, core::GetPositiveInt(model, mp, "layers"));
  ASSIGN_OR_RETURN(m.ffn_hidden, core::GetPositiveInt(model, mp, "ffn"));
  ASSIGN_OR_RETURN(m.max_seq, core::GetPositiveInt(model, mp, "max_seq"));
  if (model.contains("init_seed")) {
    ASSIGN_OR_RETURN(const int64_t seed, core::GetNonNegativeInt(model, mp, "init_seed"));
    m.init_seed = static_cast<uint64_t>(seed);
  }
  if (model.contains("dropout")) {
    ASSIGN_OR_RETURN(const double dropout, core::GetDoubleInRange(model, mp, "dropout", 0.0, 0.9));
    m.dropout = static_cast<float>(dropout);
  }
  if (model.contains("dropout_seed")) {
    ASSIGN_OR_RETURN(const int64_t seed, core::GetNonNegativeInt(model, mp, "dropout_seed"));
    m.dropout_seed = static_cast<uint64_t>(seed);
  }
  RETURN_IF_ERROR(models::ValidateSmallGptConfig(m, 1).WithPrefix(mp));
  return m;
}

core::StatusOr<models::SmallGptConfig> LoadModel(const std::string& name_or_file) {
  if (!core::PathExists(name_or_file)) {
    auto preset = models::SmallGptPreset(name_or_file);
    if (preset.ok()) return preset;
    return core::InvalidArgument(fmt::format("model: '{}' is neither a file nor a preset ({})",
                                             name_or_file, preset.status().message()));
  }
  ASSIGN_OR_RETURN(const core::Json j, core::ReadJsonFile(name_or_file));
  return ModelFromJson(j, name_or_file);
}

core::StatusOr<ElasticJobConfig> JobFromJson(const core::Json& j, const std::string& source) {
  RETURN_IF_ERROR(core::CheckKindAndVersion(j, source, "elaswave-job", 1));
  RETURN_IF_ERROR(core::CheckKnownKeys(j, source,
                                       {"kind",
                                        "version",
                                        "shape",
                                        "model",
                                        "seq",
                                        "data_seed",
                                        "learning_rate",
                                        "steps",
                                        "faults",
                                        "policy",
                                        "transport",
                                        "resume_step",
                                        "first_epoch",
                                        "faults_done",
                                        "run_dir",
                                        "heartbeat_s",
                                        "heartbeat_timeout_s",
                                        "op_timeout_s",
                                        "recovery_timeout_s",
                                        "coordinator_timeout_s"}));
  ElasticJobConfig job;
  TrainerOptions& t = job.trainer;
  ASSIGN_OR_RETURN(const core::Json* shape, core::Member(j, source, "shape"));
  const std::string sp = core::JoinPath(source, "shape");
  RETURN_IF_ERROR(core::CheckKnownKeys(
      *shape, sp, {"dp", "pp", "tp", "layers", "global_batch", "micro_batch"}));
  ASSIGN_OR_RETURN(const int64_t dp, core::GetIntInRange(*shape, sp, "dp", 1, 1024));
  ASSIGN_OR_RETURN(const int64_t pp, core::GetIntInRange(*shape, sp, "pp", 1, 1024));
  ASSIGN_OR_RETURN(const int64_t tp, core::GetIntInRange(*shape, sp, "tp", 1, 64));
  ASSIGN_OR_RETURN(const int64_t layers, core::GetIntInRange(*shape, sp, "layers", 1, 1024));
  t.shape.dp = static_cast<int>(dp);
  t.shape.pp = static_cast<int>(pp);
  t.shape.tp = static_cast<int>(tp);
  t.shape.num_blocks = static_cast<int>(layers);
  ASSIGN_OR_RETURN(t.shape.global_batch, core::GetPositiveInt(*shape, sp, "global_batch"));
  ASSIGN_OR_RETURN(t.shape.micro_batch, core::GetPositiveInt(*shape, sp, "micro_batch"));
  ASSIGN_OR_RETURN(const core::Json* model, core::Member(j, source, "model"));
  ASSIGN_OR_RETURN(t.model, ModelFromJson(*model, core::JoinPath(source, "model")));
  ASSIGN_OR_RETURN(t.seq, core::GetPositiveInt(j, source, "seq"));
  ASSIGN_OR_RETURN(const int64_t data_seed, core::GetNonNegativeInt(j, source, "data_seed"));
  t.data_seed = static_cast<uint64_t>(data_seed);
  ASSIGN_OR_RETURN(const double lr, core::GetDoubleInRange(j, source, "learning_rate", 0.0, 1.0));
  t.adamw.learning_rate = static_cast<float>(lr);
  ASSIGN_OR_RETURN(job.steps, core::GetIntInRange(j, source, "steps", 1, 1000000));
  RETURN_IF_ERROR(ValidateJobShape(t.shape));
  ASSIGN_OR_RETURN(const core::Json* faults, core::Member(j, source, "faults"));
  ASSIGN_OR_RETURN(job.faults,
                   ParseFaultPlan(*faults, core::JoinPath(source, "faults"), t.shape, job.steps));
  ASSIGN_OR_RETURN(const std::string policy, core::GetString(j, source, "policy"));
  ASSIGN_OR_RETURN(job.policy, ParseRecoveryPolicy(policy));
  ASSIGN_OR_RETURN(job.transport, core::GetString(j, source, "transport"));
  ASSIGN_OR_RETURN(job.resume_step,
                   core::GetIntInRange(j, source, "resume_step", -1, job.steps - 1));
  ASSIGN_OR_RETURN(job.first_epoch, core::GetIntInRange(j, source, "first_epoch", 0, 1 << 30));
  ASSIGN_OR_RETURN(const core::Json* done, core::Member(j, source, "faults_done"));
  if (!done->is_array()) {
    return core::InvalidArgument(fmt::format("{}.faults_done: must be a list", source));
  }
  for (const core::Json& i : *done) {
    if (!i.is_number_integer() || i.get<int64_t>() < 0 ||
        i.get<int64_t>() >= static_cast<int64_t>(job.faults.size())) {
      return core::InvalidArgument(
          fmt::format("{}.faults_done: got {}, not a fault index", source, core::ShowJson(i)));
    }
    job.faults_done.push_back(i.get<int64_t>());
  }
  ASSIGN_OR_RETURN(job.run_dir, core::GetString(j, source, "run_dir"));
  ASSIGN_OR_RETURN(job.heartbeat_s, core::GetDoubleInRange(j, source, "heartbeat_s", 0.001, 10.0));
  ASSIGN_OR_RETURN(job.heartbeat_timeout_s,
                   core::GetDoubleInRange(j, source, "heartbeat_timeout_s", 0.01, 3600.0));
  ASSIGN_OR_RETURN(job.op_timeout_s,
                   core::GetDoubleInRange(j, source, "op_timeout_s", 0.01, 86400.0));
  ASSIGN_OR_RETURN(job.recovery_timeout_s,
                   core::GetDoubleInRange(j, source, "recovery_timeout_s", 0.01, 86400.0));
  ASSIGN_OR_RETURN(job.coordinator_timeout_s,
                   core::GetDoubleInRange(j, source, "coordinator_timeout_s", 0.01, 86400.0));
  return job;
}

}  // namespace tessera::elaswave
