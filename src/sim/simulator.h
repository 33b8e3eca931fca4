// Simulator: tasks on resources, advanced by a deterministic event engine (EventQueue).
//
// Resources are things work runs on: a rank's compute, a link, a server. A task needs a set
// of resources at once (a GEMM: one compute resource; a collective: every rank of its group;
// a fused op: a compute resource and the links it drives) and carries work_s, seconds of work
// at speed 1. Each resource admits the tasks that need it in the order they were added, up to
// `slots` at a time (1: a rank running its ops in order; kUnlimited: a link carrying every
// flow at once). A task starts when every one of its resources has admitted it (a gang: a
// collective starts when its last rank reaches it; earlier ranks wait), its dependencies
// have finished, and the clock has reached its release_s (an arrival). An admitted task
// holds its slot until it finishes, so a server with slots = c is a FIFO queue of
// concurrency c.
//
// Speed (processor sharing): while running, a task progresses at
//   rate = min over its resources r of speed_r(tasks running on r) * group_speed(busy in g(r)),
// where busy is the number of the group's resources running at least one task (Zellige's
// contention: all ranks in one group whose speed depends on how many ranks work). A null
// speed function means 1 (a link shared fairly is speed(n) = 1 / n). Rates are constant
// between events, so the simulation advances from one completion or event to the next.
// When every speed is 1, every resource has one slot and no failure or user event is
// scheduled, Run() uses the equivalent list schedule (start = max of the resources' free
// times, the release and the dependencies' ends), which gives the same times exactly and is
// faster; Options::force_events turns that off (tests compare the two).
//
// Failures: FailResourceAt(r, t) makes r fail at t: every unfinished task that needs r
// (running or waiting) is aborted at t, keeping the work it did, as are tasks that depend
// on an aborted task; r's other resources move on; a task added later that needs r is
// aborted when added. A Listener hears starts, finishes, aborts and failures and may add
// tasks and events from its callbacks (ElasWave: redistribute the lost work).
//
// Events at one time run in the order (time, kind, id): task completions (lowest id first),
// then releases, then failures, then user events (ScheduleAt), each kind in the order it was
// scheduled. Times are seconds. Not thread-safe; a Simulator is one run.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/trace.h"
#include "sim/event_queue.h"

namespace tessera::sim {

using ResourceId = int;
using GroupId = int;
using TaskId = int;
// Progress rate (work seconds per second) as a function of a busy count (>= 1).
using SpeedFn = std::function<double(int busy)>;

inline constexpr int kUnlimited = 1 << 30;
inline constexpr GroupId kNoGroup = -1;

// Event kinds, in the order they run at equal times (user kinds are kUser and above).
enum EventKind : int { kTaskDone = 0, kRelease = 1, kFailure = 2, kUser = 3 };

struct ResourceSpec {
  std::string name = {};  // trace track name; "resource <id>" when empty
  int slots = 1;          // tasks admitted at once, in the order they were added (>= 1)
  SpeedFn speed = {};     // speed(tasks running on it); null: 1
  GroupId group = kNoGroup;
};

struct GroupSpec {
  SpeedFn speed = {};  // speed(resources of the group running a task); null: 1
};

struct TaskSpec {
  std::span<const ResourceId> resources = {};  // copied; may be empty (a pure delay)
  double work_s = 0;                           // seconds at speed 1 (>= 0)
  double release_s = 0;                        // earliest start
  std::span<const TaskId> deps = {};           // tasks added earlier that must finish first
  std::string name = {};                       // trace only; "task <id>" when empty
  std::string category = {};                   // trace only; "task" when empty
};

enum class TaskState { kWaiting, kRunning, kDone, kAborted };

// Callbacks from inside Run(); they may call AddTask, FailResourceAt and ScheduleAt.
class Listener {
 public:
  virtual ~Listener() = default;
  virtual void OnStart(TaskId /*task*/, double /*now_s*/) {}
  virtual void OnFinish(TaskId /*task*/, double /*now_s*/) {}
  // `done_work_s` of the task's work_s was done before the abort.
  virtual void OnAbort(TaskId /*task*/, double /*now_s*/, double /*done_work_s*/) {}
  virtual void OnResourceFailed(ResourceId /*resource*/, double /*now_s*/) {}
};

struct RunStats {
  int64_t events = 0;  // engine events run (completions not counted)
  int finished = 0;    // tasks done so far
  int aborted = 0;     // tasks aborted so far
  int unfinished = 0;  // tasks neither done nor aborted
  double end_s = 0;    // the clock when Run returned
};

class Simulator {
 public:
  struct Options {
    bool force_events = false;  // never use the list-schedule shortcut
  };
  Simulator() = default;
  explicit Simulator(Options options) : options_(options) {}

