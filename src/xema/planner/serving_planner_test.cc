#include "xema/planner/serving_planner.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/cpu_affinity.h"
#include "core/units.h"
#include "xema/planner/grid_search.h"
#include "xema/serve/load_mix.h"
#include "xema/serve/planned_device.h"

namespace tessera::xema {
namespace {

ServingPlannerOptions SmallOptions(int64_t budget) {
  ServingPlannerOptions o;
  auto mix =
      MixFromJson(core::ParseJson(R"([{"model":"tiny-t2i","size":"16x16","steps":1,"weight":2},
                                             {"model":"tiny-t2i","size":"64x64","steps":1}])",
                                  "mix")
                      .value(),
                  "mix");
  EXPECT_TRUE(mix.ok());
  o.mix = *mix;
  o.budget_bytes = budget;
  o.rate_rps = 4;
  o.duration_s = 2;
  o.slo_scale = 5;
  o.max_concurrency = 2;
  o.max_batch = 1;  // batches: BatchVariantsAreProfiledAndTheServerAgrees
  o.timing_runs = 1;
  o.overhead_s = 0.002;
  return o;
}

TEST(ServingPlannerTest, ProfilesPlansAndTheGridAgrees) {
  // 48 MiB: the 64x64 template's unmitigated arena (about 11.5 MiB) fits once beside the
  // weights, not twice.
  const ServingPlannerOptions o = SmallOptions(48 * core::kMiBInt64);
  auto p = ProfileServing(o);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->templates.size(), 2u);
  EXPECT_EQ(p->region_bytes, o.budget_bytes - p->weight_bytes.at("tiny-t2i"));
  ASSERT_EQ(p->pair_speedup.size(), 2u);
  for (const auto& row : p->pair_speedup) {
    ASSERT_EQ(row.size(), 2u);
    for (double f : row) EXPECT_GT(f, 0);
  }
  EXPECT_EQ(p->pair_speedup[0][1], p->pair_speedup[1][0]);
  EXPECT_DOUBLE_EQ(p->overhead_s, 0.002);
  for (const TemplateProfile& t : p->templates) {
    ASSERT_FALSE(t.variants.empty());
    EXPECT_TRUE(t.variants[0].labels.empty());  // unmitigated first
    EXPECT_DOUBLE_EQ(t.isolated_s, t.variants[0].solo_s);
    for (const TemplateVariant& v : t.variants) {
      EXPECT_GT(v.solo_s, 0);
      EXPECT_EQ(v.arena_bytes % 512, 0);
    }
  }
  // The grid is every (variant, concurrency) per template.
  const std::vector<Configuration> grid = EnumerateGrid(*p, o.max_concurrency);
  EXPECT_EQ(grid.size(), p->templates[0].variants.size() * 2 * p->templates[1].variants.size() * 2);
  auto r = PlanServing(*p, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(Feasible(*p, r->chosen));
  EXPECT_EQ(r->candidates, static_cast<int64_t>(p->templates[0].variants.size() * 2 +
                                                p->templates[1].variants.size() * 2));
  EXPECT_GT(r->simulated, 0);
  ASSERT_EQ(r->plan.entries.size(), 2u);
  // The plan's arena bytes are what the templates lay out in (the server checks it at start).
  auto rec = RecordPlanEntries(r->plan, "plan", p->region_bytes);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  // The table round-trips and the search's choice is the best simulated point of the grid.
  auto back = ServingPlanFromJson(ToJson(r->plan), "plan");
  ASSERT_TRUE(back.ok()) << back.status().message();
  GridOptions g;
  g.real = false;
  auto sim_grid = RunGrid(*p, o, r->chosen, g);
  ASSERT_TRUE(sim_grid.ok());
  ASSERT_GE(sim_grid->chosen, 0);
  ASSERT_GE(sim_grid->best, 0);
  EXPECT_DOUBLE_EQ(sim_grid->points[static_cast<size_t>(sim_grid->chosen)].predicted.attainment,
                   sim_grid->points[static_cast<size_t>(sim_grid->best)].predicted.attainment);
  for (const GridPoint& pt : sim_grid->points) {
    if (!pt.feasible) {
      EXPECT_EQ(pt.predicted.attainment, 0);
    }
  }
}

