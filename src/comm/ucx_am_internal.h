// Internals of the ucx AmTransport backend (ucx_am_transport.h), shared by its two source
// files: ucx_am_transport.cc (the public methods, which post commands to the UCX thread and
// wait) and ucx_am_progress.cc (the UCX thread and the delivery thread). Not a public API.
//
// Ownership: peers_, eps_, the listener, the worker and every in-flight UCX request belong to
// the UCX thread; other threads reach them only through Post(). The delivery queue and the
// command queue have their own mutexes, which are never held while calling UCX or a handler.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "comm/am_dispatch.h"
#include "comm/am_transport.h"
#include "comm/ucx_util.h"

namespace tessera::comm::ucx_am {

using Clock = std::chrono::steady_clock;

inline constexpr unsigned kUcxAmId = 0;  // the one UCX AM id every message uses
inline constexpr double kShutdownCloseS =
    2.0;                                      // the destructor waits this long for endpoint closes
inline constexpr int kSpinsBeforeSleep = 64;  // idle progress calls before sleeping on the event fd
inline constexpr int kSleepMs = 50;           // longest sleep (connect deadlines are checked after)

// The UCX AM header of every message: the user am_id and the length of the user header, which
// leads the data.
struct WireHeader {
  uint64_t header_bytes = 0;
  uint16_t am_id = 0;
  uint16_t reserved[3] = {0, 0, 0};
};

class UcxAmTransport;

// One blocking call: the caller waits for Complete, which the UCX thread calls once (later
// calls are ignored). Also holds what UCX needs until the operation completes.
class Op {
 public:
  explicit Op(UcxAmTransport* owner) : owner(owner) {}
  void Complete(core::Status status, PeerId peer = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    done_ = true;
    status_ = std::move(status);
    peer_ = peer;
    cv_.notify_all();
  }
  core::Status Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    return status_;
  }
  PeerId peer() {
    std::lock_guard<std::mutex> lock(mu_);
    return peer_;
  }

  UcxAmTransport* const owner;
  PeerId target = 0;  // the peer the operation is about
  WireHeader wire;
  ucp_dt_iov_t iov[2] = {};
  ucp_rkey_h rkey = nullptr;
  void* request = nullptr;  // the UCX request while in flight
  bool released = false;    // ucp_request_free already called (shutdown): the callback must not

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  core::Status status_;
  PeerId peer_ = 0;
};

struct Peer {
  enum class State { kConnecting, kOpen, kFailed, kClosed };
  PeerId id = 0;
  std::string name;  // the remote's HOST:PORT
  ucp_ep_h ep = nullptr;
  State state = State::kConnecting;
  std::string why;                 // kFailed, kClosed: what happened
  std::shared_ptr<Op> connect_op;  // kConnecting
  Clock::time_point connect_deadline;
  double connect_timeout_s = 0;
};

// A received event waiting for the delivery thread; `ready` (under the queue mutex) once its
// bytes are all there.
struct Inbound {
  UcxAmTransport* owner = nullptr;
  AmEvent event;
  bool ready = false;
  bool drop = false;        // a rendezvous receive that failed: not delivered
  void* request = nullptr;  // UCX thread: the receive request while in flight
  bool released = false;    // UCX thread: ucp_request_free already called (shutdown)
};

class UcxAmTransport final : public AmTransport {
 public:
  explicit UcxAmTransport(std::shared_ptr<UcxContext> context) : context_(std::move(context)) {}
  core::Status Init();
  ~UcxAmTransport() override;

  std::string address() const override {
    std::lock_guard<std::mutex> lock(address_mu_);
    return address_;
  }
  core::Status Listen(const std::string& host, int port) override;
  core::StatusOr<PeerId> Connect(const std::string& address, double timeout_s) override;
  void SetHandler(uint16_t am_id, AmHandler handler) override {
    dispatcher_.SetHandler(am_id, std::move(handler));
  }
  void SetAcceptHandler(PeerEventHandler on_accept) override {
    dispatcher_.SetAcceptHandler(std::move(on_accept));
  }
  void SetFailureHandler(PeerEventHandler on_failure) override {
    dispatcher_.SetFailureHandler(std::move(on_failure));
  }
  core::Status Send(PeerId peer, uint16_t am_id, std::span<const std::byte> header,
                    std::span<const std::byte> payload) override;
  core::StatusOr<std::unique_ptr<RegisteredMemory>> RegisterMemory(void* addr,
                                                                   size_t bytes) override;
  core::Status Get(PeerId peer, std::span<const std::byte> remote_key, uint64_t remote_address,
                   void* local, size_t bytes) override;
  core::Status Close(PeerId peer) override;
  std::string backend_name() const override { return "ucx"; }

