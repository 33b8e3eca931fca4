// Coordinator: ElasWave's coordinator process -- CoordinatorCore (coordinator_core.h) served on
// the comm transport. Workers connect and send control messages (coordinator_protocol.h); the
// transport's failure events tell it at once when a worker's process dies (TCP reset), the
// heartbeat timeout catches a stopped one, and the processes it declares dead are fenced with
// SIGKILL (they may be stopped, not dead, and must never come back with stale state).
//
// Run() drives the core from one thread: it takes the transport's events from a queue, ticks
// every `tick_s`, sends what the core decides, and returns the job's exit code once the core
// has shut the job down (0 finished, 1 not). `log` receives one line per decision.
// Lifetime: Start() listens; destroying the coordinator closes every worker's connection.
// Thread-safety: Run from one thread; address() from any.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "comm/am_transport.h"
#include "core/status.h"
#include "elaswave/coordinator_core.h"

namespace tessera::elaswave {

struct CoordinatorServiceOptions {
  CoordinatorOptions core;
  std::string transport = "ucx";  // comm/am_transport.h backends
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
  double tick_s = 0.02;
  std::function<void(const std::string&)> log;  // default: none
  // Kills a fenced process (default: SIGKILL to the pid). Tests of in-process workers override it.
  std::function<void(int64_t pid)> fence;
};

class Coordinator {
 public:
  static core::StatusOr<std::unique_ptr<Coordinator>> Start(const CoordinatorServiceOptions& o);
  ~Coordinator();
  std::string address() const { return address_; }
  // Runs until the job is shut down; the exit code (0 finished, 1 failed).
  int Run();
  // Seconds since Start (the core's clock).
  double Now() const;

 private:
  struct Event {
    bool lost = false;
    comm::PeerId peer = 0;
    std::string bytes;  // a control message
    std::string why;    // lost
  };
  explicit Coordinator(const CoordinatorServiceOptions& o);
  void Perform(const CoordinatorOutput& out);

  CoordinatorServiceOptions options_;
  CoordinatorCore core_;
  std::unique_ptr<comm::AmTransport> transport_;
  std::string address_;
  int64_t start_ns_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  std::map<comm::PeerId, int> world_of_;  // run thread only
  std::map<int, comm::PeerId> peer_of_;
};

}  // namespace tessera::elaswave
