#include "sim/simulator.h"

#include <algorithm>
#include <utility>

#include "core/check.h"
#include "sim/list_schedule.h"

namespace tessera::sim {

namespace {
// A running task whose remaining work is below this fraction of its work is done (the
// rounding left by advancing several tasks by one step).
constexpr double kDoneFraction = 1e-12;
}  // namespace

GroupId Simulator::AddGroup(GroupSpec spec) {
  if (spec.speed) has_speed_ = true;
  groups_.push_back(Group{std::move(spec.speed)});
  return static_cast<GroupId>(groups_.size() - 1);
}

ResourceId Simulator::AddResource(ResourceSpec spec) {
  CHECK_GE(spec.slots, 1);
  CHECK(spec.group == kNoGroup || (spec.group >= 0 && spec.group < (int)groups_.size()))
      << "unknown group " << spec.group;
  if (spec.speed) has_speed_ = true;
  if (spec.slots != 1) has_slots_ = true;
  Resource r;
  r.name = std::move(spec.name);
  r.slots = spec.slots;
  r.speed = std::move(spec.speed);
  r.group = spec.group;
  resources_.push_back(std::move(r));
  return static_cast<ResourceId>(resources_.size() - 1);
}

void Simulator::Reserve(int tasks, int64_t task_resources) {
  tasks_.reserve(tasks);
  task_res_.reserve(task_resources);
  task_res_admitted_.reserve(task_resources);
}

TaskId Simulator::AddTask(const TaskSpec& spec) {
  CHECK(spec.work_s >= 0) << "work_s " << spec.work_s;
  const TaskId id = static_cast<TaskId>(tasks_.size());
  Task t;
  t.res_begin = static_cast<int64_t>(task_res_.size());
  t.res_count = static_cast<int>(spec.resources.size());
  t.work_s = t.remaining_s = spec.work_s;
  t.release_s = spec.release_s;
  t.dep_begin = static_cast<int64_t>(task_deps_.size());
  t.dep_count = static_cast<int>(spec.deps.size());
  bool doomed = false;
  for (size_t i = 0; i < spec.resources.size(); ++i) {
    const ResourceId r = spec.resources[i];
    CHECK(r >= 0 && r < num_resources()) << "unknown resource " << r;
    const Resource& res = resources_[r];
    if (i == 0) t.group = res.group;
    if (res.speed || res.group != t.group) t.general_rate = true;
    task_res_.push_back(r);
    task_res_admitted_.push_back(0);
    doomed |= resources_[r].failed;
  }
  for (TaskId d : spec.deps) {
    CHECK(d >= 0 && d < id) << "task " << id << " depends on " << d << ", not added before it";
    task_deps_.push_back(d);
    if (tasks_[d].state == TaskState::kAborted) doomed = true;
    if (tasks_[d].state == TaskState::kDone) continue;
    ++t.deps_left;
    if (dependents_.size() < tasks_.size()) dependents_.resize(tasks_.size());
    dependents_[d].push_back(id);
  }
  tasks_.push_back(t);
  if (!spec.name.empty() || !spec.category.empty()) {
    labels_.resize(tasks_.size());
    labels_[id] = {spec.name, spec.category};
  }
  if (doomed) {
    Abort(id);
    return id;
  }
  for (ResourceId r : spec.resources) resources_[r].queue.push_back(id);
  if (started_events_) {
    for (ResourceId r : spec.resources) Admit(r);
    if (t.res_count == 0) TryStart(id);
  }
  return id;
}

void Simulator::FailResourceAt(ResourceId r, double time_s) {
  CHECK(r >= 0 && r < num_resources()) << "unknown resource " << r;
  has_events_ = true;
  queue_.Schedule(time_s, kFailure, [this, r] { OnFailure(r); });
}

EventId Simulator::ScheduleAt(double time_s, std::function<void()> fn, int kind_offset) {
  CHECK_GE(kind_offset, 0);
  has_events_ = true;
  return queue_.Schedule(time_s, kUser + kind_offset, std::move(fn));
}

bool Simulator::Dynamic() const {
  return options_.force_events || has_speed_ || has_slots_ || has_events_ || started_events_ ||
         listener_ != nullptr;
}

RunStats Simulator::Run(double until_s) {
  RunStats s;
  if (!Dynamic() && until_s == kForever) {
    RunListSchedule();
  } else {
    const int64_t before = queue_.next_id() - static_cast<int64_t>(queue_.pending());
    RunEvents(until_s);
    s.events = queue_.next_id() - static_cast<int64_t>(queue_.pending()) - before;
  }
  for (const Task& t : tasks_) {
    s.finished += t.state == TaskState::kDone;
    s.aborted += t.state == TaskState::kAborted;
  }
  s.unfinished = num_tasks() - s.finished - s.aborted;
  s.end_s = now_s();
  return s;
}

// Every speed is 1 and every resource runs one task at a time, in the order added: the list
// schedule over the tasks added since the last Run (earlier ones are all done).
void Simulator::RunListSchedule() {
  const int first = list_scheduled_, count = num_tasks() - first;
  std::vector<double> free(resources_.size()), start(count), end(count);
  for (ResourceId r = 0; r < num_resources(); ++r) free[r] = resources_[r].free_s;
  const double now = now_s();
  ListSchedule(
      count,
      [&](int i) {
        const Task& t = tasks_[first + i];
        return std::span<const ResourceId>(task_res_.data() + t.res_begin, t.res_count);
      },
      [&](int i) {
        // Dependencies are earlier tasks: their ends are known (aborts need failures, which
        // the list schedule never sees).
        const Task& t = tasks_[first + i];
        double st = std::max(t.release_s, now);
        for (int k = 0; k < t.dep_count; ++k) {
          st = std::max(
              st, i + first > task_deps_[t.dep_begin + k] && task_deps_[t.dep_begin + k] >= first
                      ? end[task_deps_[t.dep_begin + k] - first]
                      : tasks_[task_deps_[t.dep_begin + k]].end_s);
        }
        return st;
      },
      [&](int i) { return tasks_[first + i].work_s; }, start, end, free);
  double last = now;
  for (int i = 0; i < count; ++i) {
    Task& t = tasks_[first + i];
    t.start_s = start[i];
    t.end_s = end[i];
    t.remaining_s = 0;
    t.deps_left = 0;
    t.state = TaskState::kDone;
    last = std::max(last, end[i]);
  }
  for (ResourceId r = 0; r < num_resources(); ++r) {
    resources_[r].free_s = free[r];
    resources_[r].next = resources_[r].queue.size();
  }
  list_scheduled_ = num_tasks();
  queue_.AdvanceTo(last);
}

void Simulator::RunEvents(double until_s) {
  if (!started_events_) {
    started_events_ = true;
    for (ResourceId r = 0; r < num_resources(); ++r) Admit(r);
    for (TaskId t = 0; t < num_tasks(); ++t) {
      if (tasks_[t].res_count == 0) TryStart(t);
    }
  }
  std::vector<TaskId> done;
  while (true) {
    EventKey next_done, next_event;
    const bool has_done = NextCompletion(&next_done);
    const bool has_event = queue_.PeekNext(&next_event);
    if (!has_done && !has_event) break;
    const bool take_done = has_done && (!has_event || next_done.Before(next_event));
    const double t_next = take_done ? next_done.time_s : next_event.time_s;
    if (t_next > until_s) {
      Progress(until_s - now_s());
      queue_.AdvanceTo(until_s);
      break;
    }
    if (!take_done) {
      Progress(t_next - now_s());
      queue_.Step();
      continue;
    }
    queue_.AdvanceTo(t_next);
    tasks_[next_done.id].remaining_s = 0;
    // Advance every running task by the step and take out those done, in one pass.
    done.clear();
    size_t keep = 0;
    for (TaskId id : running_) {
      Task& t = tasks_[id];
      if (id != next_done.id) t.remaining_s -= t.rate * next_dt_s_;
      if (t.remaining_s <= kDoneFraction * t.work_s) {
        done.push_back(id);
      } else {
        running_[keep++] = id;
      }
    }
    running_.resize(keep);
    std::sort(done.begin(), done.end());
    for (TaskId id : done) Finish(id);
  }
}

bool Simulator::NextCompletion(EventKey* key) {
  if (running_.empty()) return false;
  for (Group& g : groups_) g.factor = g.speed && g.busy > 0 ? g.speed(g.busy) : 1.0;
  // Tasks whose rate is their group's factor (slot group + 1; slot 0: rate 1) finish in the
  // order of their remaining work: find each slot's least, then divide once per slot.
  group_min_.assign(groups_.size() + 1, {kForever, -1});
  double best_dt = kForever;
  TaskId best = -1;
  auto consider = [&](double dt, TaskId id) {
    if (dt < best_dt || (dt == best_dt && id < best)) {
      best_dt = dt;
      best = id;
    }
  };
  for (TaskId id : running_) {
    Task& t = tasks_[id];
    if (!t.general_rate) {
      t.rate = t.group == kNoGroup ? 1.0 : groups_[t.group].factor;
      auto& [rem, arg] = group_min_[t.group + 1];
      if (t.remaining_s < rem || (t.remaining_s == rem && id < arg)) {
        rem = t.remaining_s;
        arg = id;
      }
      continue;
    }
    double rate = kForever;
    const ResourceId* res = task_res_.data() + t.res_begin;
    for (int i = 0; i < t.res_count; ++i) {
      const Resource& r = resources_[res[i]];
      double f = r.speed ? r.speed(r.running) : 1.0;
      if (r.group != kNoGroup) f *= groups_[r.group].factor;
      rate = std::min(rate, f);
    }
    t.rate = rate;
    if (rate > 0) consider(t.remaining_s / rate, id);
  }
  for (const auto& [rem, arg] : group_min_) {
    if (arg >= 0 && tasks_[arg].rate > 0) consider(rem / tasks_[arg].rate, arg);
  }
  if (best < 0) return false;
  next_dt_s_ = best_dt;
  *key = EventKey{now_s() + best_dt, kTaskDone, best};
  return true;
}

void Simulator::Progress(double dt_s) {
  if (dt_s <= 0) return;
  for (TaskId id : running_) tasks_[id].remaining_s -= tasks_[id].rate * dt_s;
}

void Simulator::Admit(ResourceId r) {
  if (resources_[r].failed) return;
  while (resources_[r].admitted < resources_[r].slots &&
         resources_[r].next < resources_[r].queue.size()) {
    const TaskId id = resources_[r].queue[resources_[r].next++];
    Task& t = tasks_[id];
    if (t.state != TaskState::kWaiting) continue;  // aborted while queued
    ++resources_[r].admitted;
    for (int i = 0; i < t.res_count; ++i) {
      if (task_res_[t.res_begin + i] == r && !task_res_admitted_[t.res_begin + i]) {
        task_res_admitted_[t.res_begin + i] = 1;
        break;
      }
    }
    if (++t.admitted == t.res_count) TryStart(id);  // may add tasks: no references kept
  }
}

void Simulator::TryStart(TaskId id) {
  Task& t = tasks_[id];
  if (t.state != TaskState::kWaiting || t.admitted < t.res_count || t.deps_left > 0) return;
  if (t.release_s > now_s()) {
    if (!t.release_scheduled) {
      t.release_scheduled = true;
      queue_.Schedule(t.release_s, kRelease, [this, id] { TryStart(id); });
    }
    return;
  }
  Start(id);
}

void Simulator::Start(TaskId id) {
  Task& t = tasks_[id];
  t.state = TaskState::kRunning;
  t.start_s = now_s();
  t.remaining_s = t.work_s;
  running_.push_back(id);
  for (int i = 0; i < t.res_count; ++i) {
    Resource& r = resources_[task_res_[t.res_begin + i]];
    if (++r.running == 1 && r.group != kNoGroup) ++groups_[r.group].busy;
  }
  if (listener_) listener_->OnStart(id, now_s());
}

void Simulator::Leave(TaskId id, bool was_running) {
  const Task& t = tasks_[id];
  for (int i = 0; i < t.res_count; ++i) {
    Resource& r = resources_[task_res_[t.res_begin + i]];
    if (task_res_admitted_[t.res_begin + i]) {
      task_res_admitted_[t.res_begin + i] = 0;
      --r.admitted;
    }
    if (was_running && --r.running == 0 && r.group != kNoGroup) --groups_[r.group].busy;
    if (t.state == TaskState::kDone) r.free_s = now_s();
  }
  if (!started_events_) return;
  for (int i = 0; i < t.res_count; ++i) Admit(task_res_[tasks_[id].res_begin + i]);
}

void Simulator::Finish(TaskId id) {
  tasks_[id].state = TaskState::kDone;
  tasks_[id].end_s = now_s();
  tasks_[id].remaining_s = 0;
  Leave(id, /*was_running=*/true);
  if (listener_) listener_->OnFinish(id, now_s());
  if (id >= static_cast<TaskId>(dependents_.size())) return;
  const std::vector<TaskId> next = dependents_[id];  // a copy: callbacks may add tasks
  for (TaskId d : next) {
    --tasks_[d].deps_left;
    TryStart(d);
  }
}

void Simulator::Abort(TaskId id) {
  const bool was_running = tasks_[id].state == TaskState::kRunning;
  tasks_[id].state = TaskState::kAborted;
  tasks_[id].end_s = now_s();
  if (was_running) running_.erase(std::find(running_.begin(), running_.end(), id));
  Leave(id, was_running);
  if (listener_) listener_->OnAbort(id, now_s(), done_work_s(id));
  if (id >= static_cast<TaskId>(dependents_.size())) return;
  const std::vector<TaskId> next = dependents_[id];
  for (TaskId d : next) {
    if (tasks_[d].state == TaskState::kWaiting) Abort(d);
  }
}

void Simulator::OnFailure(ResourceId r) {
  if (resources_[r].failed) return;
  resources_[r].failed = true;
  if (listener_) listener_->OnResourceFailed(r, now_s());
  const std::vector<TaskId> on_it = resources_[r].queue;  // in the order added
  for (TaskId id : on_it) {
    const TaskState s = tasks_[id].state;
    if (s == TaskState::kWaiting || s == TaskState::kRunning) Abort(id);
  }
}

void Simulator::EmitTrace(core::TraceWriter* trace, int tid_offset) const {
  for (ResourceId r = 0; r < num_resources(); ++r) {
    const std::string& name = resources_[r].name;
    trace->NameTrack(tid_offset + r, name.empty() ? "resource " + std::to_string(r) : name);
  }
  for (TaskId id = 0; id < num_tasks(); ++id) {
    const Task& t = tasks_[id];
    if (std::isnan(t.start_s)) continue;
    const bool labelled = id < static_cast<TaskId>(labels_.size());
    std::string name = labelled ? labels_[id].first : "";
    std::string cat = labelled ? labels_[id].second : "";
    if (name.empty()) name = "task " + std::to_string(id);
    if (cat.empty()) cat = "task";
    if (t.state == TaskState::kAborted) cat = "aborted";
    const double end = std::isnan(t.end_s) ? now_s() : t.end_s;
    for (int i = 0; i < t.res_count; ++i) {
      trace->Span(tid_offset + task_res_[t.res_begin + i], name, cat, t.start_s, end - t.start_s,
                  {{"task", id}, {"work_s", t.work_s}});
    }
  }
}

}  // namespace tessera::sim
