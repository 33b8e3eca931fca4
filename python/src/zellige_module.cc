// tessera._zellige: the Python face of Zellige's planning services (pybind11). Mirrors
// `tessera zellige tokens|plan`: token counts, clusters (presets or JSON), planning a batch of
// sequence lengths with any registered planner under the analytic or a profile-priced cost
// model, the plan's per-rank token ranges, its modeled simulation and its JSON.
//
// Only argument conversion lives here; every decision is the library's (workload/batch.h
// BatchFromTokenCounts, zellige/compare_planners.h ComparePlanners, zellige/plan.h RankShards,
// zellige/simulator.h Simulate). Errors: a Status from the library is raised as ValueError
// (bad input: InvalidArgument, NotFound, Infeasible) or RuntimeError (anything else) with the
// library's one-line message, the same text the CLI prints; wrong Python types raise
// TypeError (pybind11's argument conversion). The GIL is released while planning and
// simulating. Plan objects own their batch and cost model, so they outlive the call.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "hw/cluster.h"
#include "models/dit_spec.h"
#include "models/token_calculus.h"
#include "workload/batch.h"
#include "zellige/compare_planners.h"
#include "zellige/cost_model.h"
#include "zellige/plan.h"
#include "zellige/profile.h"
#include "zellige/simulator.h"

namespace py = pybind11;

namespace tessera::python {
namespace {

constexpr const char* kDefaultCluster = "a800x16";
constexpr const char* kDefaultModel = "wan2.1-1.3b";

[[noreturn]] void Raise(const core::Status& st) {
  switch (st.code()) {
    case core::StatusCode::kInvalidArgument:
    case core::StatusCode::kNotFound:
    case core::StatusCode::kInfeasible:
      throw py::value_error(st.message());
    default:
      throw std::runtime_error(st.message());
  }
}

template <typename T>
T Take(core::StatusOr<T> v) {
  if (!v.ok()) Raise(v.status());
  return std::move(v).value();
}

// A Python dict (or anything json.dumps accepts) as nlohmann JSON, through Python's json.
core::Json ToCoreJson(const py::object& obj, const std::string& field) {
  std::string text;
  try {
    text = py::module_::import("json").attr("dumps")(obj).cast<std::string>();
  } catch (py::error_already_set& e) {
    throw py::type_error(field + ": not JSON-serialisable (" + std::string(e.what()) + ")");
  }
  core::Json j = core::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw py::value_error(field + ": not valid JSON");
  return j;
}

// The cluster a call names: a Cluster, a preset name or a cluster JSON path.
using ClusterArg = std::variant<hw::Cluster, std::string>;

hw::Cluster ResolveCluster(const std::optional<ClusterArg>& arg) {
  if (!arg) return Take(hw::LoadCluster(kDefaultCluster));
  if (const auto* c = std::get_if<hw::Cluster>(&*arg)) return *c;
  return Take(hw::LoadCluster(std::get<std::string>(*arg)));
}

// What plan() shares with the Plan it returns.
struct PlanState {
  workload::Batch batch;
  std::shared_ptr<const zellige::CostModel> cost;
  zellige::PlannerRun run;
};

class PyPlan {
 public:
  explicit PyPlan(std::shared_ptr<const PlanState> s) : s_(std::move(s)) {}
  const zellige::Plan& plan() const { return s_->run.plan; }
  const PlanState& state() const { return *s_; }