 private:
  // Caller side: runs `command` on the UCX thread and waits for `op`.
  core::Status Call(const std::shared_ptr<Op>& op, std::function<void()> command);
  bool Post(std::function<void()> command);
  void Wake();

  // UCX thread.
  void UcxLoop();
  bool RunCommands();
  void AfterProgress();
  void Sleep();
  void BeginShutdown();
  void FinalCleanup();
  Peer* FindPeer(PeerId id);
  core::Status CheckUsable(const char* what, PeerId id, Peer** peer);
  core::Status OpStatus(const char* what, PeerId id, ucs_status_t status);
  void Track(const std::shared_ptr<Op>& op, void* request) {
    op->request = request;
    in_flight_[op.get()] = op;
  }
  void FreeRequest(void* request, bool released) {
    if (!released) ucp_request_free(request);
  }
  std::shared_ptr<Op> Untrack(Op* op);
  void CloseEp(ucp_ep_h ep, bool force);
  void FailPeer(Peer& peer, ucs_status_t status);
  void ConnectDone(PeerId id, ucs_status_t status, const std::string& timeout_why = "");
  void Accept(ucp_conn_request_h request);
  void StartListen(const std::shared_ptr<Op>& op, const SockAddr& addr);
  void StartConnect(const std::shared_ptr<Op>& op, const SockAddr& addr, const std::string& name,
                    double timeout_s);
  void StartSend(const std::shared_ptr<Op>& op, std::span<const std::byte> header,
                 std::span<const std::byte> payload);
  void StartGet(const std::shared_ptr<Op>& op, std::span<const std::byte> packed_rkey,
                uint64_t remote_address, void* local, size_t bytes);
  void StartClose(const std::shared_ptr<Op>& op);
  ucs_status_t OnMessage(const void* header, size_t header_length, void* data, size_t length,
                         const ucp_am_recv_param_t* param);

  static void OnEpError(void* arg, ucp_ep_h ep, ucs_status_t status);
  static void OnConnRequest(ucp_conn_request_h request, void* arg);
  static ucs_status_t OnAm(void* arg, const void* header, size_t header_length, void* data,
                           size_t length, const ucp_am_recv_param_t* param);
  static void OnSendDone(void* request, ucs_status_t status, void* user_data);
  static void OnGetDone(void* request, ucs_status_t status, void* user_data);
  static void OnFlushDone(void* request, ucs_status_t status, void* user_data);
  static void OnCloseDone(void* request, ucs_status_t status, void* user_data);
  static void OnRecvDone(void* request, ucs_status_t status, size_t length, void* user_data);

  // Delivery thread.
  void Push(std::shared_ptr<Inbound> inbound);
  void MarkReady(Inbound* inbound, bool drop);
  void DeliveryLoop();

  std::shared_ptr<UcxContext> context_;
  AmDispatcher dispatcher_;

  mutable std::mutex address_mu_;
  std::string address_;

  // Commands for the UCX thread.
  std::mutex command_mu_;
  std::deque<std::function<void()>> commands_;
  bool accepting_commands_ = true;
  int wake_fd_ = -1;
  int epoll_fd_ = -1;
  std::atomic<bool> exit_requested_{false};

  // Owned by the UCX thread (after Init).
  ucp_worker_h worker_ = nullptr;
  ucp_listener_h listener_ = nullptr;
  std::unordered_map<PeerId, Peer> peers_;
  std::unordered_map<ucp_ep_h, PeerId> eps_;  // endpoints that deliver events
  std::vector<PeerId> connecting_;
  std::vector<ucp_conn_request_h> conn_requests_;
  std::vector<ucp_ep_h> to_force_close_;
  std::unordered_map<Op*, std::shared_ptr<Op>> in_flight_;
  std::unordered_map<Inbound*, std::shared_ptr<Inbound>> receiving_;
  PeerId next_peer_ = 1;
  std::unordered_set<void*> closing_;  // endpoint close requests not yet complete
  bool shutting_down_ = false;
  Clock::time_point shutdown_deadline_;

  // Delivery queue.
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<std::shared_ptr<Inbound>> queue_;
  bool delivery_stop_ = false;

  std::thread ucx_thread_;
  std::thread delivery_thread_;
};

}  // namespace tessera::comm::ucx_am
