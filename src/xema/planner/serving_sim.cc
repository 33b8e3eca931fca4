#include "xema/planner/serving_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

#include "sim/event_queue.h"
#include "xema/serve/plan_admission.h"

namespace tessera::xema {
namespace {

// Event kinds at equal times: completions before arrivals (a slot freed at t is free for an
// arrival at t, as the server's worker releases before the next request is dispatched).
constexpr int kDone = 0;
constexpr int kArrive = 1;

class Engine {
 public:
  Engine(const ServingPlan& plan, const ServingSimOptions& o,
         const std::vector<SimArrival>& arrivals, std::vector<SimRequest>* out)
      : plan_(plan),
        o_(o),
        arrivals_(arrivals),
        out_(out),
        admission_(plan, o.devices, o.region_bytes) {}

  void Run() {
    for (size_t i = 0; i < arrivals_.size(); ++i) {
      queue_events_.Schedule(arrivals_[i].at_s, kArrive,
                             [this, i] { Arrive(static_cast<int>(i)); });
    }
    queue_events_.Run();
  }

 private:
  struct Task {
    std::vector<int> requests;  // the head, then its batch mates
    double remaining_s = 0;     // solo seconds of work left
    double rate = 1;            // solo seconds per second, since the last Advance
    Admission admission;        // devices admission.device .. + span - 1
  };

  double PairSpeedup(int a, int b) const {
    if (o_.pair_speedup.empty()) return 1;
    return o_.pair_speedup[static_cast<size_t>(a)][static_cast<size_t>(b)];
  }

  int Class(const Task& t) const {
    return arrivals_[static_cast<size_t>(t.requests[0])].template_index;
  }

  // Brings every task's remaining work up to now.
  void Advance() {
    const double now = queue_events_.now_s();
    for (Task& t : running_) t.remaining_s -= t.rate * (now - since_s_);
    since_s_ = now;
  }

  // New rates after a change of the running set, and the next completion. A device shares
  // itself among its n tasks at f(S) / n each; a gang task advances at its slowest device's.
  void Reschedule() {
    if (next_ >= 0) queue_events_.Cancel(next_);
    next_ = -1;
    if (running_.empty()) return;
    std::vector<std::vector<int>> on(static_cast<size_t>(o_.devices));
    for (size_t i = 0; i < running_.size(); ++i) {
      const Admission& a = running_[i].admission;
      for (int m = 0; m < a.span; ++m)
        on[static_cast<size_t>(a.device + m)].push_back(static_cast<int>(i));
    }
    std::vector<double> share(on.size(), 1);
    for (size_t d = 0; d < on.size(); ++d) {
      const size_t n = on[d].size();
      if (n < 2) continue;
      double sum = 0;
      int pairs = 0;
      for (size_t a = 0; a < n; ++a) {
        for (size_t b = a + 1; b < n; ++b) {
          sum += PairSpeedup(Class(running_[static_cast<size_t>(on[d][a])]),
                             Class(running_[static_cast<size_t>(on[d][b])]));
          ++pairs;
        }
      }
      share[d] = sum / pairs / static_cast<double>(n);
    }
    double first = std::numeric_limits<double>::infinity();
    for (Task& t : running_) {
      t.rate = std::numeric_limits<double>::infinity();
      for (int m = 0; m < t.admission.span; ++m)
        t.rate = std::min(t.rate, share[static_cast<size_t>(t.admission.device + m)]);
      first = std::min(first, std::max(0.0, t.remaining_s) / t.rate);
    }
    next_ = queue_events_.Schedule(queue_events_.now_s() + first, kDone, [this] { Complete(); });
  }

  void Complete() {
    next_ = -1;
    Advance();
    // The task(s) whose work ran out (the least time left, and any within rounding of it).
    double least = std::numeric_limits<double>::infinity();
    for (const Task& t : running_) least = std::min(least, std::max(0.0, t.remaining_s) / t.rate);
    const double eps = 1e-9 * (1 + std::abs(least));
    std::vector<Task> done;
    std::erase_if(running_, [&](const Task& t) {
      if (std::max(0.0, t.remaining_s) / t.rate > least + eps) return false;
      done.push_back(t);
      return true;
    });
    for (const Task& t : done) {
      for (const int r : t.requests) {
        SimRequest& s = (*out_)[static_cast<size_t>(r)];
        s.finish_s = queue_events_.now_s();
        s.served = true;
      }
      admission_.Release(arrivals_[static_cast<size_t>(t.requests[0])].route, t.admission);
    }
    Reschedule();
    Dispatch();
  }

  void Arrive(int i) {
    if (static_cast<int>(queue_.size()) >= o_.queue_capacity) {
      (*out_)[static_cast<size_t>(i)].rejected = true;
      return;
    }
    queue_.push_back(i);
    Dispatch();
  }

