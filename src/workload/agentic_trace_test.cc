#include "workload/agentic_trace.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "workload/trace_stats.h"

namespace tessera::workload {
namespace {

AgenticTraceOptions Small(uint64_t seed) {
  AgenticTraceOptions o;
  o.seed = seed;
  o.sessions = 20;
  o.duration_s = 60;
  return o;
}

TEST(AgenticTrace, SameSeedSameBytesOtherSeedOtherTrace) {
  auto a = MakeAgenticTrace(Small(3));
  auto b = MakeAgenticTrace(Small(3));
  auto c = MakeAgenticTrace(Small(4));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status().ToString();
  EXPECT_EQ(FormatMooncakeTrace(a->requests), FormatMooncakeTrace(b->requests));
  EXPECT_NE(FormatMooncakeTrace(a->requests), FormatMooncakeTrace(c->requests));
}

TEST(AgenticTrace, IsAValidTraceWhoseSessionsGrowAndRepeatTheirBlocks) {
  auto t = MakeAgenticTrace(Small(1));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->requests.size(), t->steps.size());
  ASSERT_TRUE(ValidateTrace(t->requests).ok()) << ValidateTrace(t->requests).ToString();
  std::map<int64_t, size_t> last;  // session -> index of its previous request
  int64_t next_new_id = 0;
  for (size_t i = 0; i < t->requests.size(); ++i) {
    const TraceRequest& r = t->requests[i];
    const AgenticStep& s = t->steps[i];
    const int64_t first_new = next_new_id;  // ids from here on are this request's new blocks
    EXPECT_EQ(r.input_length, s.prefix_tokens + s.append_tokens);
    // New ids are handed out in file order: each is the next integer.
    for (int64_t id : r.hash_ids) {
      if (id >= next_new_id) {
        EXPECT_EQ(id, next_new_id) << "request " << i;
        next_new_id = id + 1;
      }
    }
    if (s.turn == 1) {
      EXPECT_EQ(last.count(s.session), 0u);
      // The common prefix (4096 tokens = 8 blocks) is ids 0..7 in every session.
      for (int64_t b = 0; b < 8; ++b) EXPECT_EQ(r.hash_ids[b], b);
      for (size_t b = 8; b < r.hash_ids.size(); ++b) EXPECT_GE(r.hash_ids[b], first_new);
    } else {
      ASSERT_EQ(last.count(s.session), 1u);
      const TraceRequest& prev = t->requests[last[s.session]];
      const AgenticStep& ps = t->steps[last[s.session]];
      EXPECT_EQ(ps.turn + 1, s.turn);
      EXPECT_EQ(s.prefix_tokens, prev.input_length + prev.output_length);
      EXPECT_GT(r.timestamp_ms, prev.timestamp_ms - 1);
      const int64_t kept = prev.input_length / kTraceBlockTokens;
      for (int64_t b = 0; b < kept; ++b) EXPECT_EQ(r.hash_ids[b], prev.hash_ids[b]);
      for (size_t b = kept; b < r.hash_ids.size(); ++b) EXPECT_GE(r.hash_ids[b], first_new);
    }
    last[s.session] = i;
  }
  EXPECT_EQ(static_cast<int64_t>(last.size()), 20);
}

// Deterministic at a fixed seed, so the tolerance cannot fail by chance; over 400 sessions
// (about 9,000 steps) the medians land within a few percent of TraceLab's figures.
TEST(AgenticTrace, DefaultMediansMatchTraceLab) {
  AgenticTraceOptions o;
  o.seed = 1;
  o.sessions = 400;
  auto t = MakeAgenticTrace(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const AgenticMedians m = AgenticStepMedians(*t);
  EXPECT_GT(m.steps, 5000);
  EXPECT_NEAR(m.prefix_tokens, 120000, 12000);
  EXPECT_NEAR(m.append_tokens, 880, 88);
  EXPECT_NEAR(m.output_tokens, 200, 20);
  const TraceStats s = ComputeTraceStats(t->requests);
  EXPECT_GT(s.prefix_reuse, 0.9);  // each step re-sends its session's context
  EXPECT_LE(s.input_length.max, o.max_context_tokens);
}

TEST(AgenticTrace, BurstsBringSessionsTogether) {
  AgenticTraceOptions o = Small(2);
  o.sessions = 40;
  o.mean_turns = 1;
  o.burst_probability = 1;
  o.burst_sessions = 4;
  o.burst_window_s = 0.5;
  auto t = MakeAgenticTrace(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->requests.size(), 40u);
  // Sessions 4k..4k+3 start within half a second of each other.
  std::map<int64_t, int64_t> start;
  for (size_t i = 0; i < t->requests.size(); ++i) {
    start[t->steps[i].session] = t->requests[i].timestamp_ms;
  }
  for (int64_t s = 0; s < 40; ++s) {
    EXPECT_LE(std::abs(start[s] - start[s / 4 * 4]), 501) << "session " << s;
  }
}

TEST(AgenticTrace, RefusesBadOptionsNamingTheField) {
  struct Case {
    void (*edit)(AgenticTraceOptions&);
    std::string needle;
  };
  const Case cases[] = {
      {[](AgenticTraceOptions& o) { o.sessions = 0; }, "sessions: got 0, must be in [1, 100000]"},
      {[](AgenticTraceOptions& o) { o.duration_s = -1; }, "duration_s: got -1"},
      {[](AgenticTraceOptions& o) { o.burst_probability = 1.5; }, "burst_probability: got 1.5"},
      {[](AgenticTraceOptions& o) { o.mean_turns = 0.5; }, "mean_turns: got 0.5"},
      {[](AgenticTraceOptions& o) { o.append_sigma = 9; }, "append_sigma: got 9"},
      {[](AgenticTraceOptions& o) { o.output_median_tokens = 0; }, "output_median_tokens: got 0"},
      {[](AgenticTraceOptions& o) { o.shared_prefix_tokens = 1 << 20; },
       "shared_prefix_tokens: got 1048576"},
  };
  for (const Case& c : cases) {
    AgenticTraceOptions o;
    c.edit(o);
    auto t = MakeAgenticTrace(o);
    ASSERT_FALSE(t.ok()) << c.needle;
    EXPECT_NE(t.status().message().find(c.needle), std::string::npos) << t.status().message();
  }
}

TEST(AgenticTrace, ExtremeOptionsStillGiveAReadableTrace) {
  AgenticTraceOptions o = Small(6);
  o.output_median_tokens = kMaxTraceTokens;
  o.append_median_tokens = kMaxTraceTokens;
  o.output_sigma = o.append_sigma = o.tool_gap_sigma = 4;
  o.tool_gap_median_s = 86400;
  o.decode_ms_per_token = 10000;
  auto t = MakeAgenticTrace(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(ValidateTrace(t->requests).ok()) << ValidateTrace(t->requests).ToString();
}

TEST(AgenticTrace, SessionsStopBeforeTheContextLimit) {
  AgenticTraceOptions o = Small(5);
  o.max_context_tokens = 100000;
  o.initial_context_median_tokens = 90000;
  auto t = MakeAgenticTrace(o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  for (const TraceRequest& r : t->requests) EXPECT_LE(r.input_length, 100000);
}

}  // namespace
}  // namespace tessera::workload
