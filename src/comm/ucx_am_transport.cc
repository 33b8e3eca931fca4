#include "comm/ucx_am_transport.h"

#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "comm/ucx_am_internal.h"
#include "core/check.h"

namespace tessera::comm {
namespace ucx_am {

class UcxRegisteredMemory : public RegisteredMemory {
 public:
  UcxRegisteredMemory(std::shared_ptr<UcxContext> context, ucp_mem_h memh, const void* addr,
                      size_t bytes, std::vector<std::byte> key)
      : context_(std::move(context)),
        memh_(memh),
        address_(reinterpret_cast<uint64_t>(addr)),
        bytes_(bytes),
        key_(std::move(key)) {}
  ~UcxRegisteredMemory() override {
    if (memh_ != nullptr) ucp_mem_unmap(context_->get(), memh_);
  }
  std::span<const std::byte> remote_key() const override { return key_; }
  uint64_t address() const override { return address_; }
  size_t size_bytes() const override { return bytes_; }

 private:
  std::shared_ptr<UcxContext> context_;
  ucp_mem_h memh_;
  uint64_t address_;
  size_t bytes_;
  std::vector<std::byte> key_;
};

core::Status UcxAmTransport::Init() {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucs_status_t status = ucp_worker_create(context_->get(), &params, &worker_);
  if (status != UCS_OK) return UcxError("am transport backend 'ucx': ucp_worker_create", status);
  ucp_am_handler_param_t am{};
  am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                  UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  am.id = kUcxAmId;
  am.flags = UCP_AM_FLAG_WHOLE_MSG;
  am.cb = &UcxAmTransport::OnAm;
  am.arg = this;
  status = ucp_worker_set_am_recv_handler(worker_, &am);
  if (status != UCS_OK) return UcxError("ucp_worker_set_am_recv_handler", status);
  int worker_fd = -1;
  status = ucp_worker_get_efd(worker_, &worker_fd);
  if (status != UCS_OK) return UcxError("ucp_worker_get_efd", status);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (wake_fd_ < 0 || epoll_fd_ < 0) {
    return core::Internal(
        fmt::format("am transport 'ucx': eventfd/epoll_create1: {}", std::strerror(errno)));
  }
  for (int fd : {worker_fd, wake_fd_}) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
      return core::Internal(fmt::format("am transport 'ucx': epoll_ctl: {}", std::strerror(errno)));
    }
  }
  ucx_thread_ = std::thread([this] { UcxLoop(); });
  delivery_thread_ = std::thread([this] { DeliveryLoop(); });
  return core::Status::Ok();
}

UcxAmTransport::~UcxAmTransport() {
  if (ucx_thread_.joinable()) {
    CHECK(std::this_thread::get_id() != delivery_thread_.get_id())
        << "a ucx AmTransport destroyed from its own handler";
    Post([this] { BeginShutdown(); });
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      delivery_stop_ = true;
      queue_cv_.notify_all();
    }
    delivery_thread_.join();
    exit_requested_ = true;
    Wake();
    ucx_thread_.join();
  } else if (worker_ != nullptr) {
    ucp_worker_destroy(worker_);  // Init failed before the threads started
  }
  if (wake_fd_ >= 0) close(wake_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

// ---- caller side ----

bool UcxAmTransport::Post(std::function<void()> command) {
  {
    std::lock_guard<std::mutex> lock(command_mu_);
    if (!accepting_commands_) return false;
    commands_.push_back(std::move(command));
  }
  Wake();
  return true;
}

void UcxAmTransport::Wake() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
}

core::Status UcxAmTransport::Call(const std::shared_ptr<Op>& op, std::function<void()> command) {
  if (!Post(std::move(command))) {
    return core::Unavailable("am transport 'ucx': this transport is shutting down");
  }
  return op->Wait();
}

core::Status UcxAmTransport::Listen(const std::string& host, int port) {
  ASSIGN_OR_RETURN(SockAddr addr, ResolveHostPort("Listen", host, port));
  auto op = std::make_shared<Op>(this);
  return Call(op, [this, op, addr] { StartListen(op, addr); });
}