  void Dispatch() {
    while (!queue_.empty()) {
      const int i = queue_.front();
      const SimArrival& a = arrivals_[static_cast<size_t>(i)];
      const std::optional<Admission> adm = admission_.Admit(a.route);
      if (!adm) return;  // strict FCFS: the head and everything behind it wait
      queue_.pop_front();
      // Its batch mates leave the queue with it (BatchMates: the server's rule).
      Task task{{i}, a.work_s, 1, *adm};
      const std::vector<int> mates = TakeBatchMates(plan_, a.route, queue_, [this](int w) {
        return arrivals_[static_cast<size_t>(w)].route;
      });
      task.requests.insert(task.requests.end(), mates.begin(), mates.end());
      if (task.requests.size() > 1) {
        task.remaining_s =
            o_.batch_work_s[static_cast<size_t>(a.route.entry)][task.requests.size() - 1];
      }
      Advance();
      for (const int r : task.requests) {
        SimRequest& s = (*out_)[static_cast<size_t>(r)];
        s.device = adm->device;
        s.start_s = queue_events_.now_s();
      }
      running_.push_back(std::move(task));
      Reschedule();
    }
  }

  const ServingPlan& plan_;
  const ServingSimOptions& o_;
  const std::vector<SimArrival>& arrivals_;
  std::vector<SimRequest>* out_;
  PlanAdmission admission_;
  std::vector<Task> running_;  // on every device
  double since_s_ = 0;         // when remaining_s was last brought up to date
  sim::EventId next_ = -1;     // the next completion
  std::deque<int> queue_;
  sim::EventQueue queue_events_;
};

}  // namespace

core::StatusOr<std::vector<SimRequest>> SimulateServing(const ServingPlan& plan,
                                                        const ServingSimOptions& o,
                                                        const std::vector<SimArrival>& arrivals) {
  if (o.devices < 1 || o.region_bytes <= 0 || o.queue_capacity < 1 || !(o.overhead_s >= 0)) {
    return core::InvalidArgument(fmt::format(
        "serving simulation: devices {}, region {} bytes, queue {}, overhead {} s; need >= 1, "
        "> 0, >= 1, >= 0",
        o.devices, o.region_bytes, o.queue_capacity, o.overhead_s));
  }
  for (size_t e = 0; e < plan.entries.size(); ++e) {
    const int sp = plan.entries[e].sp_degree;
    if (sp < 1 || o.devices % sp != 0) {
      return core::InvalidArgument(fmt::format(
          "plan entries[{}].sp_degree: got {}, must divide the {} devices (replica groups)", e, sp,
          o.devices));
    }
    const int batch = plan.entries[e].batch;
    if (batch < 1) {
      return core::InvalidArgument(
          fmt::format("plan entries[{}].batch: got {}, must be >= 1", e, batch));
    }
    if (batch == 1) continue;
    const bool listed = e < o.batch_work_s.size() &&
                        o.batch_work_s[e].size() >= static_cast<size_t>(batch) &&
                        std::all_of(o.batch_work_s[e].begin(), o.batch_work_s[e].end(),
                                    [](double s) { return s >= 0 && std::isfinite(s); });
    if (!listed) {
      return core::InvalidArgument(fmt::format(
          "batch_work_s[{}]: entry {} has batch {}, need the finite seconds (>= 0) of a run of "
          "each batch size 1 .. {}",
          e, e, batch, batch));
    }
  }
  const size_t k = o.pair_speedup.size();
  for (size_t a = 0; a < k; ++a) {
    if (o.pair_speedup[a].size() != k) {
      return core::InvalidArgument(
          fmt::format("pair_speedup[{}]: got {} values, must be square ({} x {})", a,
                      o.pair_speedup[a].size(), k, k));
    }
    for (size_t b = 0; b < k; ++b) {
      const double v = o.pair_speedup[a][b];
      if (!(v > 0) || !std::isfinite(v) || v != o.pair_speedup[b][a]) {
        return core::InvalidArgument(fmt::format(
            "pair_speedup[{}][{}]: got {}, must be finite, > 0 and symmetric", a, b, v));
      }
    }
  }
  double last = 0;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    const SimArrival& a = arrivals[i];
    const bool routed =
        a.route.kind == RouteKind::kFallback
            ? a.route.entry == -1
            : a.route.entry >= 0 && a.route.entry < static_cast<int>(plan.entries.size());
    const bool classed =
        k == 0 || (a.template_index >= 0 && a.template_index < static_cast<int>(k));
    if (!routed || !classed || !(a.at_s >= last) || !(a.work_s >= 0) || !std::isfinite(a.work_s)) {
      return core::InvalidArgument(fmt::format(
          "arrivals[{}]: at {} s (previous {}), entry {}, class {}, work {} s: must be in time "
          "order, routed into the plan's {} entries, of a class of pair_speedup, with finite "
          "work >= 0",
          i, a.at_s, last, a.route.entry, a.template_index, a.work_s, plan.entries.size()));
    }
    last = a.at_s;
  }
  std::vector<SimRequest> out(arrivals.size());
  Engine(plan, o, arrivals, &out).Run();
  for (size_t i = 0; i < arrivals.size(); ++i) {
    SimRequest& s = out[i];
    if (!s.served) continue;
    s.latency_s = s.finish_s - arrivals[i].at_s + o.overhead_s;
  }
  return out;
}

}  // namespace tessera::xema