  GroupId AddGroup(GroupSpec spec);
  ResourceId AddResource(ResourceSpec spec);
  // Adds a task (also while running, from a callback). CHECKs ids, slots and work_s >= 0.
  TaskId AddTask(const TaskSpec& spec);
  // Pre-sizes storage for `tasks` tasks needing `task_resources` resources in all.
  void Reserve(int tasks, int64_t task_resources);
  // Resource `r` fails at `time_s` (>= now_s()).
  void FailResourceAt(ResourceId r, double time_s);
  // Runs `fn` at `time_s` with kind kUser + `kind_offset` (e.g. an arrival that adds a task).
  EventId ScheduleAt(double time_s, std::function<void()> fn, int kind_offset = 0);
  bool Cancel(EventId id) { return queue_.Cancel(id); }
  // Not owned; may be null.
  void set_listener(Listener* listener) { listener_ = listener; }

  // Simulates until nothing can happen any more or the clock reaches `until_s`; may be
  // called again (after adding tasks or events, or with a later `until_s`).
  RunStats Run(double until_s = kForever);

  double now_s() const { return queue_.now_s(); }
  int num_tasks() const { return static_cast<int>(tasks_.size()); }
  int num_resources() const { return static_cast<int>(resources_.size()); }
  TaskState state(TaskId t) const { return tasks_[t].state; }
  // NaN until the task starts / ends (an aborted task ends when it is aborted).
  double start_s(TaskId t) const { return tasks_[t].start_s; }
  double end_s(TaskId t) const { return tasks_[t].end_s; }
  // Work done so far (work_s when done).
  double done_work_s(TaskId t) const { return tasks_[t].work_s - tasks_[t].remaining_s; }
  // When the last task that finished on `r` finished (0 when none has).
  double free_s(ResourceId r) const { return resources_[r].free_s; }
  bool failed(ResourceId r) const { return resources_[r].failed; }

  // One track per resource (tid = tid_offset + id) and one span per started task on each of
  // its resources; aborted tasks get category "aborted".
  void EmitTrace(core::TraceWriter* trace, int tid_offset = 0) const;

 private:
  struct Resource {
    std::string name;
    int slots = 1;
    SpeedFn speed;
    GroupId group = kNoGroup;
    std::vector<TaskId> queue;  // tasks needing it, in the order added
    size_t next = 0;            // queue[next] is the next to admit
    int admitted = 0;           // admitted, unfinished
    int running = 0;
    bool failed = false;
    double free_s = 0;
  };
  struct Group {
    SpeedFn speed;
    int busy = 0;
    double factor = 1;  // speed(busy), refreshed per step
  };
  struct Task {
    int64_t res_begin = 0;
    int res_count = 0;
    int64_t dep_begin = 0;
    int dep_count = 0;
    int admitted = 0;
    int deps_left = 0;
    TaskState state = TaskState::kWaiting;
    bool release_scheduled = false;
    // How the rate is found: kGeneral (min over resources), or every resource in `group`
    // (kNoGroup: none) with no speed of its own, so the rate is that group's factor (or 1).
    bool general_rate = false;
    GroupId group = kNoGroup;
    double work_s = 0;
    double remaining_s = 0;
    double release_s = 0;
    double rate = 1;
    double start_s = NAN;
    double end_s = NAN;
  };

  bool Dynamic() const;
  void RunListSchedule();
  void RunEvents(double until_s);
  void Admit(ResourceId r);
  void TryStart(TaskId t);
  void Start(TaskId t);
  void Finish(TaskId t);
  void Abort(TaskId t);
  void OnFailure(ResourceId r);
  // Takes a finished or aborted task off its resources, which then admit their next tasks.
  void Leave(TaskId t, bool was_running);
  // Refreshes rates; returns the earliest completion (time, task) among running tasks.
  bool NextCompletion(EventKey* key);
  void Progress(double dt_s);

  Options options_;
  EventQueue queue_;
  Listener* listener_ = nullptr;
  std::vector<Resource> resources_;
  std::vector<Group> groups_;
  std::vector<Task> tasks_;
  std::vector<ResourceId> task_res_;                         // flat: task t's resources
  std::vector<char> task_res_admitted_;                      // parallel to task_res_
  std::vector<TaskId> task_deps_;                            // flat: task t's dependencies
  std::vector<std::vector<TaskId>> dependents_;              // sized on first use
  std::vector<std::pair<std::string, std::string>> labels_;  // sized on first use
  std::vector<TaskId> running_;
  std::vector<std::pair<double, TaskId>> group_min_;  // NextCompletion's scratch
  double next_dt_s_ = 0;  // from NextCompletion: time to the earliest completion
  bool has_speed_ = false, has_slots_ = false, has_events_ = false;
  bool started_events_ = false;
  int list_scheduled_ = 0;  // tasks [0, this) were run by RunListSchedule
};

}  // namespace tessera::sim
