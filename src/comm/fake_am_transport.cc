#include "comm/fake_am_transport.h"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "comm/am_dispatch.h"
#include "core/check.h"

namespace tessera::comm {
namespace fake_am {

class Node;

// One side of a connection, as its owner sees it.
struct Link {
  std::weak_ptr<Node> remote;
  PeerId remote_id = 0;  // the id the remote gives us
  std::string remote_name;
  bool broken = false;  // closed by either side or the remote is gone
  std::string broken_why;
};

struct Region {
  const std::byte* base = nullptr;
  size_t bytes = 0;
};

// The shared state of one fake transport; RegisteredMemory handles keep it alive.
class Node {
 public:
  explicit Node(uint64_t uid) : uid_(uid), name_(fmt::format("fake transport #{}", uid)) {}

  const uint64_t uid_;
  std::string name_;  // "fake:N" once listening

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<AmEvent> queue_;
  bool stopping_ = false;
  std::unordered_map<PeerId, Link> links_;
  PeerId next_peer_ = 1;

  std::mutex regions_mu_;
  std::unordered_map<uint64_t, Region> regions_;
  uint64_t next_region_ = 1;

  AmDispatcher dispatcher_;

  // Queues an event unless the node is stopping; false when it is.
  bool Push(AmEvent event) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    queue_.push_back(std::move(event));
    cv_.notify_one();
    return true;
  }

  // Marks our link `id` broken and queues the failure event (once).
  void BreakLink(PeerId id, const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(id);
    if (it == links_.end() || it->second.broken || stopping_) return;
    it->second.broken = true;
    it->second.broken_why = why;
    queue_.push_back(AmEvent::Failure(
        id, core::Unavailable(fmt::format("peer {} ({}): {}", id, it->second.remote_name, why))));
    cv_.notify_one();
  }

  void ProgressLoop() {
    for (;;) {
      AmEvent event;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        event = std::move(queue_.front());
        queue_.pop_front();
      }
      dispatcher_.Deliver(event);
    }
  }
};

// The process-wide table of listening fake transports.
struct Registry {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<Node>> by_address;
  uint64_t next_port = 1;
};

Registry& GetRegistry() {
  static Registry* registry = new Registry();
  return *registry;
}

std::atomic<uint64_t> g_next_uid{1};

class FakeRegisteredMemory : public RegisteredMemory {
 public:
  FakeRegisteredMemory(std::shared_ptr<Node> node, uint64_t region_id, const void* addr,
                       size_t bytes)
      : node_(std::move(node)), region_id_(region_id), addr_(addr), bytes_(bytes) {
    const uint64_t words[2] = {node_->uid_, region_id_};
    std::memcpy(key_, words, sizeof(key_));
  }
  ~FakeRegisteredMemory() override {
    std::lock_guard<std::mutex> lock(node_->regions_mu_);
    node_->regions_.erase(region_id_);
  }
  std::span<const std::byte> remote_key() const override { return key_; }
  uint64_t address() const override { return reinterpret_cast<uint64_t>(addr_); }
  size_t size_bytes() const override { return bytes_; }

 private:
  std::shared_ptr<Node> node_;
  uint64_t region_id_;
  const void* addr_;
  size_t bytes_;
  std::byte key_[16];
};

class FakeAmTransport : public AmTransport {
 public:
  FakeAmTransport() : node_(std::make_shared<Node>(g_next_uid.fetch_add(1))) {
    thread_ = std::thread([node = node_.get()] { node->ProgressLoop(); });
  }

  ~FakeAmTransport() override {
    CHECK(std::this_thread::get_id() != thread_.get_id())
        << "a fake AmTransport destroyed from its own handler";
    if (!address_.empty()) {
      Registry& registry = GetRegistry();
      std::lock_guard<std::mutex> lock(registry.mu);
      registry.by_address.erase(address_);
    }
    std::vector<Link> links;
    {
      std::lock_guard<std::mutex> lock(node_->mu_);
      node_->stopping_ = true;
      for (auto& [id, link] : node_->links_) {
        if (!link.broken) links.push_back(link);
        link.broken = true;
        link.broken_why = "this transport is shutting down";
      }
      node_->cv_.notify_all();
    }
    for (const Link& link : links) {
      if (auto remote = link.remote.lock()) {
        remote->BreakLink(link.remote_id, "went away (its transport was destroyed)");
      }
    }
    thread_.join();
  }

  std::string address() const override { return address_; }

