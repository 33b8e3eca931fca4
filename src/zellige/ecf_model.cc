#include "zellige/ecf_model.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "core/infinity.h"

namespace tessera::zellige {
namespace {

using core::kInf;

bool Inside(const RankBlock& b, const RankBlock& c) {
  return b.first >= c.first && b.first + b.size <= c.first + c.size;
}

// The left and right halves of a parent block.
std::pair<RankBlock, RankBlock> Children(const RankBlock& p) {
  return {{p.first, p.size / 2}, {p.first + p.size / 2, p.size / 2}};
}

// Per group, the indices of its options with time_s <= max_option_time_s (1 + 1e-9).
std::vector<std::vector<int>> KeptOptions(const EcfInstance& inst, double max_option_time_s) {
  std::vector<std::vector<int>> kept(inst.groups.size());
  for (size_t g = 0; g < inst.groups.size(); ++g) {
    for (size_t j = 0; j < inst.options[g].size(); ++j) {
      if (inst.options[g][j].time_s <= max_option_time_s * (1 + 1e-9))
        kept[g].push_back(static_cast<int>(j));
    }
  }
  return kept;
}

// Variables u[g, j, B] for the kept options, then the fluid f_r.
void AddPlacementVariables(const EcfInstance& inst, const std::vector<std::vector<int>>& kept,
                           EcfModel* model) {
  const std::vector<RankBlock>& blocks = inst.blocks;
  model->var_at.resize(inst.groups.size());
  for (size_t g = 0; g < inst.groups.size(); ++g) {
    model->var_at[g].assign(inst.options[g].size() * blocks.size(), -1);
    const double ng = static_cast<double>(inst.groups[g].seqs.size());
    for (int j : kept[g]) {
      for (size_t b = 0; b < blocks.size(); ++b) {
        if (blocks[b].size != inst.options[g][j].degree) continue;
        model->var_at[g][j * blocks.size() + b] = static_cast<int>(model->vars.size());
        model->vars.push_back({static_cast<int>(g), j, static_cast<int>(b)});
        model->var_index.push_back(model->milp.AddVariable(0, ng, 0, true));
      }
    }
  }
  if (inst.fluid_time_s > 0) {
    for (int r = 0; r < inst.num_ranks; ++r)
      model->f_var.push_back(model->milp.AddVariable(0, solver::kInfinity, 0, false));
  }
}

// Lower bound on T: average work and the heaviest single sequence.
double MakespanLowerBound(const EcfInstance& inst, const std::vector<std::vector<int>>& kept) {
  double total_min_work = inst.fluid_time_s, heaviest = 0;
  for (size_t g = 0; g < inst.groups.size(); ++g) {
    double min_work = kInf, min_time = kInf;
    for (int j : kept[g]) {
      const GroupOption& o = inst.options[g][j];
      min_work = std::min(min_work, o.time_s * o.degree);
      min_time = std::min(min_time, o.time_s);
    }
    total_min_work += min_work * inst.groups[g].seqs.size();
    heaviest = std::max(heaviest, min_time);
  }
  return std::max(total_min_work / inst.num_ranks, heaviest);
}

// Every sequence of every group is placed: sum_{j,B} u[g, j, B] = n_g.
void AddAssignmentRows(const EcfInstance& inst, EcfModel* model) {
  for (size_t g = 0; g < inst.groups.size(); ++g) {
    std::vector<solver::MilpTerm> row;
    for (int v : model->var_at[g])
      if (v >= 0) row.push_back({model->var_index[v], 1.0});
    const double ng = static_cast<double>(inst.groups[g].seqs.size());
    model->milp.AddConstraint(std::move(row), ng, ng);
  }
}

// Per rank: load + f_r - T <= 0 and mem + rho f_r <= cap (when anything can use memory
// there); then the fluid total sum_r f_r = fluid.
void AddCapacityRows(const EcfInstance& inst, EcfModel* model) {
  const int n = inst.num_ranks;
  const double fluid = inst.fluid_time_s, rho = inst.fluid_mem_per_s;
  std::vector<std::vector<solver::MilpTerm>> load_rows(n), mem_rows(n);
  for (size_t i = 0; i < model->vars.size(); ++i) {
    const EcfVar& v = model->vars[i];
    const GroupOption& o = inst.options[v.group][v.option];
    for (int r : inst.blocks[v.block].RankRange()) {
      load_rows[r].push_back({model->var_index[i], o.time_s});
      mem_rows[r].push_back({model->var_index[i], o.mem_bytes});
    }
  }
  for (int r = 0; r < n; ++r) {
    if (fluid > 0) {
      load_rows[r].push_back({model->f_var[r], 1.0});
      if (rho > 0) mem_rows[r].push_back({model->f_var[r], rho});
    }
    load_rows[r].push_back({model->t_var, -1.0});
    model->milp.AddConstraint(std::move(load_rows[r]), -solver::kInfinity, 0.0);
    if (!mem_rows[r].empty())
      model->milp.AddConstraint(std::move(mem_rows[r]), -solver::kInfinity, inst.mem_cap_bytes);
  }
  if (fluid > 0) {
    std::vector<solver::MilpTerm> row;
    for (int r = 0; r < n; ++r) row.push_back({model->f_var[r], 1.0});
    model->milp.AddConstraint(std::move(row), fluid, fluid);
  }
}

// Blocks of size >= 2, largest first (ties in block order).
std::vector<RankBlock> SymmetryParents(const std::vector<RankBlock>& blocks) {
  std::vector<RankBlock> parents;
  for (const auto& b : blocks)
    if (b.size >= 2) parents.push_back(b);
  std::stable_sort(parents.begin(), parents.end(),
                   [](const RankBlock& a, const RankBlock& b) { return a.size > b.size; });
  return parents;
}

// Per parent: work (time x degree, fluid included) inside the left child >= inside the right.
void AddSymmetryRows(const EcfInstance& inst, EcfModel* model) {
  for (const auto& p : model->parents) {
    const auto [c1, c2] = Children(p);
    std::vector<solver::MilpTerm> row;
    for (size_t i = 0; i < model->vars.size(); ++i) {
      const EcfVar& v = model->vars[i];
      const RankBlock& b = inst.blocks[v.block];
      const double w = inst.options[v.group][v.option].time_s * b.size;
      if (Inside(b, c1)) row.push_back({model->var_index[i], w});
      if (Inside(b, c2)) row.push_back({model->var_index[i], -w});
    }
    if (inst.fluid_time_s > 0) {
      for (int r : c1.RankRange()) row.push_back({model->f_var[r], 1.0});
      for (int r : c2.RankRange()) row.push_back({model->f_var[r], -1.0});
    }
    if (!row.empty()) model->milp.AddConstraint(std::move(row), 0.0, solver::kInfinity);
  }
}

int BlockIndex(const std::vector<RankBlock>& blocks, int first, int size) {
  for (size_t b = 0; b < blocks.size(); ++b)
    if (blocks[b].first == first && blocks[b].size == size) return static_cast<int>(b);
  return -1;
}

// Canonicalises a placement for the symmetry rows: top-down, mirrors the sibling subtrees
// of every parent whose right child holds more work than its left one.
void MirrorForSymmetry(const EcfInstance& inst, const std::vector<RankBlock>& parents,
                       std::vector<AnchorPick>* picks, std::vector<double>* fluid_s) {
  const std::vector<RankBlock>& blocks = inst.blocks;
  for (const auto& p : parents) {
    const auto [c1, c2] = Children(p);
    double w1 = 0, w2 = 0;
    for (const auto& pk : *picks) {
      const RankBlock& b = blocks[pk.block];
      const double w = inst.options[pk.group][pk.option].time_s * b.size;
      if (Inside(b, c1)) w1 += w;
      if (Inside(b, c2)) w2 += w;
    }
    for (int r : c1.RankRange()) w1 += (*fluid_s)[r];
    for (int r : c2.RankRange()) w2 += (*fluid_s)[r];
    if (w1 >= w2) continue;
    for (auto& pk : *picks) {
      const RankBlock& b = blocks[pk.block];
      if (Inside(b, c1)) {
        pk.block = BlockIndex(blocks, b.first + c1.size, b.size);
      } else if (Inside(b, c2)) {
        pk.block = BlockIndex(blocks, b.first - c1.size, b.size);
      }
    }
    std::swap_ranges(fluid_s->begin() + c1.first, fluid_s->begin() + c1.first + c1.size,
                     fluid_s->begin() + c2.first);
  }
}

}  // namespace

EcfModel BuildEcfModel(const EcfInstance& inst, double max_option_time_s, bool symmetry_breaking) {
  EcfModel model;
  const std::vector<std::vector<int>> kept = KeptOptions(inst, max_option_time_s);
  AddPlacementVariables(inst, kept, &model);
  model.t_lb = MakespanLowerBound(inst, kept);
  model.t_var = model.milp.AddVariable(model.t_lb, solver::kInfinity, 1.0, false);
  AddAssignmentRows(inst, &model);
  AddCapacityRows(inst, &model);
  model.parents = SymmetryParents(inst.blocks);
  if (symmetry_breaking) AddSymmetryRows(inst, &model);
  return model;
}

std::optional<std::vector<double>> PlacementValues(const EcfInstance& inst, const EcfModel& model,
                                                   bool symmetry_breaking,
                                                   std::vector<AnchorPick> picks,
                                                   std::vector<double> fluid_s) {
  const int n = inst.num_ranks;
  if (picks.empty()) return std::nullopt;
  if (fluid_s.empty()) fluid_s.assign(n, 0.0);
  if (symmetry_breaking) MirrorForSymmetry(inst, model.parents, &picks, &fluid_s);
  std::vector<double> values(model.milp.num_variables(), 0.0);
  std::vector<double> load(n, 0.0);
  for (const auto& pk : picks) {
    const int v = model.var_at[pk.group][pk.option * inst.blocks.size() + pk.block];
    if (v < 0) return std::nullopt;
    values[model.var_index[v]] += 1;
    AddToBlock(inst.blocks[pk.block], inst.options[pk.group][pk.option].time_s, &load);
  }
  double t = model.t_lb;
  for (int r = 0; r < n; ++r) {
    if (inst.fluid_time_s > 0) values[model.f_var[r]] = fluid_s[r];
    t = std::max(t, load[r] + fluid_s[r]);
  }
  values[model.t_var] = t;
  return values;
}

}  // namespace tessera::zellige
