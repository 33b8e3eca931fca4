// CoordinatorClient: a worker's line to the coordinator (coordinator.h). It registers, sends a
// heartbeat every `heartbeat_s` from its own thread (so a worker busy in a long GEMM still
// counts as alive, and a SIGSTOPped one does not), queues what the coordinator sends, and
// survives the coordinator's death: it reconnects to the address in `address_file` (the
// launcher rewrites it when it restarts the coordinator) and registers again with what
// `make_register` reports (epoch, complete step, dead ranks), so the new coordinator can
// rebuild its state. If no coordinator answers for `coordinator_timeout_s`, Next() returns a
// shutdown {code 1, "coordinator lost ..."} so the worker spills its state and exits.
//
// `on_message` runs on the transport's thread for every message before it is queued: the
// worker uses it to mark the dead ranks of an abort in its communicator at once, which wakes
// any collective blocked on them.
// Thread-safety: Send, Next and SetStep from any thread (Next from one at a time).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "comm/am_transport.h"
#include "core/status.h"
#include "elaswave/coordinator_protocol.h"

namespace tessera::elaswave {

struct CoordinatorClientOptions {
  int world = 0;
  std::string transport = "ucx";
  std::string address;       // the coordinator's; or read from address_file when empty
  std::string address_file;  // re-read when the coordinator is lost ("" = keep `address`)
  double heartbeat_s = 0.1;
  double connect_timeout_s = 10;
  double coordinator_timeout_s = 30;
};

class CoordinatorClient {
 public:
  static core::StatusOr<std::unique_ptr<CoordinatorClient>> Connect(
      const CoordinatorClientOptions& options, std::function<ControlMessage()> make_register,
      std::function<void(const ControlMessage&)> on_message);
  ~CoordinatorClient();

  // Sends `m` with m.world set; Unavailable while the coordinator is lost (the caller waits
  // for the abort a restarted coordinator sends).
  core::Status Send(ControlMessage m);
  // The next queued message; DeadlineExceeded after timeout_s without one.
  core::StatusOr<ControlMessage> Next(double timeout_s);
  // The step reported in heartbeats.
  void SetStep(int64_t step) { step_.store(step); }
  int reconnects() const { return reconnects_.load(); }

 private:
  CoordinatorClient(const CoordinatorClientOptions& options,
                    std::function<ControlMessage()> make_register,
                    std::function<void(const ControlMessage&)> on_message);
  core::Status ConnectOnce(double timeout_s, bool reconnect);
  void Keeper();
  void Push(ControlMessage m);

  CoordinatorClientOptions options_;
  std::function<ControlMessage()> make_register_;
  std::function<void(const ControlMessage&)> on_message_;
  std::unique_ptr<comm::AmTransport> transport_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ControlMessage> inbox_;
  bool connected_ = false;
  comm::PeerId peer_ = 0;
  bool stopping_ = false;
  std::atomic<int64_t> step_{-1};
  std::atomic<int> reconnects_{0};
  std::thread keeper_;
};

}  // namespace tessera::elaswave