TEST(ServingPlannerTest, ARealGridPointIsServedAndMeasured) {
  ServingPlannerOptions o = SmallOptions(64 * core::kMiBInt64);
  o.max_concurrency = 1;
  o.duration_s = 1;
  auto p = ProfileServing(o);
  ASSERT_TRUE(p.ok()) << p.status().message();
  auto r = PlanServing(*p, o);
  ASSERT_TRUE(r.ok());
  GridOptions g;
  auto grid = RunGrid(*p, o, r->chosen, g);
  ASSERT_TRUE(grid.ok()) << grid.status().message();
  EXPECT_GT(grid->served, 0);
  EXPECT_GT(grid->grid_s, 0);
  for (const GridPoint& pt : grid->points) {
    if (!pt.feasible) continue;
    EXPECT_EQ(pt.completed, pt.planned);  // everything answered
    EXPECT_GT(pt.p50_s, 0);
  }
}

TEST(ServingPlannerTest, TwoDevicesAddSequenceParallelVariants) {
  if (core::OnlineCpus() < 2) GTEST_SKIP() << "SP variants need one core per device";
  ServingPlannerOptions o = SmallOptions(64 * core::kMiBInt64);
  o.devices = 2;
  o.max_concurrency = 1;
  o.duration_s = 1;
  auto p = ProfileServing(o);
  ASSERT_TRUE(p.ok()) << p.status().message();
  for (const TemplateProfile& t : p->templates) {
    int sp = 0;
    for (const TemplateVariant& v : t.variants) {
      if (v.sp_degree != 2) continue;
      ++sp;
      EXPECT_EQ(v.labels.front(), "sp=2");
      EXPECT_GT(v.solo_s, 0);
    }
    EXPECT_EQ(sp * 2, static_cast<int>(t.variants.size()));  // each variant at SP 1 and 2
  }
  auto r = PlanServing(*p, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Whatever SP degree each entry took, the server's recording of the table agrees with it.
  auto rec = RecordPlanEntries(r->plan, "plan", p->region_bytes);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  for (size_t e = 0; e < r->plan.entries.size(); ++e) {
    ASSERT_EQ(rec->entries[e].size(), static_cast<size_t>(r->plan.entries[e].batch));
    EXPECT_EQ(rec->entries[e][0].size(), static_cast<size_t>(r->plan.entries[e].sp_degree));
    EXPECT_EQ(r->plan.entries[e].replicas, 2 / r->plan.entries[e].sp_degree);
  }
  // Held to SP 1, no SP variant is profiled.
  o.max_sp_degree = 1;
  auto one = ProfileServing(o);
  ASSERT_TRUE(one.ok());
  for (const TemplateProfile& t : one->templates) {
    for (const TemplateVariant& v : t.variants) EXPECT_EQ(v.sp_degree, 1);
  }
}

TEST(ServingPlannerTest, BatchVariantsAreProfiledAndTheServerAgrees) {
  ServingPlannerOptions o = SmallOptions(64 * core::kMiBInt64);
  o.max_batch = 3;
  o.max_concurrency = 1;
  o.duration_s = 1;
  auto p = ProfileServing(o);
  ASSERT_TRUE(p.ok()) << p.status().message();
  Configuration c;
  for (const TemplateProfile& t : p->templates) {
    int batched = -1;
    for (size_t v = 0; v < t.variants.size(); ++v) {
      const TemplateVariant& tv = t.variants[v];
      ASSERT_EQ(tv.batch_s.size(), static_cast<size_t>(tv.batch));
      EXPECT_DOUBLE_EQ(tv.batch_s[0], tv.solo_s);
      if (tv.batch == 1) continue;
      // A batch of b: the unmitigated request, its arena the largest of batches 1 .. b.
      EXPECT_EQ(tv.labels.front(), fmt::format("batch={}", tv.batch));
      EXPECT_GE(tv.arena_bytes, t.variants[0].arena_bytes);
      for (size_t k = 1; k < tv.batch_s.size(); ++k) EXPECT_GT(tv.batch_s[k], 0);
      if (tv.batch == 3) batched = static_cast<int>(v);
    }
    ASSERT_GE(batched, 0) << t.label;  // both templates fit a batch of 3 in 64 MiB
    c.variant.push_back(batched);
    c.concurrency.push_back(1);
  }
  // The batch entries' tables: scored, and the server's recordings agree with their arenas.
  auto score = ScoreConfiguration(*p, o, PlanArrivals(PlannedLoad(o)).value(), c);
  ASSERT_TRUE(score.ok()) << score.status().message();
  EXPECT_GT(score->attainment, 0);
  const ServingPlan plan = MakeServingPlan(*p, o, c, *score);
  for (const ServingPlanEntry& e : plan.entries) EXPECT_EQ(e.batch, 3);
  auto rec = RecordPlanEntries(plan, "plan", p->region_bytes);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  for (const auto& batches : rec->entries) EXPECT_EQ(batches.size(), 3u);
  // Held to batch 1, none is profiled.
  o.max_batch = 1;
  auto one = ProfileServing(o);
  ASSERT_TRUE(one.ok());
  for (const TemplateProfile& t : one->templates) {
    for (const TemplateVariant& v : t.variants) EXPECT_EQ(v.batch, 1);
  }
}

TEST(ServingPlannerTest, BadOptionsAreNamed) {
  ServingPlannerOptions o = SmallOptions(48 * core::kMiBInt64);
  auto named = [](const ServingPlannerOptions& x, const std::string& want) {
    auto r = ProfileServing(x);
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  };
  ServingPlannerOptions x = o;
  x.rate_rps = 0;
  named(x, "rate: got 0");
  x = o;
  x.budget_bytes = 20 * core::kMiBInt64;  // below the weights
  named(x, "budget: got 20971520 bytes, the mix's models' weights alone take");
  x = o;
  x.mix.push_back(x.mix[0]);
  named(x, "in the mix twice");
  x = o;
  x.mix.clear();
  named(x, "mix: got no templates");
  x = o;
  x.max_concurrency = 17;
  named(x, "max-concurrency");
  x = o;
  x.max_sp_degree = 0;
  named(x, "max-sp: got 0");
  x = o;
  x.max_batch = kMaxRequestBatch + 1;
  named(x, "max-batch: got 5");
}

}  // namespace
}  // namespace tessera::xema

