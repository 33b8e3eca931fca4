// Shared helpers of the AmTransport conformance checks (am_conformance.cc) and tests: failure
// accumulation across threads, a condition to wait on with a deadline, and a connected pair of
// transports. Test support only.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/am_conformance.h"

namespace tessera::comm::testing {

// Collects failures from the check's thread and from handlers. Thread-safe.
class AmFailures {
 public:
  void Add(std::string message) {
    std::lock_guard<std::mutex> lock(mu_);
    if (messages_.size() < 6) messages_.push_back(std::move(message));
    ++count_;
  }
  void Expect(bool ok, const std::string& what) {
    if (!ok) Add(what);
  }
  void ExpectOk(const core::Status& status, const std::string& what) {
    if (!status.ok()) Add(what + ": " + status.ToString());
  }
  void ExpectCode(const core::Status& status, core::StatusCode code, const std::string& what) {
    if (status.code() != code) {
      Add(fmt::format("{}: got {}, want code {}", what, status.ToString(),
                      core::StatusCodeName(code)));
    }
  }
  core::Status Result() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (count_ == 0) return core::Status::Ok();
    std::string text = fmt::format("{} failure(s)", count_);
    for (const std::string& m : messages_) text += "; " + m;
    return core::Internal(text);
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> messages_;
  int count_ = 0;
};

// State a handler updates under `mu`, then Notify(); the check waits for a predicate.
class AmSignal {
 public:
  std::mutex mu;
  void Notify() { cv_.notify_all(); }
  // Waits until pred() (evaluated under mu) holds; false after kAmCheckDeadlineS.
  template <typename Pred>
  bool WaitUntil(Pred pred) {
    std::unique_lock<std::mutex> lock(mu);
    return cv_.wait_for(lock, std::chrono::duration<double>(kAmCheckDeadlineS), pred);
  }

 private:
  std::condition_variable cv_;
};

// A listening server and a client connected to it, with both peer ids.
struct AmPair {
  std::unique_ptr<AmTransport> server;
  std::unique_ptr<AmTransport> client;
  PeerId client_to_server = 0;  // the server as the client names it
  PeerId server_to_client = 0;  // the client as the server names it
};

// Makes two transports, lets `configure` set handlers on each (server first), listens on
// 127.0.0.1:0, connects and waits for the accept event. The pair installs the server's accept
// handler itself.
using AmConfigure = std::function<void(AmTransport& server, AmTransport& client)>;
core::StatusOr<AmPair> MakeAmPair(const AmTransportFactory& make, const AmConfigure& configure);

}  // namespace tessera::comm::testing
