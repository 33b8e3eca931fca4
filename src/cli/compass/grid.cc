// `tessera compass grid`: the paper-scale grid (288 forward TP operators per topology,
// modeled; compass/paper_grid.h) with each strategy's speed-up over `none`.
//
//   tessera compass grid [--topology a6000x8|FILE] [--json F]
//
// Plot: python3 scripts/plot_compass_grid.py F.json [G.json ...] --out grid.png
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/compass/compass_options.h"
#include "cli/options.h"
#include "compass/paper_grid.h"
#include "core/table.h"
#include "hw/topology.h"

namespace tessera::cli {

using core::Status;

namespace {

struct CompassGridArgs {
  std::string topology = "a6000x8";
  std::string json_path;
};

void PrintGrid(const compass::PaperGrid& g) {
  std::printf(
      "Compass paper-scale grid (MODELED: datasheet topology, tile/wave GEMMs, no profile): "
      "%s, %zu forward TP operators\n",
      g.topology.c_str(), g.points.size());
  const std::vector<std::string> strategies = {"auto",         "fused-ring2", "fused-ring1",
                                               "fused-direct", "decomp:d*",   "te"};
  std::vector<std::string> header = {"model"};
  for (const std::string& s : strategies) header.push_back(s);
  core::Table t(header);
  std::vector<std::string> models = {""};
  for (const std::string& m : compass::ModelPresetNames()) models.push_back(m);
  for (const std::string& m : models) {
    std::vector<std::string> row = {m.empty() ? "all" : m};
    for (const std::string& s : strategies) {
      const compass::SpeedupStats st = compass::SpeedupOverNone(g, s, m);
      row.push_back(
          st.count == 0 ? "-" : fmt::format("{:.2f} ({:.2f}-{:.2f})", st.median, st.min, st.max));
    }
    t.AddRow(row);
  }
  std::printf("speed-up over none, median (min-max) over operators, TP and token counts:\n%s",
              t.Render().c_str());
  std::map<std::string, int> picks;
  for (const compass::GridPoint& p : g.points) ++picks[p.pick];
  std::string line;
  for (const auto& [s, n] : picks) line += fmt::format(" {} {};", s, n);
  std::printf("selector picks:%s\n", line.c_str());
  for (const std::string& s : g.skipped) std::printf("skipped: %s\n", s.c_str());
}

Status RunGrid(const CompassGridArgs& a) {
  ASSIGN_OR_RETURN(hw::Topology topology, hw::LoadTopology(a.topology));
  ASSIGN_OR_RETURN(compass::PaperGrid g, compass::RunPaperGrid(topology));
  if (!a.json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(a.json_path, ToJson(g)));
  PrintGrid(g);
  return Status::Ok();
}

}  // namespace

void AddCompassGrid(CLI::App* compass, Action* action) {
  auto a = std::make_shared<CompassGridArgs>();
  auto paths = std::make_shared<CommandPaths>();
  CLI::App* c = compass->add_subcommand(
      "grid",
      "The paper-scale grid (modeled): 2 collectives x 2 layer kinds x 4 Llama models x TP "
      "2/4/8 x 6 token counts, every strategy's speed-up over none");
  AddTopologyOption(c, &a->topology, paths.get());
  paths->Output(c, "--json", &a->json_path, "write every point as JSON (for the plot script)");
  c->callback([action, a, paths] { *action = Checked(paths, [a] { return RunGrid(*a); }); });
}

}  // namespace tessera::cli