namespace tessera::xema {
namespace {

// A profile by hand: a short template (1 s) and a long one (50 s), one variant each, one device
// (simulated seconds: the planner's simulation, no clock).
ServingProfile ShortAndLong(const ServingPlannerOptions& o) {
  ServingProfile p;
  p.region_bytes = 1 << 20;
  const double solo[2] = {1, 50};
  for (size_t t = 0; t < 2; ++t) {
    TemplateProfile tp;
    tp.label = o.mix[t].label;
    tp.request = o.mix[t].request;
    TemplateVariant v;
    v.request = tp.request;
    v.arena_bytes = 1024;
    v.solo_s = solo[t];
    v.batch_s = {solo[t]};
    tp.variants.push_back(v);
    tp.isolated_s = solo[t];
    p.templates.push_back(tp);
  }
  return p;
}

TEST(ServingPlannerTest, ShedsALongTemplateOnlyWhenAllowedAndOnlyForMoreWithinTheirSlos) {
  ServingPlannerOptions o = SmallOptions(48 * core::kMiBInt64);
  o.rate_rps = 0.05;  // 2:1 short:long, about 87% busy: the long runs hold the shorts back
  o.duration_s = 4000;
  o.slo_scale = 2;
  o.max_concurrency = 1;
  const ServingProfile p = ShortAndLong(o);
  const ServingPlannerResult all = PlanServing(p, o).value();
  EXPECT_TRUE(all.shed.empty());
  EXPECT_EQ(all.score.left_out, 0);
  o.may_shed = true;
  const ServingPlannerResult shed = PlanServing(p, o).value();
  ASSERT_EQ(shed.shed.size(), 1u);
  EXPECT_EQ(shed.shed[0], o.mix[1].label);
  EXPECT_GT(shed.score.attainment, all.score.attainment);
  EXPECT_GT(shed.score.left_out, 0);
  EXPECT_EQ(shed.plan.entries.size(), 1u);
  // At a light load nothing waits: shedding would only lose requests, and is not chosen.
  o.rate_rps = 0.002;
  o.duration_s = 40000;
  EXPECT_TRUE(PlanServing(p, o).value().shed.empty());
}

}  // namespace
}  // namespace tessera::xema