 private:
  std::shared_ptr<const PlanState> s_;
};

struct PyPlacement {
  int seq = 0;
  int64_t tokens = 0;
  int q = 1, h = 1, k = 1;
  std::vector<int> ranks;
};

struct PyShard {
  int seq = 0, placement = 0, member = 0;
  int64_t token_begin = 0, token_end = 0;
  int q = 1, h = 1, k = 1;
};

std::shared_ptr<const zellige::CostModel> MakeCost(const std::optional<ClusterArg>& cluster,
                                                   const std::optional<std::string>& model,
                                                   const std::optional<std::string>& profile) {
  if (profile) {
    if (cluster) {
      throw py::value_error(
          "cluster: cannot be combined with profile (the profile's machine is the cluster)");
    }
    if (model) {
      throw py::value_error("model: got '" + *model +
                            "', cannot be combined with profile (the profile's SmallDit is the "
                            "model)");
    }
    auto p = std::make_shared<const zellige::Profile>(Take(zellige::LoadProfile(*profile)));
    return zellige::MakeProfileCostModel(std::move(p));
  }
  hw::Cluster c = ResolveCluster(cluster);
  models::DitModel m = Take(models::LoadDitModel(model ? *model : kDefaultModel));
  return zellige::MakeAnalyticCostModel(std::move(c), std::move(m));
}

PyPlan PlanSequences(const std::vector<int64_t>& seq_lens, const std::optional<ClusterArg>& cluster,
                     const std::string& planner, const std::optional<std::string>& profile,
                     const std::optional<std::string>& model, const py::dict& options) {
  auto state = std::make_shared<PlanState>();
  state->batch = Take(workload::BatchFromTokenCounts(seq_lens, "seq_lens", "python"));
  zellige::PlannerOptions opts;
  for (auto [key, value] : options) {
    if (!py::isinstance<py::str>(key)) throw py::type_error("options: keys must be str");
    opts[key.cast<std::string>()] = py::str(value).cast<std::string>();
  }
  if (planner == "all") {
    throw py::value_error(
        "planner: got 'all', plan() runs one planner: name one of tessera.zellige.planners()");
  }
  const zellige::PlannerEntry* entry = Take(zellige::FindPlanner(planner));
  state->cost = MakeCost(cluster, model, profile);
  core::StatusOr<zellige::PlannerComparison> cmp = core::Internal("not run");
  {
    py::gil_scoped_release release;
    cmp = zellige::ComparePlanners(state->batch, *state->cost, {entry}, opts);
  }
  if (!cmp.ok()) Raise(cmp.status());
  if (cmp->runs.empty()) {
    Raise(core::Internal(cmp->failures.empty() ? planner + " returned no plan"
                                               : cmp->failures.front()));
  }
  state->run = std::move(cmp->runs.front());
  return PyPlan(std::move(state));
}

std::vector<PyPlacement> Placements(const PyPlan& p) {
  std::vector<PyPlacement> out;
  for (const zellige::Placement& pl : p.plan().placements) {
    out.push_back({pl.seq, p.state().batch.sequences[pl.seq].tokens, pl.config.q, pl.config.h,
                   pl.config.k, pl.ranks});
  }
  return out;
}

std::vector<std::vector<PyShard>> Shards(const PyPlan& p) {
  std::vector<std::vector<PyShard>> out;
  for (const auto& rank : zellige::RankShards(p.plan(), p.state().batch)) {
    std::vector<PyShard>& r = out.emplace_back();
    for (const zellige::RankShard& s : rank) {
      r.push_back({s.seq, s.placement, s.member, s.token_begin, s.token_end, s.config.q, s.config.h,
                   s.config.k});
    }
  }
  return out;
}

zellige::SimResult SimulatePlan(const PyPlan& p) {
  core::StatusOr<zellige::SimResult> r = core::Internal("not run");
  {
    py::gil_scoped_release release;
    r = zellige::Simulate(p.plan(), p.state().batch, *p.state().cost);
  }
  return Take(std::move(r));
}

}  // namespace
}  // namespace tessera::python

