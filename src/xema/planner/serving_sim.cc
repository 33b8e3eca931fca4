#include "xema/planner/serving_sim.h"

#include <fmt/format.h>

#include <cmath>
#include <deque>
#include <map>

#include "sim/simulator.h"
#include "xema/serve/plan_admission.h"

namespace tessera::xema {
namespace {

class Dispatcher : public sim::Listener {
 public:
  Dispatcher(sim::Simulator* sim, const std::vector<sim::ResourceId>* devices,
             const ServingPlan& plan, const ServingSimOptions& o,
             const std::vector<SimArrival>* arrivals, std::vector<SimRequest>* out)
      : sim_(sim),
        devices_(devices),
        admission_(plan, o.devices, o.region_bytes),
        capacity_(o.queue_capacity),
        arrivals_(arrivals),
        out_(out) {}

  void Arrive(int i) {
    if (static_cast<int>(queue_.size()) >= capacity_) {
      (*out_)[static_cast<size_t>(i)].rejected = true;
      return;
    }
    queue_.push_back(i);
    Dispatch();
  }

  void OnFinish(sim::TaskId task, double now_s) override {
    auto it = running_.find(task);
    if (it == running_.end()) return;
    const int i = it->second.first;
    admission_.Release((*arrivals_)[static_cast<size_t>(i)].route, it->second.second);
    (*out_)[static_cast<size_t>(i)].finish_s = now_s;
    (*out_)[static_cast<size_t>(i)].served = true;
    running_.erase(it);
    Dispatch();
  }

 private:
  void Dispatch() {
    while (!queue_.empty()) {
      const int i = queue_.front();
      const SimArrival& a = (*arrivals_)[static_cast<size_t>(i)];
      const std::optional<Admission> adm = admission_.Admit(a.route);
      if (!adm) return;
      queue_.pop_front();
      const sim::ResourceId r = (*devices_)[static_cast<size_t>(adm->device)];
      sim::TaskSpec t;
      t.resources = std::span<const sim::ResourceId>(&r, 1);
      t.work_s = a.work_s;
      t.release_s = sim_->now_s();
      const sim::TaskId id = sim_->AddTask(t);
      running_[id] = {i, *adm};
      SimRequest& s = (*out_)[static_cast<size_t>(i)];
      s.device = adm->device;
      s.start_s = sim_->now_s();
    }
  }

  sim::Simulator* sim_;
  const std::vector<sim::ResourceId>* devices_;
  PlanAdmission admission_;
  int capacity_;
  const std::vector<SimArrival>* arrivals_;
  std::vector<SimRequest>* out_;
  std::deque<int> queue_;
  std::map<sim::TaskId, std::pair<int, Admission>> running_;
};

}  // namespace

core::StatusOr<std::vector<SimRequest>> SimulateServing(const ServingPlan& plan,
                                                        const ServingSimOptions& o,
                                                        const std::vector<SimArrival>& arrivals) {
  if (o.devices < 1 || o.region_bytes <= 0 || o.queue_capacity < 1 || o.speedup.empty() ||
      !(o.overhead_s >= 0)) {
    return core::InvalidArgument(fmt::format(
        "serving simulation: devices {}, region {} bytes, queue {}, {} speed-ups, overhead {} s; "
        "need >= 1, > 0, >= 1, >= 1, >= 0",
        o.devices, o.region_bytes, o.queue_capacity, o.speedup.size(), o.overhead_s));
  }
  for (double s : o.speedup) {
    if (!(s > 0) || !std::isfinite(s)) {
      return core::InvalidArgument(fmt::format("speedup: got {}, must be finite and > 0", s));
    }
  }
  double last = 0;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    const SimArrival& a = arrivals[i];
    const bool routed = a.route.kind == RouteKind::kFallback
                            ? a.route.entry == -1
                            : a.route.entry >= 0 &&
                                  a.route.entry < static_cast<int>(plan.entries.size());
    if (!routed || !(a.at_s >= last) || !(a.work_s >= 0) || !std::isfinite(a.work_s)) {
      return core::InvalidArgument(fmt::format(
          "arrivals[{}]: at {} s (previous {}), entry {}, work {} s: must be in time order, routed "
          "into the plan's {} entries, with finite work >= 0",
          i, a.at_s, last, a.route.entry, a.work_s, plan.entries.size()));
    }
    last = a.at_s;
  }
  sim::Simulator sim;
  std::vector<sim::ResourceId> devices;
  const std::vector<double> speedup = o.speedup;
  for (int d = 0; d < o.devices; ++d) {
    sim::ResourceSpec r;
    r.name = fmt::format("device {}", d);
    r.slots = sim::kUnlimited;
    r.speed = [speedup](int n) {
      const double s = speedup[std::min(static_cast<size_t>(n), speedup.size()) - 1];
      return s / n;
    };
    devices.push_back(sim.AddResource(std::move(r)));
  }
  std::vector<SimRequest> out(arrivals.size());
  Dispatcher dispatcher(&sim, &devices, plan, o, &arrivals, &out);
  sim.set_listener(&dispatcher);
  for (size_t i = 0; i < arrivals.size(); ++i) {
    sim.ScheduleAt(arrivals[i].at_s, [&dispatcher, i] { dispatcher.Arrive(static_cast<int>(i)); });
  }
  sim.Run();
  for (size_t i = 0; i < arrivals.size(); ++i) {
    SimRequest& s = out[i];
    if (!s.served) continue;
    s.latency_s = s.finish_s - arrivals[i].at_s + o.overhead_s;
  }
  return out;
}

}  // namespace tessera::xema