  core::Status Listen(const std::string& host, int port) override;
  core::StatusOr<PeerId> Connect(const std::string& address, double timeout_s) override;

  void SetHandler(uint16_t am_id, AmHandler handler) override {
    node_->dispatcher_.SetHandler(am_id, std::move(handler));
  }
  void SetAcceptHandler(PeerEventHandler on_accept) override {
    node_->dispatcher_.SetAcceptHandler(std::move(on_accept));
  }
  void SetFailureHandler(PeerEventHandler on_failure) override {
    node_->dispatcher_.SetFailureHandler(std::move(on_failure));
  }

  core::Status Send(PeerId peer, uint16_t am_id, std::span<const std::byte> header,
                    std::span<const std::byte> payload) override;
  core::StatusOr<std::unique_ptr<RegisteredMemory>> RegisterMemory(void* addr,
                                                                   size_t bytes) override;
  core::Status Get(PeerId peer, std::span<const std::byte> remote_key, uint64_t remote_address,
                   void* local, size_t bytes) override;
  core::Status Close(PeerId peer) override;
  std::string backend_name() const override { return "fake"; }

 private:
  // The remote node of `peer` and our id on it, or why there is none.
  core::StatusOr<std::pair<std::shared_ptr<Node>, PeerId>> Remote(PeerId peer);

  std::shared_ptr<Node> node_;
  std::thread thread_;
  std::string address_;
};

core::Status FakeAmTransport::Listen(const std::string& host, int port) {
  (void)host;
  if (port < 0 || port > 65535) {
    return core::InvalidArgument(fmt::format("Listen: port: got {}, must be in [0, 65535]", port));
  }
  if (!address_.empty()) {
    return core::FailedPrecondition(fmt::format("Listen: already listening on {}", address_));
  }
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  std::string address;
  if (port == 0) {
    do {
      address = fmt::format("fake:{}", registry.next_port++);
    } while (registry.by_address.count(address) > 0);
  } else {
    address = fmt::format("fake:{}", port);
    if (registry.by_address.count(address) > 0) {
      return core::Unavailable(fmt::format("Listen: {} is already in use", address));
    }
  }
  registry.by_address[address] = node_;
  address_ = address;
  std::lock_guard<std::mutex> node_lock(node_->mu_);
  node_->name_ = address;
  return core::Status::Ok();
}

core::StatusOr<PeerId> FakeAmTransport::Connect(const std::string& address, double timeout_s) {
  (void)timeout_s;
  if (address.rfind("fake:", 0) != 0) {
    return core::InvalidArgument(
        fmt::format("Connect: address: got '{}', a fake address looks like fake:N", address));
  }
  std::shared_ptr<Node> remote;
  {
    Registry& registry = GetRegistry();
    std::lock_guard<std::mutex> lock(registry.mu);
    auto it = registry.by_address.find(address);
    if (it != registry.by_address.end()) remote = it->second.lock();
  }
  if (remote == nullptr) {
    return core::Unavailable(fmt::format("Connect: no transport listens on {}", address));
  }
  PeerId local_id;
  std::string local_name;
  {
    std::lock_guard<std::mutex> lock(node_->mu_);
    local_id = node_->next_peer_++;
    node_->links_[local_id] = Link{remote, 0, address, false, ""};
    local_name = node_->name_;
  }
  PeerId remote_id = 0;
  {
    std::lock_guard<std::mutex> lock(remote->mu_);
    if (!remote->stopping_) {
      remote_id = remote->next_peer_++;
      remote->links_[remote_id] = Link{node_, local_id, local_name, false, ""};
      remote->queue_.push_back(AmEvent::Accept(remote_id));
      remote->cv_.notify_one();
    }
  }
  std::lock_guard<std::mutex> lock(node_->mu_);
  if (remote_id == 0) {
    node_->links_.erase(local_id);
    return core::Unavailable(fmt::format("Connect: the transport on {} is shutting down", address));
  }
  node_->links_[local_id].remote_id = remote_id;
  return local_id;
}

core::StatusOr<std::pair<std::shared_ptr<Node>, PeerId>> FakeAmTransport::Remote(PeerId peer) {
  std::lock_guard<std::mutex> lock(node_->mu_);
  auto it = node_->links_.find(peer);
  if (it == node_->links_.end()) {
    return core::InvalidArgument(fmt::format("peer: got {}, no such peer", peer));
  }
  const Link& link = it->second;
  if (link.broken) {
    return core::Unavailable(
        fmt::format("peer {} ({}): {}", peer, link.remote_name, link.broken_why));
  }
  std::shared_ptr<Node> remote = link.remote.lock();
  if (remote == nullptr) {
    return core::Unavailable(fmt::format("peer {} ({}): went away", peer, link.remote_name));
  }
  return std::make_pair(std::move(remote), link.remote_id);
}

