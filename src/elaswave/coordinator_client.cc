#include "elaswave/coordinator_client.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>

#include "core/input_file.h"

namespace tessera::elaswave {
namespace {

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

CoordinatorClient::CoordinatorClient(const CoordinatorClientOptions& options,
                                     std::function<ControlMessage()> make_register,
                                     std::function<void(const ControlMessage&)> on_message)
    : options_(options),
      make_register_(std::move(make_register)),
      on_message_(std::move(on_message)) {}

CoordinatorClient::~CoordinatorClient() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (keeper_.joinable()) keeper_.join();
  comm::DestroyTransport(transport_);
}

core::StatusOr<std::unique_ptr<CoordinatorClient>> CoordinatorClient::Connect(
    const CoordinatorClientOptions& options, std::function<ControlMessage()> make_register,
    std::function<void(const ControlMessage&)> on_message) {
  if (options.address.empty() && options.address_file.empty()) {
    return core::InvalidArgument("coordinator client: no coordinator address or address file");
  }
  std::unique_ptr<CoordinatorClient> c(
      new CoordinatorClient(options, std::move(make_register), std::move(on_message)));
  ASSIGN_OR_RETURN(c->transport_, comm::MakeAmTransport(options.transport));
  CoordinatorClient* self = c.get();
  c->transport_->SetHandler(kControlAmId, [self](comm::PeerId from, std::span<const std::byte> h,
                                                 std::span<const std::byte>) {
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      if (!self->connected_ || from != self->peer_) return;  // a stale coordinator
    }
    auto m = DecodeControl(std::string(reinterpret_cast<const char*>(h.data()), h.size()));
    if (!m.ok()) return;
    if (self->on_message_) self->on_message_(*m);
    self->Push(*m);
  });
  c->transport_->SetFailureHandler([self](comm::PeerId peer, const core::Status&) {
    std::lock_guard<std::mutex> lock(self->mu_);
    if (self->connected_ && peer == self->peer_) self->connected_ = false;
    self->cv_.notify_all();
  });
  RETURN_IF_ERROR(c->ConnectOnce(options.connect_timeout_s, /*reconnect=*/false));
  c->keeper_ = std::thread([self] { self->Keeper(); });
  return c;
}

core::Status CoordinatorClient::ConnectOnce(double timeout_s, bool reconnect) {
  std::string address = options_.address;
  if (!options_.address_file.empty()) {
    auto text = core::ReadInputFile(options_.address_file);
    if (!text.ok()) return text.status();
    address = Trim(*text);
  }
  ASSIGN_OR_RETURN(const comm::PeerId peer, transport_->Connect(address, timeout_s));
  ControlMessage r = make_register_ ? make_register_() : ControlMessage{};
  r.kind = ControlKind::kRegister;
  r.world = options_.world;
  r.pid = ::getpid();
  {
    std::lock_guard<std::mutex> lock(mu_);
    peer_ = peer;
    connected_ = true;
  }
  // Counted before the registration goes out: the coordinator's answer may arrive at once.
  if (reconnect) ++reconnects_;
  return transport_->Send(peer, kControlAmId, WireBytes(EncodeControl(r)), {});
}

void CoordinatorClient::Keeper() {
  using Clock = std::chrono::steady_clock;
  Clock::time_point lost_since{};
  bool lost = false;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::duration<double>(options_.heartbeat_s));
    if (stopping_) break;
    if (connected_) {
      lost = false;
      const comm::PeerId peer = peer_;
      lock.unlock();
      ControlMessage hb;
      hb.kind = ControlKind::kHeartbeat;
      hb.world = options_.world;
      hb.step = step_.load();
      (void)transport_->Send(peer, kControlAmId, WireBytes(EncodeControl(hb)), {});
      lock.lock();
      continue;
    }
    if (!lost) {
      lost = true;
      lost_since = Clock::now();
    }
    const double waited = std::chrono::duration<double>(Clock::now() - lost_since).count();
    if (waited > options_.coordinator_timeout_s) {
      ControlMessage bye;
      bye.kind = ControlKind::kShutdown;
      bye.code = 1;
      bye.why = fmt::format("coordinator lost for {:.1f} s (--coordinator-timeout)", waited);
      inbox_.push_back(bye);
      cv_.notify_all();
      lost_since = Clock::now() + std::chrono::hours(24 * 365);  // report once
      continue;
    }
    lock.unlock();
    (void)ConnectOnce(std::min(1.0, options_.connect_timeout_s), /*reconnect=*/true);
    lock.lock();
  }
}

void CoordinatorClient::Push(ControlMessage m) {
  std::lock_guard<std::mutex> lock(mu_);
  inbox_.push_back(std::move(m));
  cv_.notify_all();
}

core::Status CoordinatorClient::Send(ControlMessage m) {
  m.world = options_.world;
  comm::PeerId peer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!connected_) return core::Unavailable("coordinator lost; waiting for it to come back");
    peer = peer_;
  }
  return transport_->Send(peer, kControlAmId, WireBytes(EncodeControl(m)), {});
}

core::StatusOr<ControlMessage> CoordinatorClient::Next(double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                    [&] { return !inbox_.empty(); })) {
    return core::DeadlineExceeded(
        fmt::format("no message from the coordinator in {:.1f} s", timeout_s));
  }
  ControlMessage m = std::move(inbox_.front());
  inbox_.pop_front();
  return m;
}

}  // namespace tessera::elaswave
