#include "kernelflume/elastic_decode.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "core/tensor_error.h"
#include "kernelflume/disaggregated_attention.h"
#include "kernelflume/generate_service.h"
#include "models/generate.h"
#include "models/kv_cache.h"
#include "models/sampler.h"

namespace tessera::kernelflume {

using core::Status;

const char* ElasticActionName(ElasticAction::Kind kind) {
  switch (kind) {
    case ElasticAction::Kind::kJoin:
      return "join";
    case ElasticAction::Kind::kMigrate:
      return "migrate";
    case ElasticAction::Kind::kDrain:
      return "drain";
    case ElasticAction::Kind::kKill:
      return "kill";
  }
  return "?";
}

core::StatusOr<ElasticAction> ParseElasticAction(const std::string& text) {
  const Status bad = core::InvalidArgument(fmt::format(
      "action: got '{}', expected join@T, migrate:NxC@T, migrate:xC@T, drain:N@T or kill:N@T "
      "(N a node id, C a count >= 1, T the tokens generated before it fires)",
      text));
  const size_t at = text.rfind('@');
  if (at == std::string::npos) return bad;
  ElasticAction a;
  const std::string head = text.substr(0, at), when = text.substr(at + 1);
  try {
    size_t used = 0;
    a.after_tokens = std::stoll(when, &used);
    if (used != when.size() || a.after_tokens < 0) return bad;
    const size_t colon = head.find(':');
    const std::string kind = head.substr(0, colon);
    const std::string arg = colon == std::string::npos ? "" : head.substr(colon + 1);
    auto number = [&](const std::string& s, int& out) {
      size_t n = 0;
      out = std::stoi(s, &n);
      return n == s.size() && out >= 0;
    };
    if (kind == "join" && colon == std::string::npos) {
      a.kind = ElasticAction::Kind::kJoin;
    } else if ((kind == "drain" || kind == "kill") && !arg.empty()) {
      a.kind = kind == "drain" ? ElasticAction::Kind::kDrain : ElasticAction::Kind::kKill;
      if (!number(arg, a.node)) return bad;
    } else if (kind == "migrate" && arg.find('x') != std::string::npos) {
      a.kind = ElasticAction::Kind::kMigrate;
      const size_t x = arg.find('x');
      if (x > 0 && !number(arg.substr(0, x), a.node)) return bad;
      if (!number(arg.substr(x + 1), a.count) || a.count < 1) return bad;
    } else {
      return bad;
    }
  } catch (const std::exception&) {
    return bad;
  }
  return a;
}

namespace {

using Clock = std::chrono::steady_clock;

// Moves up to `count` sealed ranges (longest first) from `from` (-1: the node holding the most
// tokens) to the active node with the fewest tokens.
Status MigrateSome(WeightNode& wn, int from, int count, AppliedAction& applied) {
  const std::shared_ptr<const RoutingTable> cur = wn.routes();
  if (from < 0) {
    int64_t most = -1;
    for (const AttentionNodeInfo& n : cur->nodes()) {
      if (n.state == NodeState::kActive && cur->NodeTokens(n.id) > most) {
        most = cur->NodeTokens(n.id);
        from = n.id;
      }
    }
  }
  int target = -1;
  int64_t fewest = INT64_MAX;
  for (const AttentionNodeInfo& n : cur->nodes()) {
    if (n.state == NodeState::kActive && n.id != from && cur->NodeTokens(n.id) < fewest) {
      fewest = cur->NodeTokens(n.id);
      target = n.id;
    }
  }
  if (target < 0) return core::FailedPrecondition("migrate: no other active node to move to");
  struct Candidate {
    uint64_t request, range;
    int64_t tokens;
  };
  std::vector<Candidate> sealed;
  cur->ForEachRequest([&](const RequestRoute& r) {
    for (const RouteRange& g : r.ranges) {
      if (g.node == from && !g.open())
        sealed.push_back({r.request_id, g.range_id, g.end - g.start});
    }
  });
  std::stable_sort(sealed.begin(), sealed.end(),
                   [](const Candidate& a, const Candidate& b) { return a.tokens > b.tokens; });
  applied.node = from;
  for (const Candidate& c : sealed) {
    if (applied.ranges_moved >= count) break;
    Status st = wn.MigrateRange(c.request, c.range, target);
    if (st.ok()) {
      ++applied.ranges_moved;
    } else if (st.code() != core::StatusCode::kFailedPrecondition) {
      return st;  // a request that ended meanwhile is skipped; anything else is an error
    }
  }
  return Status::Ok();
}

struct Shared {
  std::atomic<int64_t> generated{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  Status error = Status::Ok();
  void Fail(Status st) {
    std::lock_guard lock(mu);
    if (error.ok()) error = std::move(st);
    stop = true;
  }
};

void RunOneRequest(const models::LlamaModel& model, WeightNode& wn, uint64_t id,
                   const ElasticDecodeOptions& options, Shared& shared, ElasticRequestResult& r) {
  const models::LlamaConfig& c = model.config();
  auto dis = wn.OpenRequest(id);
  if (!dis.ok()) return shared.Fail(dis.status().WithPrefix(fmt::format("request {}", id)));
  std::unique_ptr<models::LocalKvCache> mono;
  if (options.check) {
    mono = std::make_unique<models::LocalKvCache>(
        c, static_cast<int64_t>(r.prompt.size()) + options.max_tokens);
  }
  std::vector<int32_t> all = r.prompt;
  std::vector<float> logits(c.vocab), mono_logits(c.vocab);
  auto step = [&](int64_t pos0, int64_t n) -> Status {
    RETURN_IF_ERROR(
        ForwardWithRecovery(model, **dis, all, pos0, n, logits.data(), /*last_only=*/true));
    if (mono) {
      RETURN_IF_ERROR(
          model.Forward(std::span(all).subspan(pos0, n), pos0, *mono, mono_logits.data(), true));
      r.max_rel_err = std::max(r.max_rel_err, core::CompareTensors(logits, mono_logits).max_rel);
    }
    return Status::Ok();
  };
  const int64_t n = static_cast<int64_t>(all.size());
  for (int64_t pos = 0; pos < n && !shared.stop;) {
    const int64_t len = std::min<int64_t>(models::kPrefillChunkTokens, n - pos);
    if (Status st = step(pos, len); !st.ok()) {
      return shared.Fail(st.WithPrefix(fmt::format("request {}: prefill at {}", id, pos)));
    }
    pos += len;
  }
  for (int64_t i = 0; i < options.max_tokens && !shared.stop; ++i) {
    const int32_t tok = models::Greedy(logits);
    if (mono && r.first_mismatch < 0 && models::Greedy(mono_logits) != tok) r.first_mismatch = i;
    r.tokens.push_back(tok);
    r.token_times_s.push_back(wn.Now());
    shared.generated.fetch_add(1);
    if (i + 1 == options.max_tokens) break;
    all.push_back(tok);
    if (Status st = step(static_cast<int64_t>(all.size()) - 1, 1); !st.ok()) {
      return shared.Fail(st.WithPrefix(fmt::format("request {}: decode step {}", id, i + 1)));
    }
  }
  r.recoveries = (*dis)->recoveries();
}

}  // namespace

core::StatusOr<ElasticDecodeReport> RunElasticDecode(
    const models::LlamaModel& model, AttentionCluster& cluster,
    const std::vector<std::vector<int32_t>>& prompts, const ElasticDecodeOptions& options) {
  const models::LlamaConfig& c = model.config();
  if (options.max_tokens < 1) {
    return core::InvalidArgument(
        fmt::format("max_tokens: got {}, must be >= 1", options.max_tokens));
  }
  if (prompts.empty()) return core::InvalidArgument("prompts: none given");
  for (size_t i = 0; i < prompts.size(); ++i) {
    const int64_t need = static_cast<int64_t>(prompts[i].size()) + options.max_tokens;
    if (prompts[i].empty() || need > c.max_context) {
      return core::InvalidArgument(fmt::format(
          "prompt {}: {} tokens + max_tokens {}: must be non-empty and within the context of {}", i,
          prompts[i].size(), options.max_tokens, c.max_context));
    }
    for (int32_t t : prompts[i]) {
      if (t < 0 || t >= c.vocab) {
        return core::InvalidArgument(
            fmt::format("prompt {}: token {} outside the vocabulary [0, {})", i, t, c.vocab));
      }
    }
  }
  WeightNode& wn = cluster.weight_node();
  ElasticDecodeReport report;
  report.requests.resize(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) report.requests[i].prompt = prompts[i];
  Shared shared;
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  std::atomic<int> running{static_cast<int>(prompts.size())};
  for (size_t i = 0; i < prompts.size(); ++i) {
    threads.emplace_back([&, i] {
      RunOneRequest(model, wn, i + 1, options, shared, report.requests[i]);
      running.fetch_sub(1);
    });
  }
  // The controller: fires each action once enough tokens were generated.
  for (const ElasticAction& a : options.actions) {
    while (!shared.stop && running.load() > 0 && shared.generated.load() < a.after_tokens) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (a.delay_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(a.delay_s));
    if (shared.stop || running.load() == 0) break;
    AppliedAction applied;
    applied.action = a;
    applied.start_s = wn.Now();
    Status st = Status::Ok();
    switch (a.kind) {
      case ElasticAction::Kind::kJoin: {
        auto id = cluster.AddNode();
        st = id.status();
        if (id.ok()) applied.node = *id;
        break;
      }
      case ElasticAction::Kind::kMigrate:
        st = MigrateSome(wn, a.node, a.count, applied);
        break;
      case ElasticAction::Kind::kDrain:
        applied.node = a.node;
        st = wn.DrainNode(a.node, 60);
        break;
      case ElasticAction::Kind::kKill: {
        applied.node = a.node;
        wn.routes()->ForEachRequest([&](const RequestRoute& r) {
          for (const RouteRange& g : r.ranges) {
            if (g.node == a.node) {
              applied.affected_requests.push_back(r.request_id);
              break;
            }
          }
        });
        applied.start_s = wn.Now();
        cluster.KillNode(a.node);
        break;
      }
    }
    applied.end_s = wn.Now();
    if (!st.ok()) {
      shared.Fail(
          st.WithPrefix(fmt::format("action {}@{}", ElasticActionName(a.kind), a.after_tokens)));
      break;
    }
    report.actions.push_back(applied);
  }
  for (std::thread& t : threads) t.join();
  if (!shared.error.ok()) return shared.error;
  report.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  for (const ElasticRequestResult& r : report.requests) {
    report.max_rel_err = std::max(report.max_rel_err, r.max_rel_err);
    report.mismatched_requests += r.first_mismatch >= 0;
    report.generated_tokens += static_cast<int64_t>(r.tokens.size());
  }
  report.events = wn.events();
  for (AppliedAction& a : report.actions) {
    if (a.action.kind == ElasticAction::Kind::kJoin) a.node_times = wn.node_times(a.node);
  }
  return report;
}

Status ElasticVerdict(const ElasticDecodeReport& report) {
  if (report.max_rel_err <= kCheckRelErrBar && report.mismatched_requests == 0) {
    return Status::Ok();
  }
  return core::Internal(fmt::format(
      "check failed: largest logits error {:.3g} (bar {:.0e}); {} of {} requests took a token "
      "the monolithic model would not have",
      report.max_rel_err, kCheckRelErrBar, report.mismatched_requests, report.requests.size()));
}

}  // namespace tessera::kernelflume