PYBIND11_MODULE(_zellige, m) {
  using namespace tessera;          // NOLINT
  using namespace tessera::python;  // NOLINT
  m.doc() = "Zellige: moldable sequence placement for mixed image/video DiT training.";

  m.def(
      "tokens",
      [](const std::string& kind, const std::string& res, double seconds, int fps) {
        if (kind != "image" && kind != "video") {
          throw py::value_error("kind: got '" + kind + "', must be image or video");
        }
        models::Resolution r = Take(models::ParseResolution(res));
        return Take(models::CountTokens(
            kind == "video" ? models::MediaKind::kVideo : models::MediaKind::kImage, r, seconds,
            fps));
      },
      py::arg("kind") = "video", py::arg("res") = "1080p", py::arg("seconds") = 15.0,
      py::arg("fps") = 16,
      "Number of DiT tokens of an image or a video (as `tessera zellige tokens`).");

  m.def(
      "planners",
      [] {
        std::vector<std::string> names;
        for (const zellige::PlannerEntry& e : zellige::PlannerRegistry()) names.push_back(e.name);
        return names;
      },
      "Names of the registered planners, in display order.");

  py::class_<hw::Cluster>(m, "Cluster", "A cluster of identical devices (nodes x ranks per node).")
      .def_static(
          "preset", [](const std::string& name) { return Take(hw::ClusterPreset(name)); },
          py::arg("name"), "A cluster preset by name (see Cluster.presets()).")
      .def_static(
          "from_json",
          [](const py::object& source) {
            if (py::isinstance<py::str>(source)) {
              return Take(hw::LoadCluster(source.cast<std::string>()));
            }
            if (py::isinstance<py::dict>(source)) {
              return Take(hw::ClusterFromJson(ToCoreJson(source, "cluster"), "cluster"));
            }
            throw py::type_error("source: must be a path (str) or a dict, got " +
                                 std::string(py::str(py::type::of(source))));
          },
          py::arg("source"), "A cluster from a JSON file path or a dict of the same fields.")
      .def_static("presets", &hw::ClusterPresetNames, "Names of the cluster presets.")
      .def_readonly("name", &hw::Cluster::name)
      .def_readonly("provenance", &hw::Cluster::provenance)
      .def_readonly("nodes", &hw::Cluster::nodes)
      .def_readonly("ranks_per_node", &hw::Cluster::ranks_per_node)
      .def_property_readonly("num_ranks", &hw::Cluster::num_ranks)
      .def_property_readonly("usable_memory_bytes", &hw::Cluster::usable_memory_bytes)
      .def(
          "to_json", [](const hw::Cluster& c) { return hw::ToJson(c).dump(2); },
          "The cluster as self-contained JSON text.")
      .def("__repr__", [](const hw::Cluster& c) {
        return "<tessera.zellige.Cluster " + c.name + ": " + std::to_string(c.nodes) + " x " +
               std::to_string(c.ranks_per_node) + " ranks, " + c.provenance + ">";
      });

  py::class_<PyPlacement>(m, "Placement", "Where one sequence runs: config (q, h, k) on ranks.")
      .def_readonly("seq", &PyPlacement::seq)
      .def_readonly("tokens", &PyPlacement::tokens)
      .def_readonly("q", &PyPlacement::q)
      .def_readonly("h", &PyPlacement::h)
      .def_readonly("k", &PyPlacement::k)
      .def_readonly("ranks", &PyPlacement::ranks)
      .def_property_readonly("degree", [](const PyPlacement& p) { return p.q * p.h * p.k; })
      .def("__repr__", [](const PyPlacement& p) {
        return "<Placement seq " + std::to_string(p.seq) + " (" + std::to_string(p.tokens) +
               " tokens) q" + std::to_string(p.q) + " h" + std::to_string(p.h) + " k" +
               std::to_string(p.k) + " on " + std::to_string(p.ranks.size()) + " ranks>";
      });

  py::class_<PyShard>(m, "Shard", "One rank's tokens [token_begin, token_end) of one sequence.")
      .def_readonly("seq", &PyShard::seq)
      .def_readonly("placement", &PyShard::placement)
      .def_readonly("member", &PyShard::member)
      .def_readonly("token_begin", &PyShard::token_begin)
      .def_readonly("token_end", &PyShard::token_end)
      .def_readonly("q", &PyShard::q)
      .def_readonly("h", &PyShard::h)
      .def_readonly("k", &PyShard::k)
      .def_property_readonly("tokens", [](const PyShard& s) { return s.token_end - s.token_begin; })
      .def("__repr__", [](const PyShard& s) {
        return "<Shard seq " + std::to_string(s.seq) + " tokens [" + std::to_string(s.token_begin) +
               ", " + std::to_string(s.token_end) + ") q" + std::to_string(s.q) + " h" +
               std::to_string(s.h) + " k" + std::to_string(s.k) + ">";
      });

  py::class_<zellige::SimResult>(m, "SimResult", "A plan's modeled training step.")
      .def_readonly("feasible", &zellige::SimResult::feasible)
      .def_readonly("infeasible_reason", &zellige::SimResult::infeasible_reason)
      .def_readonly("makespan_s", &zellige::SimResult::makespan_s)
      .def_readonly("busy_s", &zellige::SimResult::busy_s)
      .def_readonly("finish_s", &zellige::SimResult::finish_s)
      .def_readonly("comm_s", &zellige::SimResult::comm_s)
      .def_readonly("mem_bytes", &zellige::SimResult::mem_bytes)
      .def_readonly("max_over_mean", &zellige::SimResult::max_over_mean)
      .def_readonly("attn_comm_bytes", &zellige::SimResult::attn_comm_bytes)
      .def_readonly("peak_mem_bytes", &zellige::SimResult::peak_mem_bytes)
      .def_readonly("split_sequences", &zellige::SimResult::split_sequences)
      .def("__repr__", [](const zellige::SimResult& r) {
        return "<SimResult makespan " + std::to_string(r.makespan_s) + " s, " +
               (r.feasible ? std::string("feasible") : r.infeasible_reason) + " (modeled)>";
      });

  py::class_<PyPlan>(m, "Plan", "A placement of every sequence of a batch (zellige.plan()).")
      .def_property_readonly("planner", [](const PyPlan& p) { return p.plan().planner; })
      .def_property_readonly("num_ranks", [](const PyPlan& p) { return p.plan().num_ranks; })
      .def_property_readonly("solve_ms", [](const PyPlan& p) { return p.state().run.solve_ms; })
      .def_property_readonly("placements", &Placements)
      .def_property_readonly("shards", &Shards)
      .def_property_readonly(
          "rank_tokens",
          [](const PyPlan& p) {
            std::vector<int64_t> t;
            for (const auto& rank : zellige::RankShards(p.plan(), p.state().batch)) {
              int64_t n = 0;
              for (const zellige::RankShard& s : rank) n += s.tokens();
              t.push_back(n);
            }
            return t;
          },
          "Tokens each rank holds (the sum of its shards).")
      .def("simulate", &SimulatePlan, "The plan's modeled training step (releases the GIL).")
      .def(
          "to_json", [](const PyPlan& p) { return ToJson(p.plan(), p.state().batch).dump(2); },
          "The plan as JSON text (the format of `tessera zellige plan --save-plan`).")
      .def("__repr__", [](const PyPlan& p) {
        return "<tessera.zellige.Plan " + p.plan().planner + ": " +
               std::to_string(p.plan().placements.size()) + " sequences on " +
               std::to_string(p.plan().num_ranks) + " ranks, " +
               std::to_string(zellige::SplitCount(p.plan())) + " split>";
      });

  m.def("plan", &PlanSequences, py::arg("seq_lens"), py::arg("cluster") = py::none(),
        py::arg("planner") = "zellige", py::arg("profile") = py::none(),
        py::arg("model") = py::none(), py::arg("options") = py::dict(),
        "Plan a batch of sequence lengths (tokens) on a cluster; see tessera.zellige.plan.");
}
