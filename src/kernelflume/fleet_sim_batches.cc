// FleetSim's requests: sessions held for their previous turn, admission, prefill, decode steps,
// preemption and completion.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "kernelflume/fleet_sim_state.h"

namespace tessera::kernelflume::fleet_detail {

void FleetSim::TryAdmit() {
  while (!queue_.empty()) {
    const int i = queue_.front();
    Request& rq = reqs_[i];
    int g_best = -1;
    KvPrefixCache::Hit hit;
    if (kf()) {
      for (size_t g = 0; g < groups_.size(); ++g) {
        const Group& gr = groups_[g];
        if (!gr.up || gr.load() >= static_cast<size_t>(o_.max_batch)) continue;
        if (g_best < 0 || gr.load() < groups_[g_best].load()) g_best = static_cast<int>(g);
      }
      if (g_best >= 0 && rq.reuse_prefix) hit = domains_[0].cache.Lookup(rq.t->hash_ids, rq.prompt);
    } else {
      int64_t best_free = -1;
      for (size_t g = 0; g < groups_.size(); ++g) {
        const Group& gr = groups_[g];
        const Domain& d = domains_[gr.domain];
        if (!gr.up || gr.load() >= static_cast<size_t>(o_.max_batch)) continue;
        const int64_t free = d.capacity - d.active;
        if (free < rq.prompt + 1) continue;
        const KvPrefixCache::Hit h =
            rq.reuse_prefix ? d.cache.Lookup(rq.t->hash_ids, rq.prompt) : KvPrefixCache::Hit{};
        if (g_best < 0 || h.tokens > hit.tokens || (h.tokens == hit.tokens && free > best_free)) {
          g_best = static_cast<int>(g);
          hit = h;
          best_free = free;
        }
      }
    }
    if (g_best < 0) return;
    Group& g = groups_[g_best];
    Domain& d = domains_[g.domain];
    // The prompt and its first output token (the cached prefix counts: it is taken over).
    if (d.capacity - d.active < rq.prompt + 1) return;
    if (hit.entry >= 0) d.cache.Take(hit.entry);
    d.MakeRoom(rq.prompt + 1);
    queue_.pop_front();
    d.active += rq.prompt;
    rq.kv = rq.prompt;
    rq.cached = hit.tokens;
    rq.group = g_best;
    g.admitted.push_back(i);
    if (!g.busy) StartGroup(g_best);
  }
}

int FleetSim::AttentionNodesUp() const {
  int up = 0;
  for (const Node& n : nodes_) up += n.ready && n.tier == Tier::kAttention ? 1 : 0;
  return up;
}

double FleetSim::StepSeconds(const Group& g, double extra) const {
  const double b = static_cast<double>(g.running.size());
  double kv = b * extra;
  for (int i : g.running) kv += static_cast<double>(reqs_[i].kv);
  FleetStep step{static_cast<int64_t>(g.running.size()), kv, 1, o_.weight_gpus};
  if (kf()) {
    // Attention nodes serve every weight node: they read the whole pool's KV each step.
    step.kv_tokens = std::max(kv, static_cast<double>(domains_[0].active) + b * extra);
    step.attn_nodes = std::max(1, AttentionNodesUp());
    return KernelFlumeStepSeconds(model_, cluster_, AttnDevice(), step, o_.pipelined);
  }
  return InstanceStepSeconds(model_, cluster_, step);
}

// Starts the group's next phase: prefill of the admitted requests, else a decode chunk.
void FleetSim::StartGroup(int gi) {
  Group& g = groups_[gi];
  const double now = q_.now_s();
  if (o_.prefill_chunk_tokens > 0 && (!g.admitted.empty() || !g.chunking.empty())) {
    StartChunkedStep(gi);
    return;
  }
  if (!g.admitted.empty()) {
    double s = 0;
    for (int i : g.admitted) {
      const Request& rq = reqs_[i];
      s += Prefill(rq.prompt - rq.cached, rq.cached);
      r_.prefill_tokens += rq.prompt - rq.cached;
      r_.cached_tokens += rq.cached;
    }
    g.prefill_start_s = now;
    g.prefilling = std::move(g.admitted);
    g.admitted.clear();
    g.busy = true;
    if (perfetto_ != nullptr) {
      perfetto_->Span(g.node, "prefill", "prefill", now, s,
                      core::Json{{"requests", g.prefilling.size()}});
    }
    q_.Schedule(now + s, kFleetStepDone, [this, gi, s] { GroupDone(gi, 0, s); });
    return;
  }
  if (g.running.empty()) {
    g.busy = false;
    return;
  }
  Domain& d = domains_[g.domain];
  const int64_t b = static_cast<int64_t>(g.running.size());
  const double step0 = StepSeconds(g, 0);
  int64_t left = reqs_[g.running.front()].left;
  for (int i : g.running) left = std::min(left, reqs_[i].left);
  int64_t k = std::clamp<int64_t>(static_cast<int64_t>(o_.chunk_s / step0), 1, left);
  // The KV must grow by b tokens a step.
  const int64_t room = d.capacity - d.active;
  if (room < b * k) {
    d.cache.Evict(d.active + d.cache.tokens() + b * k - d.capacity);
    k = std::min(k, room / b);
  }
  if (k == 0) {
    Preempt(gi);
    StartGroup(gi);
    return;
  }
  // The step time at the chunk's middle (the KV grows linearly).
  const double step = k == 1 ? step0 : StepSeconds(g, (k - 1) / 2.0);
  for (int i : g.running) reqs_[i].kv += k;
  d.active += b * k;
  g.busy = true;
  g.slowest_step_s = std::max(g.slowest_step_s, step);
  q_.Schedule(now + k * step, kFleetStepDone, [this, gi, k, step] { GroupDone(gi, k, step); });
}

void FleetSim::Preempt(int gi) {
  Group& g = groups_[gi];
  const int i = g.running.back();
  g.running.pop_back();
  Request& rq = reqs_[i];
  Domain& d = domains_[g.domain];
  d.active -= rq.kv;
  const int64_t generated = rq.t->output_length - rq.left;
  r_.preemptions++;
  r_.recomputed_tokens += rq.kv;
  rq.prompt = rq.t->input_length + generated;
  rq.kv = 0;
  rq.reuse_prefix = false;
  rq.group = -1;
  queue_.push_front(i);
}

void FleetSim::Leave(int i, Domain& d, double now, std::vector<int>* done) {
  Request& rq = reqs_[i];
  d.active -= rq.kv;
  d.cache.Insert(rq.t->hash_ids, rq.t->input_length, rq.kv, now);
  rq.kv = 0;
  done->push_back(i);
}

void FleetSim::FirstToken(int i, Group& g, Domain& d, double now, std::vector<int>* done) {
  Request& rq = reqs_[i];
  if (rq.first_token_s < 0) {
    rq.first_token_s = now;
    ttft_s_.push_back(now - rq.entered_s);
  }
  rq.left--;
  rq.kv++;
  d.active++;
  if (rq.left == 0) {
    Leave(i, d, now, done);
  } else {
    g.running.push_back(i);
  }
}

void FleetSim::Sample(double tpot_s, double weight) {
  if (weight <= 0) return;
  WindowAcc& w = Window(q_.now_s());
  w.tpot_s.push_back(tpot_s);
  w.weight.push_back(weight);
  all_tpot_s_.push_back(tpot_s);
  all_weight_.push_back(weight);
}

void FleetSim::GroupDone(int gi, int64_t steps, double step_s) {
  Group& g = groups_[gi];
  const double now = q_.now_s();
  Domain& d = domains_[g.domain];
  std::vector<int> done;
  if (steps == 0) {  // a prefill ended: the running batch waited for it
    g.prefill_s += now - g.prefill_start_s;
    g.prefill_start_s = -1;
    if (!g.running.empty()) {
      if (g.stall_s == 0) g.stalled = g.running.size();
      g.stall_s += step_s;
    }
    for (int i : g.prefilling) FirstToken(i, g, d, now, &done);
    g.prefilling.clear();
  } else {
    const double b = static_cast<double>(g.running.size());
    const double stalled = static_cast<double>(std::min(g.stalled, g.running.size()));
    Sample(step_s + g.stall_s, g.stall_s > 0 ? stalled : 0);
    Sample(step_s, b * static_cast<double>(steps) - (g.stall_s > 0 ? stalled : 0));
    g.stall_s = 0;
    g.stalled = 0;
    std::vector<int> still;
    for (int i : g.running) {
      reqs_[i].left -= steps;
      if (reqs_[i].left == 0) {
        Leave(i, d, now, &done);
      } else {
        still.push_back(i);
      }
    }
    g.running = std::move(still);
  }
  g.busy = false;
  for (int i : done) Complete(i);
  TryAdmit();
  if (!g.busy) StartGroup(gi);
}

void FleetSim::StartChunkedStep(int gi) {
  Group& g = groups_[gi];
  Domain& d = domains_[g.domain];
  const double now = q_.now_s();
  for (int i : g.admitted) {
    Request& rq = reqs_[i];
    rq.prefilled = rq.cached;
    r_.cached_tokens += rq.cached;
    g.chunking.push_back(i);
  }
  g.admitted.clear();
  // The running batch grows by a token each.
  const int64_t b = static_cast<int64_t>(g.running.size());
  if (b > 0 && d.capacity - d.active < b) {
    d.cache.Evict(d.active + d.cache.tokens() + b - d.capacity);
    if (d.capacity - d.active < b) {
      Preempt(gi);
      StartGroup(gi);
      return;
    }
  }
  // Prompt tokens, oldest admitted first, up to the step's budget.
  int64_t budget = o_.prefill_chunk_tokens;
  double prefill_s = 0;
  for (int i : g.chunking) {
    Request& rq = reqs_[i];
    while (budget > 0 && rq.prefilled < rq.prompt) {
      const int64_t len = std::min(budget, rq.prompt - rq.prefilled);
      prefill_s += Prefill(len, rq.prefilled);
      r_.prefill_tokens += len;
      rq.prefilled += len;
      budget -= len;
    }
    if (budget <= 0) break;
  }
  const double decode_s = b > 0 ? StepSeconds(g, 0) : 0;
  for (int i : g.running) reqs_[i].kv++;
  d.active += b;
  g.busy = true;
  const double step = prefill_s + decode_s;
  g.slowest_step_s = std::max(g.slowest_step_s, step);
  const size_t batch = g.running.size();
  q_.Schedule(now + step, kFleetStepDone,
              [this, gi, step, prefill_s, batch] { ChunkedStepDone(gi, step, prefill_s, batch); });
}

void FleetSim::ChunkedStepDone(int gi, double step_s, double prefill_s, size_t batch) {
  Group& g = groups_[gi];
  const double now = q_.now_s();
  Domain& d = domains_[g.domain];
  std::vector<int> done;
  g.prefill_s += prefill_s;
  // The batch that stepped: the first `batch` running requests (new ones join at the back).
  Sample(step_s, static_cast<double>(batch));
  std::vector<int> still;
  for (size_t k = 0; k < g.running.size(); ++k) {
    const int i = g.running[k];
    if (k < batch && --reqs_[i].left == 0) {
      Leave(i, d, now, &done);
    } else {
      still.push_back(i);
    }
  }
  g.running = std::move(still);
  std::vector<int> chunking;
  for (int i : g.chunking) {
    if (reqs_[i].prefilled >= reqs_[i].prompt) {
      FirstToken(i, g, d, now, &done);
    } else {
      chunking.push_back(i);
    }
  }
  g.chunking = std::move(chunking);
  g.busy = false;
  for (int i : done) Complete(i);
  TryAdmit();
  if (!g.busy) StartGroup(gi);
}

void FleetSim::Arrive(int i) {
  const workload::TraceRequest& t = *reqs_[i].t;
  int before = -1;
  for (int64_t b = static_cast<int64_t>(t.hash_ids.size()) - 1; b >= 0 && before < 0; --b) {
    auto it = in_flight_.find(t.hash_ids[b]);
    if (it == in_flight_.end() || FullBlocks(*reqs_[it->second].t) != b + 1) continue;
    // A later turn holds the earlier turn's prompt and its answer; a request that only shares
    // the blocks (a common system prompt) is not waiting for anything.
    const workload::TraceRequest& p = *reqs_[it->second].t;
    if (t.input_length >= p.input_length + p.output_length) before = it->second;
  }
  // In flight from now, held or not: a later turn waits for this one, not an earlier one.
  const int64_t blocks = FullBlocks(t);
  if (blocks > 0) in_flight_[t.hash_ids[blocks - 1]] = i;
  if (before >= 0) {
    reqs_[before].dependents.push_back(i);
    r_.held_turns++;
    return;
  }
  Enter(i);
}

void FleetSim::Enter(int i) {
  Request& rq = reqs_[i];
  rq.entered_s = q_.now_s();
  if (rq.t->input_length + rq.t->output_length > largest_request_) {
    r_.rejected++;
    Complete(i);
    return;
  }
  queue_.push_back(i);
  TryAdmit();
}

void FleetSim::Complete(int i) {
  Request& rq = reqs_[i];
  if (rq.kv == 0 && rq.left == 0) {
    r_.completed++;
    r_.output_tokens += rq.t->output_length;
  }
  const int64_t blocks = FullBlocks(*rq.t);
  if (blocks > 0) {
    auto it = in_flight_.find(rq.t->hash_ids[blocks - 1]);
    if (it != in_flight_.end() && it->second == i) in_flight_.erase(it);
  }
  finished_++;
  if (finished_ == static_cast<int64_t>(reqs_.size())) {
    r_.end_s = q_.now_s();
    IntegrateGpus(r_.end_s);
  }
  std::vector<int> held = std::move(rq.dependents);
  for (int d : held) Enter(d);
}

}  // namespace tessera::kernelflume::fleet_detail
