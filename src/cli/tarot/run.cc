// `tessera tarot run`: one image and one query (or a box prompt) through a system with backends
// chosen by name; writes the mask PNG, optionally an overlay PNG (the mask tinted over the image)
// and the call trace. Parses, calls tarot::RunImageQuery, renders.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/tarot/tarot_args.h"
#include "core/json_util.h"
#include "core/output_file.h"
#include "core/table.h"
#include "tarot/service.h"

namespace tessera::cli {
namespace {

struct TarotRunArgs {
  std::string image, query, box, scene, set, system = "full";
  TarotBackendArgs backends;
  std::string out, overlay, trace;
};

std::string BoxText(const tarot::Box& b) {
  if (b.empty()) return "-";
  return core::Fixed(b.x0, 0) + "," + core::Fixed(b.y0, 0) + "," + core::Fixed(b.x1, 0) + "," +
         core::Fixed(b.y1, 0);
}

core::Status RunRun(const TarotRunArgs& a) {
  tarot::RunRequest r;
  r.image_path = a.image;
  r.query = a.query;
  r.scene_path = a.scene;
  r.set = a.set;
  if (!a.box.empty()) {
    ASSIGN_OR_RETURN(r.box, TarotFlags(tarot::ParseBox(a.box)));
  }
  ASSIGN_OR_RETURN(r.system, TarotFlags(tarot::ParseSystem(a.system)));
  ASSIGN_OR_RETURN(r.backends, ToBackendChoice(a.backends));
  ASSIGN_OR_RETURN(tarot::RunResponse res, TarotFlags(tarot::RunImageQuery(r)));

  ASSIGN_OR_RETURN(const std::string mask_png, tarot::MaskPng(res.mask));
  RETURN_IF_ERROR(core::WriteFileAtomically(a.out, mask_png));
  if (!a.overlay.empty()) {
    ASSIGN_OR_RETURN(const std::string over, tarot::OverlayPng(res.image, res.mask));
    RETURN_IF_ERROR(core::WriteFileAtomically(a.overlay, over));
  }
  if (!a.trace.empty()) {
    RETURN_IF_ERROR(core::WriteJsonFile(a.trace, res.trace.ToJson(/*deterministic=*/false)));
  }

  const bool box_mode = r.box.has_value();
  // Label and value per line (a two-column core::Table would right-align the values).
  std::vector<std::pair<std::string, std::string>> rows;
  struct {
    std::vector<std::pair<std::string, std::string>>* rows;
    void AddRow(std::pair<std::string, std::string> r) { rows->push_back(std::move(r)); }
  } table{&rows};
  table.AddRow({"image", a.image + " (" + std::to_string(res.image.width) + "x" +
                             std::to_string(res.image.height) + ")"});
  if (box_mode) {
    table.AddRow({"box prompt", a.box + " -> " + std::to_string(res.instances.size()) +
                                    " instance(s), best kept"});
  } else {
    table.AddRow({"query", a.query});
    table.AddRow({"system", tarot::SystemName(r.system)});
  }
  table.AddRow(
      {"backends", r.backends.segmenter + (box_mode ? "" : " / " + r.backends.reasoner) +
                       (!box_mode && tarot::UsesMsr(r.system) ? " / " + r.backends.features : "")});
  table.AddRow(
      {"mask", std::to_string(res.mask.count()) + " px, box " + BoxText(tarot::BoxOf(res.mask))});
  if (res.result.has_value()) {
    const tarot::QueryResult& q = *res.result;
    if (q.eri.has_value()) {
      table.AddRow({"ERI description", q.eri->description});
      table.AddRow({"ERI candidates", std::to_string(q.eri->candidates.size())});
    }
    if (q.msr.has_value()) {
      std::string steps;
      for (const tarot::MsrStep& s : q.msr->steps)
        steps += (steps.empty() ? "" : ", ") + std::string(tarot::MsrBranchName(s.branch));
      table.AddRow({"MSR rounds", steps.empty() ? "none" : steps});
    }
    table.AddRow({"calls", std::to_string(q.calls.segmenter) + " segmenter, " +
                               std::to_string(q.calls.reasoner) + " reasoner, " +
                               std::to_string(q.calls.features) + " features"});
  }
  if (res.iou.has_value()) {
    table.AddRow({"IoU vs the scene's target", core::Fixed(*res.iou, 3) + " (" + res.tier + ")"});
  }
  table.AddRow({"time", core::Fixed(res.ms, 1) + " ms (measured, this machine)"});
  size_t width = 0;
  for (const auto& [label, value] : rows) width = std::max(width, label.size());
  for (const auto& [label, value] : rows) {
    std::printf("%-*s  %s\n", static_cast<int>(width + 1), (label + ":").c_str(), value.c_str());
  }
  std::printf("wrote %s%s%s\n", a.out.c_str(), a.overlay.empty() ? "" : (", " + a.overlay).c_str(),
              a.trace.empty() ? "" : (", " + a.trace).c_str());
  return core::Status::Ok();
}

}  // namespace

void AddTarotRun(CLI::App* tarot, Action* action) {
  auto a = std::make_shared<TarotRunArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = tarot->add_subcommand(
      "run", "Segment what a referring expression (or a box) names in one image");
  paths->Input(c, "--image", &a->image, "the image (PNG)")->required();
  c->add_option("--query", a->query, "the referring expression, e.g. 'the red cup'");
  c->add_option("--box", a->box, "a box prompt X0,Y0,X1,Y1 in pixels instead of a query");
  paths->Input(c, "--scene", &a->scene,
               "the scene program JSON (tarot scenes) for synthetic/oracle/noisy and the IoU");
  c->add_option("--set", a->set,
                "the set the image comes from, refscenes or fmnist: the vocabulary the pixels-only "
                "backends read it with (default: the scene's, else refscenes)");
  c->add_option("--system", a->system,
                "naive, naive-coupling, text-only, box-only, no-rephrase, no-vote, eri, full, "
                "msr-flat-features or msr-yes-judge")
      ->capture_default_str();
  AddTarotBackendOptions(c, &a->backends);
  paths->Output(c, "--out", &a->out, "the mask as a PNG (white on black)")->required();
  paths->Output(c, "--overlay", &a->overlay, "the image with the mask tinted over it (PNG)");
  paths->Output(c, "--trace", &a->trace, "every backend call and decision (JSON)");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunRun(*a); }); });
}

}  // namespace tessera::cli