core::Status FakeAmTransport::Send(PeerId peer, uint16_t am_id, std::span<const std::byte> header,
                                   std::span<const std::byte> payload) {
  ASSIGN_OR_RETURN(auto remote, Remote(peer));
  AmEvent event = AmEvent::Message(remote.second, am_id, header, payload);
  Node& r = *remote.first;
  std::lock_guard<std::mutex> lock(r.mu_);
  auto it = r.links_.find(remote.second);
  if (r.stopping_ || it == r.links_.end() || it->second.broken) {
    return core::Unavailable(
        fmt::format("Send: peer {} ({}) closed the connection or went away", peer, r.name_));
  }
  r.queue_.push_back(std::move(event));
  r.cv_.notify_one();
  return core::Status::Ok();
}

core::StatusOr<std::unique_ptr<RegisteredMemory>> FakeAmTransport::RegisterMemory(void* addr,
                                                                                  size_t bytes) {
  if (addr == nullptr && bytes > 0) {
    return core::InvalidArgument(
        fmt::format("RegisterMemory: addr: got null for {} bytes, must point to memory", bytes));
  }
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(node_->regions_mu_);
    id = node_->next_region_++;
    node_->regions_[id] = Region{static_cast<const std::byte*>(addr), bytes};
  }
  return std::unique_ptr<RegisteredMemory>(
      std::make_unique<FakeRegisteredMemory>(node_, id, addr, bytes));
}

core::Status FakeAmTransport::Get(PeerId peer, std::span<const std::byte> remote_key,
                                  uint64_t remote_address, void* local, size_t bytes) {
  if (remote_key.size() != 16) {
    return core::InvalidArgument(
        fmt::format("Get: remote_key: got {} bytes, a fake key has 16", remote_key.size()));
  }
  uint64_t words[2];
  std::memcpy(words, remote_key.data(), sizeof(words));
  ASSIGN_OR_RETURN(auto remote, Remote(peer));
  Node& r = *remote.first;
  if (words[0] != r.uid_) {
    return core::InvalidArgument(fmt::format(
        "Get: remote_key: names fake transport #{}, but peer {} is #{}", words[0], peer, r.uid_));
  }
  {
    std::lock_guard<std::mutex> lock(r.mu_);
    if (r.stopping_) return core::Unavailable(fmt::format("Get: peer {} went away", peer));
  }
  std::lock_guard<std::mutex> lock(r.regions_mu_);
  auto it = r.regions_.find(words[1]);
  if (it == r.regions_.end()) {
    return core::InvalidArgument(
        fmt::format("Get: remote_key: region {} of peer {} is not registered", words[1], peer));
  }
  const uint64_t base = reinterpret_cast<uint64_t>(it->second.base);
  if (remote_address < base || remote_address - base > it->second.bytes ||
      bytes > it->second.bytes - (remote_address - base)) {
    return core::InvalidArgument(
        fmt::format("Get: [0x{:x}, +{}) is outside the registered region [0x{:x}, +{})",
                    remote_address, bytes, base, it->second.bytes));
  }
  if (bytes > 0) std::memcpy(local, reinterpret_cast<const void*>(remote_address), bytes);
  return core::Status::Ok();
}

core::Status FakeAmTransport::Close(PeerId peer) {
  Link link;
  {
    std::lock_guard<std::mutex> lock(node_->mu_);
    auto it = node_->links_.find(peer);
    if (it == node_->links_.end()) {
      return core::InvalidArgument(fmt::format("Close: peer: got {}, no such peer", peer));
    }
    if (it->second.broken) return core::Status::Ok();
    link = it->second;
    it->second.broken = true;
    it->second.broken_why = "closed by this side";
  }
  if (auto remote = link.remote.lock()) remote->BreakLink(link.remote_id, "closed the connection");
  return core::Status::Ok();
}

}  // namespace fake_am

std::unique_ptr<AmTransport> MakeFakeAmTransport() {
  return std::make_unique<fake_am::FakeAmTransport>();
}

}  // namespace tessera::comm