core::StatusOr<PeerId> UcxAmTransport::Connect(const std::string& address, double timeout_s) {
  ASSIGN_OR_RETURN(SockAddr addr, ParseAddress("Connect", address));
  if (!(timeout_s > 0)) {
    return core::InvalidArgument(
        fmt::format("Connect: timeout_s: got {}, must be > 0 (e.g. 30)", timeout_s));
  }
  auto op = std::make_shared<Op>(this);
  RETURN_IF_ERROR(Call(
      op, [this, op, addr, address, timeout_s] { StartConnect(op, addr, address, timeout_s); }));
  return op->peer();
}

core::Status UcxAmTransport::Send(PeerId peer, uint16_t am_id, std::span<const std::byte> header,
                                  std::span<const std::byte> payload) {
  auto op = std::make_shared<Op>(this);
  op->target = peer;
  op->wire.am_id = am_id;
  op->wire.header_bytes = header.size();
  return Call(op, [this, op, header, payload] { StartSend(op, header, payload); });
}

core::StatusOr<std::unique_ptr<RegisteredMemory>> UcxAmTransport::RegisterMemory(void* addr,
                                                                                 size_t bytes) {
  if (addr == nullptr && bytes > 0) {
    return core::InvalidArgument(
        fmt::format("RegisterMemory: addr: got null for {} bytes, must point to memory", bytes));
  }
  if (bytes == 0) {  // nothing to map: a key that only allows empty reads
    return std::unique_ptr<RegisteredMemory>(std::make_unique<UcxRegisteredMemory>(
        context_, nullptr, addr, 0, EncodeRemoteKey(reinterpret_cast<uint64_t>(addr), 0, {})));
  }
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = addr;
  params.length = bytes;
  ucp_mem_h memh = nullptr;
  ucs_status_t status = ucp_mem_map(context_->get(), &params, &memh);
  if (status != UCS_OK) return UcxError(fmt::format("RegisterMemory({} bytes)", bytes), status);
  void* packed = nullptr;
  size_t packed_bytes = 0;
  status = ucp_rkey_pack(context_->get(), memh, &packed, &packed_bytes);
  if (status != UCS_OK) {
    ucp_mem_unmap(context_->get(), memh);
    return UcxError("RegisterMemory: ucp_rkey_pack", status);
  }
  std::vector<std::byte> key =
      EncodeRemoteKey(reinterpret_cast<uint64_t>(addr), bytes,
                      std::span(static_cast<const std::byte*>(packed), packed_bytes));
  ucp_rkey_buffer_release(packed);
  return std::unique_ptr<RegisteredMemory>(
      std::make_unique<UcxRegisteredMemory>(context_, memh, addr, bytes, std::move(key)));
}

core::Status UcxAmTransport::Get(PeerId peer, std::span<const std::byte> remote_key,
                                 uint64_t remote_address, void* local, size_t bytes) {
  ASSIGN_OR_RETURN(RemoteKey key, DecodeRemoteKey(remote_key));
  if (remote_address < key.base || remote_address - key.base > key.bytes ||
      bytes > key.bytes - (remote_address - key.base)) {
    return core::InvalidArgument(
        fmt::format("Get: [0x{:x}, +{}) is outside the registered region [0x{:x}, +{})",
                    remote_address, bytes, key.base, key.bytes));
  }
  if (local == nullptr && bytes > 0) {
    return core::InvalidArgument(
        fmt::format("Get: local: got null for {} bytes, must point to memory", bytes));
  }
  auto op = std::make_shared<Op>(this);
  op->target = peer;
  return Call(op, [this, op, key, remote_address, local, bytes] {
    StartGet(op, key.packed_rkey, remote_address, local, bytes);
  });
}

core::Status UcxAmTransport::Close(PeerId peer) {
  auto op = std::make_shared<Op>(this);
  op->target = peer;
  return Call(op, [this, op] { StartClose(op); });
}

}  // namespace ucx_am

core::StatusOr<std::unique_ptr<AmTransport>> MakeUcxAmTransport() {
  ASSIGN_OR_RETURN(std::shared_ptr<ucx_am::UcxContext> context, ucx_am::UcxContext::Create());
  auto transport = std::make_unique<ucx_am::UcxAmTransport>(std::move(context));
  RETURN_IF_ERROR(transport->Init());
  return std::unique_ptr<AmTransport>(std::move(transport));
}

}  // namespace tessera::comm
