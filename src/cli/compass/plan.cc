// `tessera compass plan`: per TP operator of a transformer layer the strategy Compass's
// selector picks, with predicted times against none, te and fused-ring1 (compass/plan.h).
//
//   tessera compass plan [--topology a6000x8|FILE] [--model llama2-7b|...|FILE] [--tp 8]
//       [--seq 4096] [--mbs 1] [--profile P] [--margin 0.03] [--json F] [--trace F]
//       [--emit-te-ub-cfg F]
#include "compass/plan.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli/command.h"
#include "cli/compass/compass_options.h"
#include "cli/options.h"
#include "core/table.h"
#include "hw/topology.h"

namespace tessera::cli {

using core::Status;

namespace {

struct CompassPlanArgs {
  std::string topology = "a6000x8";
  std::string model = "llama2-7b";
  int tp = 8;
  int64_t seq = 4096, mbs = 1;
  std::string profile;
  double margin = 0.03;
  std::string json_path, trace_path, te_path;
};

void PrintPlan(const compass::CompassPlan& p) {
  auto Ms = [](double s) { return core::Fixed(s * 1e3, 3); };
  std::printf(
      "Compass plan (MODELED): %s on %s (%s), TP %d, %lld tokens per micro-batch, %lld layers\n",
      p.model.c_str(), p.topology.c_str(), p.device.c_str(), p.tp, static_cast<long long>(p.tokens),
      static_cast<long long>(p.layers));
  std::printf("overheads: %s\n", p.overheads_source.c_str());
  core::Table t({"operator", "kind", "M x N x K", "strategy", "ms", "none ms", "te ms",
                 "fused-ring1 ms", "vs none", "GEMMs"});
  for (const compass::OpPlan& o : p.ops) {
    const compass::TpOpShape& s = o.op.shape;
    t.AddRow({o.op.name, compass::TpOpKindName(s.kind), fmt::format("{} x {} x {}", s.m, s.n, s.k),
              o.StrategyText(), Ms(o.pick.predicted_s), Ms(o.none_s), Ms(o.te_s), Ms(o.ring1_s),
              fmt::format("{:.2f}x", o.none_s / o.pick.predicted_s), o.gemm_source});
  }
  std::printf("%s", t.Render().c_str());
  std::printf(
      "layer (forward + backward TP operators): %s ms chosen, none %s ms (%.2fx), te %s ms "
      "(%.2fx), fused-ring1 %s ms (%.2fx)\n",
      Ms(p.layer_s).c_str(), Ms(p.layer_none_s).c_str(), p.layer_none_s / p.layer_s,
      Ms(p.layer_te_s).c_str(), p.layer_te_s / p.layer_s, Ms(p.layer_ring1_s).c_str(),
      p.layer_ring1_s / p.layer_s);
  std::printf("step (%lld layers; TP GEMMs and collectives only): %s ms chosen, none %s ms\n",
              static_cast<long long>(p.layers), Ms(p.step_s()).c_str(),
              Ms(p.step_none_s()).c_str());
  std::printf("why:\n");
  for (const compass::OpPlan& o : p.ops) {
    std::printf("  %-11s %s: %s\n", o.op.name.c_str(), o.StrategyText().c_str(),
                o.pick.reason.c_str());
  }
}

Status RunPlan(const CompassPlanArgs& a) {
  ASSIGN_OR_RETURN(hw::Topology topology, hw::LoadTopology(a.topology));
  ASSIGN_OR_RETURN(compass::TransformerShape model, compass::LoadTransformerShape(a.model));
  std::optional<compass::CompassProfile> profile;
  if (!a.profile.empty()) {
    ASSIGN_OR_RETURN(profile, compass::LoadProfile(a.profile));
  }
  compass::PlanOptions o;
  o.tp = a.tp;
  o.seq = a.seq;
  o.mbs = a.mbs;
  o.selector.margin = a.margin;
  ASSIGN_OR_RETURN(compass::CompassPlan plan,
                   NameFlags(compass::PlanLayer(topology, model, o, profile ? &*profile : nullptr,
                                                "--profile " + a.profile),
                             {{"tp", "--tp"}}));
  if (!a.json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, ToJson(plan)));
  if (!a.trace_path.empty()) RETURN_IF_ERROR(compass::PlanTrace(plan).Write(a.trace_path));
  if (!a.te_path.empty()) {
    RETURN_IF_ERROR(core::WriteJsonFile(a.te_path, compass::TeUserbufferConfig(plan)));
  }
  PrintPlan(plan);
  return Status::Ok();
}

}  // namespace

void AddCompassPlan(CLI::App* compass, Action* action) {
  auto a = std::make_shared<CompassPlanArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = compass->add_subcommand(
      "plan",
      "Pick an overlap strategy for every TP operator of a transformer layer (modeled): "
      "predicted times against none, te and fused-ring1, layer and step totals");
  AddTopologyOption(c, &a->topology, paths.get());
  c->add_option("--model", a->model,
                "llama2-7b, llama2-13b, llama3-8b, llama2-70b or a model JSON file")
      ->capture_default_str();
  paths->RecordInput("--model", &a->model);
  c->add_option("--tp", a->tp, "tensor-parallel degree (devices 0..tp-1)")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  c->add_option("--seq", a->seq, "sequence length")
      ->transform(Integer(1, 1 << 22))
      ->capture_default_str();
  c->add_option("--mbs", a->mbs, "micro-batch size")
      ->transform(Integer(1, 4096))
      ->capture_default_str();
  c->add_option("--profile", a->profile,
                "a profile from `tessera compass profile` on this topology and TP: its "
                "overheads and its GEMM times where the shapes match");
  paths->RecordInput("--profile", &a->profile);
  c->add_option("--margin", a->margin,
                "pick a strategy only when predicted this much faster than none (fraction)")
      ->check(Number(0, 0.99))
      ->capture_default_str();
  paths->Output(c, "--json", &a->json_path, "write the plan as JSON");
  paths->Output(c, "--trace", &a->trace_path, "write one layer as a Perfetto trace");
  paths->Output(c, "--emit-te-ub-cfg", &a->te_path,
                "write the plan as Transformer Engine userbuffers settings (JSON)");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunPlan(*a); }); });
}

}  // namespace tessera::cli
