// `tessera kernelflume cost`: the modeled decode step of a model on a cluster preset --
// KernelFlume (weight GPUs + attention nodes), with two ping-ponged micro-batches, and a whole
// instance -- and the memory each needs (kernelflume/decode_cost_model.h does the work).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "core/json_util.h"
#include "core/table.h"
#include "hw/cluster.h"
#include "kernelflume/decode_cost_model.h"
#include "models/llama_config.h"

namespace tessera::cli {
namespace {

struct CostArgs {
  std::string model = "llama-3.1-8b";
  std::string cluster = "h100x64";
  kernelflume::DecodeShape shape{32, 32768, 4, 1};
  std::string json_path;
};

core::Status RunCost(const CostArgs& a) {
  auto loaded = models::LoadLlamaConfig(a.model);
  if (!loaded.ok()) return loaded.status().WithPrefix("--model");
  const models::LlamaConfig& model = *loaded;
  auto cluster = hw::LoadCluster(a.cluster);
  if (!cluster.ok()) return cluster.status().WithPrefix("--cluster");
  auto r = kernelflume::ModelDecodeStep(model, *cluster, a.shape);
  if (!r.ok()) {
    return NameFlags(r.status(), {{"batch", "--batch"},
                                  {"context_tokens", "--context"},
                                  {"attn_nodes", "--attn-nodes"},
                                  {"weight_gpus", "--weight-gpus"}});
  }
  const double ms = 1e3, us = 1e6, gib = 1024.0 * 1024 * 1024;
  core::Table t({"figure", "value"});
  t.AddRow({"model / cluster",
            fmt::format("{} / {} ({})", model.name, cluster->name, cluster->device.name)});
  t.AddRow(
      {"batch x context (tokens)", fmt::format("{} x {}", a.shape.batch, a.shape.context_tokens)});
  t.AddRow({"weight GPUs / attention nodes",
            fmt::format("{} / {}", a.shape.weight_gpus, a.shape.attn_nodes)});
  t.AddRow({"per layer: t_w, weights (us)", fmt::format("{:.1f}", r->weight_s * us)});
  t.AddRow({"  of which all-reduces (us)", fmt::format("{:.1f}", r->allreduce_s * us)});
  t.AddRow({"per layer: t_a, busiest node (us)", fmt::format("{:.1f}", r->attention_s * us)});
  t.AddRow({"per layer: query round trip (us)", fmt::format("{:.1f}", r->comm_s * us)});
  t.AddRow({"LM head (us)", fmt::format("{:.1f}", r->lm_head_s * us)});
  t.AddRow({"TPOT, KernelFlume (ms)", fmt::format("{:.2f}", r->kernelflume_s * ms)});
  t.AddRow({"TPOT, KernelFlume, 2 micro-batches (ms)",
            fmt::format("{:.2f}", r->kernelflume_pipelined_s * ms)});
  t.AddRow(
      {"TPOT, whole instance (ms)",
       fmt::format("{:.2f}{}", r->instance_s * ms, r->instance_fits ? "" : " (KV does not fit)")});
  t.AddRow({"weights per weight GPU (GiB)", fmt::format("{:.1f}", r->weight_bytes_per_gpu / gib)});
  t.AddRow({"KV per token (KiB)", fmt::format("{:.0f}", r->kv_bytes_per_token / 1024)});
  t.AddRow({"KV tokens: needed / per attention node / per instance",
            fmt::format("{:.0f} / {:.0f} / {:.0f}", r->kv_tokens_needed, r->kv_tokens_per_attn_node,
                        r->kv_tokens_per_instance)});
  if (r->instances_feasible) {
    t.AddRow({"the batch on whole instances: instances x requests",
              fmt::format("{} x {}", r->instances, r->instance_batch)});
    t.AddRow({"TPOT, instance fleet (ms)", fmt::format("{:.2f}", r->instance_fleet_s * ms)});
  } else {
    t.AddRow({"the batch on whole instances", "infeasible: one request's KV exceeds an instance"});
  }
  const double price = cluster->device.price_usd_per_hour;
  if (price > 0) {
    t.AddRow({"price per GPU-hour (USD)", fmt::format("{:.3f}", price)});
    t.AddRow({"USD per million output tokens, KernelFlume",
              fmt::format("{:.3f} ({} GPUs)", r->kernelflume_usd_per_mtok,
                          a.shape.weight_gpus + a.shape.attn_nodes)});
    if (r->instances_feasible) {
      t.AddRow({"USD per million output tokens, instances",
                fmt::format("{:.3f} ({} GPUs)", r->instances_usd_per_mtok,
                            r->instances * a.shape.weight_gpus)});
    }
  }
  std::printf(
      "%s(modeled: roofline on the %s preset, bf16, one batch shape held steady; not "
      "measured%s)\n",
      t.Render().c_str(), cluster->device.name.c_str(),
      price > 0 ? fmt::format("; price: {}", cluster->device.price_source).c_str() : "");
  if (!a.json_path.empty()) {
    core::Json j = {
        {"model", model.name},
        {"cluster", cluster->name},
        {"device", cluster->device.name},
        {"batch", a.shape.batch},
        {"context_tokens", a.shape.context_tokens},
        {"attn_nodes", a.shape.attn_nodes},
        {"weight_gpus", a.shape.weight_gpus},
        {"per_layer_s",
         {{"weight", r->weight_s},
          {"allreduce", r->allreduce_s},
          {"attention", r->attention_s},
          {"comm", r->comm_s},
          {"instance_attention", r->instance_attention_s}}},
        {"lm_head_s", r->lm_head_s},
        {"tpot_s",
         {{"kernelflume", r->kernelflume_s},
          {"kernelflume_pipelined", r->kernelflume_pipelined_s},
          {"instance", r->instance_s}}},
        {"weight_bytes_per_gpu", r->weight_bytes_per_gpu},
        {"kv_bytes_per_token", r->kv_bytes_per_token},
        {"kv_tokens_needed", r->kv_tokens_needed},
        {"kv_tokens_per_attn_node", r->kv_tokens_per_attn_node},
        {"kv_tokens_per_instance", r->kv_tokens_per_instance},
        {"instance_fits", r->instance_fits},
        {"instances_feasible", r->instances_feasible},
        {"instances", r->instances},
        {"instance_batch", r->instance_batch},
        {"instance_fleet_tpot_s", r->instance_fleet_s},
        {"price_usd_per_gpu_hour", cluster->device.price_usd_per_hour},
        {"price_source", cluster->device.price_source},
        {"usd_per_million_output_tokens",
         {{"kernelflume", r->kernelflume_usd_per_mtok}, {"instances", r->instances_usd_per_mtok}}},
        {"kind", "modeled"}};
    RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, j));
  }
  return core::Status::Ok();
}

}  // namespace

