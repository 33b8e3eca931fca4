#include "elaswave/coordinator.h"

#include <fmt/format.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "core/log.h"

namespace tessera::elaswave {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Coordinator::Coordinator(const CoordinatorServiceOptions& o) : options_(o), core_(o.core) {}

Coordinator::~Coordinator() { comm::DestroyTransport(transport_); }

double Coordinator::Now() const { return static_cast<double>(NowNs() - start_ns_) * 1e-9; }

core::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Start(
    const CoordinatorServiceOptions& o) {
  if (o.core.world_size < 1) {
    return core::InvalidArgument(
        fmt::format("coordinator: world size {}, must be >= 1", o.core.world_size));
  }
  std::unique_ptr<Coordinator> c(new Coordinator(o));
  c->start_ns_ = NowNs();
  ASSIGN_OR_RETURN(c->transport_, comm::MakeAmTransport(o.transport));
  Coordinator* self = c.get();
  c->transport_->SetHandler(kControlAmId, [self](comm::PeerId from, std::span<const std::byte> h,
                                                 std::span<const std::byte>) {
    std::lock_guard<std::mutex> lock(self->mu_);
    self->events_.push_back(
        {false, from, std::string(reinterpret_cast<const char*>(h.data()), h.size()), ""});
    self->cv_.notify_one();
  });
  c->transport_->SetFailureHandler([self](comm::PeerId peer, const core::Status& why) {
    std::lock_guard<std::mutex> lock(self->mu_);
    self->events_.push_back({true, peer, "", why.message()});
    self->cv_.notify_one();
  });
  RETURN_IF_ERROR(c->transport_->Listen(o.host, o.port));
  c->address_ = c->transport_->address();
  return c;
}

void Coordinator::Perform(const CoordinatorOutput& out) {
  for (const std::string& line : out.log) {
    if (options_.log) options_.log(line);
  }
  for (int64_t pid : out.kill_pids) {
    if (options_.fence) {
      options_.fence(pid);
    } else if (pid > 0) {
      ::kill(static_cast<pid_t>(pid), SIGKILL);
    }
  }
  for (const auto& send : out.sends) {
    const std::string bytes = EncodeControl(send.message);
    for (const auto& [world, peer] : peer_of_) {
      if (send.to >= 0 && send.to != world) continue;
      if (core_.dead().count(world)) continue;
      // A failed send means the worker is gone; its failure event arrives separately.
      (void)transport_->Send(peer, kControlAmId, WireBytes(bytes), {});
    }
  }
}

int Coordinator::Run() {
  while (core_.phase() != CoordinatorCore::Phase::kFinished) {
    std::deque<Event> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::duration<double>(options_.tick_s),
                   [&] { return !events_.empty(); });
      batch.swap(events_);
    }
    for (Event& e : batch) {
      if (e.lost) {
        auto it = world_of_.find(e.peer);
        if (it == world_of_.end()) continue;  // never registered
        const int world = it->second;
        world_of_.erase(it);
        if (peer_of_[world] == e.peer) peer_of_.erase(world);
        Perform(core_.OnLost(world, e.why, Now()));
        continue;
      }
      auto m = DecodeControl(e.bytes);
      if (!m.ok()) {
        TLOG(kWarn, "coordinator: dropped a malformed control message: {}", m.status().ToString());
        continue;
      }
      if (m->kind == ControlKind::kRegister && m->world >= 0 &&
          m->world < options_.core.world_size) {
        world_of_[e.peer] = m->world;
        peer_of_[m->world] = e.peer;
      } else if (!world_of_.count(e.peer) || world_of_[e.peer] != m->world) {
        continue;  // only a registered connection speaks for its worker
      }
      Perform(core_.OnMessage(*m, Now()));
    }
    Perform(core_.OnTick(Now()));
  }
  // Let the shutdown reach the workers before the connections close.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return core_.exit_code();
}

}  // namespace tessera::elaswave
