#include "comm/emulated_communicator.h"

#include <cstdlib>
#include <numeric>

namespace tessera::comm {

namespace {

// Calls fn(T{}) with the C++ type of `t`.
template <typename Fn>
Status WithType(DType t, Fn&& fn) {
  switch (t) {
    case DType::kF32:
      return fn(float{});
    case DType::kBF16:
      return fn(Bf16{});
    case DType::kI64:
      return fn(int64_t{});
    case DType::kF64:
      return fn(double{});
  }
  return core::Internal("unknown dtype");
}

template <typename T>
std::span<const T> Span(ConstBuffer b) {
  return {static_cast<const T*>(b.data), static_cast<size_t>(b.count)};
}
template <typename T>
std::span<T> Span(MutableBuffer b) {
  return {static_cast<T*>(b.data), static_cast<size_t>(b.count)};
}

// A base backend's request seen through the RequestImpl interface.
class ForwardedRequest final : public RequestImpl {
 public:
  explicit ForwardedRequest(Request r) : r_(std::move(r)) {}
  StatusOr<bool> Test() override { return r_.Test(); }
  Status Wait(double timeout_s) override { return r_.WaitFor(timeout_s); }
  void Cancel() override { r_.Cancel(); }

 private:
  Request r_;
};

}  // namespace

EmulatedCommunicator::EmulatedCommunicator(Communicator& base, std::shared_ptr<LinkFabric> fabric,
                                           std::shared_ptr<CopyEngine> engine,
                                           std::vector<int> endpoints, EmulatedOptions options)
    : Communicator(base.rank(), base.world_ranks()),
      base_(base),
      fabric_(std::move(fabric)),
      engine_(std::move(engine)),
      endpoints_(std::move(endpoints)),
      options_(std::move(options)) {}

EmulatedCommunicator::~EmulatedCommunicator() = default;

StatusOr<std::unique_ptr<EmulatedCommunicator>> EmulatedCommunicator::Create(
    Communicator& base, PacedLinks links, EmulatedOptions options) {
  ASSIGN_OR_RETURN(std::unique_ptr<LinkFabric> fabric, LinkFabric::Create(base, std::move(links)));
  std::shared_ptr<LinkFabric> shared_fabric(std::move(fabric));
  auto engine = std::make_shared<CopyEngine>(shared_fabric.get(), base.rank());
  std::vector<int> endpoints(base.size());
  std::iota(endpoints.begin(), endpoints.end(), 0);
  return Build(base, std::move(shared_fabric), std::move(engine), std::move(endpoints),
               std::move(options));
}

StatusOr<std::unique_ptr<EmulatedCommunicator>> EmulatedCommunicator::Build(
    Communicator& base, std::shared_ptr<LinkFabric> fabric, std::shared_ptr<CopyEngine> engine,
    std::vector<int> endpoints, EmulatedOptions options) {
  LinkCollectivesOptions lo;
  lo.endpoint_of_rank = endpoints;
  if (options.ring_order) {
    lo.order = options.ring_order(endpoints);
  } else {
    lo.order.resize(endpoints.size());
    std::iota(lo.order.begin(), lo.order.end(), 0);
  }
  lo.window_bytes = options.window_bytes;
  lo.wire_element_bytes = options.wire_element_bytes;
  ASSIGN_OR_RETURN(std::unique_ptr<LinkCollectives> collectives,
                   LinkCollectives::Create(base, engine.get(), std::move(lo)));
  std::unique_ptr<EmulatedCommunicator> comm(new EmulatedCommunicator(
      base, std::move(fabric), std::move(engine), std::move(endpoints), std::move(options)));
  comm->collectives_ = std::move(collectives);
  return comm;
}

Communicator& EmulatedCommunicator::Base() {
  base_.set_op_timeout_s(op_timeout_s());
  return base_;
}

void EmulatedCommunicator::Abort(const Status& status) {
  base_.Abort(status);
  std::abort();  // not reached: Abort does not return
}

Status EmulatedCommunicator::DoAllGather(ConstBuffer send, MutableBuffer recv) {
  Base();  // the collectives read the base's op timeout
  return collectives_->AllGather(send, recv, options_.algo);
}

Status EmulatedCommunicator::DoReduceScatterV(ConstBuffer send, MutableBuffer recv,
                                              std::span<const int64_t> recv_counts) {
  bool equal = true;
  for (int64_t c : recv_counts) equal = equal && c == recv_counts[0];
  if (equal) {
    Base();
    return collectives_->ReduceScatter(send, recv, options_.algo);
  }
  return WithType(send.dtype, [&](auto t) {
    using T = decltype(t);
    return Base().ReduceScatterV(Span<T>(send), Span<T>(recv), recv_counts);
  });
}

Status EmulatedCommunicator::DoAllToAllV(ConstBuffer send, std::span<const int64_t> send_counts,
                                         std::span<const int64_t> send_displs, MutableBuffer recv,
                                         std::span<const int64_t> recv_counts,
                                         std::span<const int64_t> recv_displs) {
  return WithType(send.dtype, [&](auto t) {
    using T = decltype(t);
    return Base().AllToAllV(Span<T>(send), send_counts, send_displs, Span<T>(recv), recv_counts,
                            recv_displs);
  });
}

Status EmulatedCommunicator::DoAllGatherV(ConstBuffer send, MutableBuffer recv,
                                          std::span<const int64_t> recv_counts,
                                          std::span<const int64_t> recv_displs) {
  return WithType(send.dtype, [&](auto t) {
    using T = decltype(t);
    return Base().AllGatherV(Span<T>(send), Span<T>(recv), recv_counts, recv_displs);
  });
}

Status EmulatedCommunicator::DoAllReduceSum(MutableBuffer data) {
  return WithType(data.dtype, [&](auto t) {
    using T = decltype(t);
    return Base().AllReduceSum(Span<T>(data));
  });
}

Status EmulatedCommunicator::DoBroadcast(MutableBuffer data, int root) {
  return WithType(data.dtype, [&](auto t) {
    using T = decltype(t);
    return Base().Broadcast(Span<T>(data), root);
  });
}

Status EmulatedCommunicator::DoBarrier() { return Base().Barrier(); }

StatusOr<std::unique_ptr<RequestImpl>> EmulatedCommunicator::DoISend(std::span<const float> data,
                                                                     int dst, int tag) {
  ASSIGN_OR_RETURN(Request r, Base().ISend(data, dst, tag));
  return std::unique_ptr<RequestImpl>(new ForwardedRequest(std::move(r)));
}

StatusOr<std::unique_ptr<RequestImpl>> EmulatedCommunicator::DoIRecv(std::span<float> data, int src,
                                                                     int tag) {
  ASSIGN_OR_RETURN(Request r, Base().IRecv(data, src, tag));
  return std::unique_ptr<RequestImpl>(new ForwardedRequest(std::move(r)));
}

StatusOr<std::unique_ptr<Communicator>> EmulatedCommunicator::DoSub(const std::vector<int>& ranks) {
  ASSIGN_OR_RETURN(Communicator * sub, Base().Sub(ranks));
  std::vector<int> endpoints;
  for (int r : ranks) endpoints.push_back(endpoints_[r]);
  ASSIGN_OR_RETURN(std::unique_ptr<EmulatedCommunicator> e,
                   Build(*sub, fabric_, engine_, std::move(endpoints), options_));
  return std::unique_ptr<Communicator>(std::move(e));
}

}  // namespace tessera::comm