void AddKernelFlumeCost(CLI::App* kernelflume, Action* action) {
  auto a = std::make_shared<CostArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = kernelflume->add_subcommand(
      "cost", "Modeled decode step at paper scale: KernelFlume against a whole model instance");
  c->add_option("--model", a->model,
                "a preset (llama-3.1-8b, llama-3.1-70b, tiny-gqa, tiny-mha) or a model directory")
      ->capture_default_str();
  c->add_option("--cluster", a->cluster, "a cluster preset (h100x64, a6000x32, ...) or a file")
      ->capture_default_str();
  c->add_option("--batch", a->shape.batch, "requests decoding together")
      ->transform(Integer(1, 1 << 20))
      ->capture_default_str();
  c->add_option("--context", a->shape.context_tokens, "KV tokens per request")
      ->transform(Integer(0, int64_t{1} << 30))
      ->capture_default_str();
  c->add_option("--attn-nodes", a->shape.attn_nodes, "attention GPUs the KV spreads over")
      ->transform(Integer(1, 65536))
      ->capture_default_str();
  c->add_option("--weight-gpus", a->shape.weight_gpus,
                "tensor-parallel GPUs of the weight node (and of an instance)")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  paths->Output(c, "--json", &a->json_path, "write the figures as JSON here");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunCost(*a); }); });
}

}  // namespace tessera::cli
