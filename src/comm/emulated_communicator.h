// EmulatedCommunicator: the "emulated" Communicator backend. It wraps a base communicator (MPI
// ranks on one machine, or the in-process backend's threads) and moves AllGather and ReduceScatter
// (equal blocks, also ReduceScatterV when all counts are equal) over emulated links: real bytes
// between the ranks' symmetric memory, paced by a machine-wide LinkFabric, by one CopyEngine
// thread per rank, with the algorithm chosen by set_algo (ring1, ring2 or direct; see
// link_collectives.h). Every other operation (AllToAllV, AllGatherV, AllReduceSum, Broadcast,
// Barrier, point-to-point) runs on the base backend unpaced: it is correct but not timed
// like the emulated machine.
//
// Sub() builds an emulated sub-communicator over the base's sub-communicator that shares this
// rank's fabric and copy engine (so TP groups on one machine contend for the same links) with
// its own windows and a ring order from options.ring_order.
//
// Semantics, errors and collective rules are those of communicator.h; op timeouts bound the
// waits on peers (DeadlineExceeded breaks the communicator). Create is collective over the
// base; the base must outlive this object, and every rank must destroy it (its windows are
// freed collectively). Thread-safety: one thread per rank, as Communicator.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/copy_engine.h"
#include "comm/link_collectives.h"
#include "comm/link_fabric.h"

namespace tessera::comm {

struct EmulatedOptions {
  LinkAlgo algo = LinkAlgo::kRing1;
  int64_t window_bytes = 64 << 20;  // symmetric memory per rank and communicator
  int wire_element_bytes = 2;       // bf16 on the wire
  // The ring order of a group: given the fabric endpoints of the group's ranks, returns
  // order[p] = index (into that list) of the rank at ring position p. Default: identity.
  std::function<std::vector<int>(const std::vector<int>& endpoints)> ring_order;
};

class EmulatedCommunicator final : public Communicator {
 public:
  // `links` describes the machine with one endpoint per rank of `base`.
  static StatusOr<std::unique_ptr<EmulatedCommunicator>> Create(Communicator& base,
                                                                PacedLinks links,
                                                                EmulatedOptions options);
  ~EmulatedCommunicator() override;

  void set_algo(LinkAlgo algo) { options_.algo = algo; }
  LinkAlgo algo() const { return options_.algo; }
  CopyEngine& engine() { return *engine_; }
  LinkFabric& fabric() { return *fabric_; }
  LinkCollectives& collectives() { return *collectives_; }
  Communicator& base() { return base_; }
  bool ranks_share_address_space() const override { return base_.ranks_share_address_space(); }
  [[noreturn]] void Abort(const Status& status) override;

 protected:
  Status DoAllToAllV(ConstBuffer send, std::span<const int64_t> send_counts,
                     std::span<const int64_t> send_displs, MutableBuffer recv,
                     std::span<const int64_t> recv_counts,
                     std::span<const int64_t> recv_displs) override;
  Status DoAllGatherV(ConstBuffer send, MutableBuffer recv, std::span<const int64_t> recv_counts,
                      std::span<const int64_t> recv_displs) override;
  Status DoAllGather(ConstBuffer send, MutableBuffer recv) override;
  Status DoAllReduceSum(MutableBuffer data) override;
  Status DoReduceScatterV(ConstBuffer send, MutableBuffer recv,
                          std::span<const int64_t> recv_counts) override;
  Status DoBroadcast(MutableBuffer data, int root) override;
  Status DoBarrier() override;
  StatusOr<std::unique_ptr<RequestImpl>> DoISend(std::span<const float> data, int dst,
                                                 int tag) override;
  StatusOr<std::unique_ptr<RequestImpl>> DoIRecv(std::span<float> data, int src, int tag) override;
  StatusOr<std::unique_ptr<Communicator>> DoSub(const std::vector<int>& ranks) override;

 private:
  EmulatedCommunicator(Communicator& base, std::shared_ptr<LinkFabric> fabric,
                       std::shared_ptr<CopyEngine> engine, std::vector<int> endpoints,
                       EmulatedOptions options);
  // Builds the windows of a (sub-)communicator over `base` (collective over base).
  static StatusOr<std::unique_ptr<EmulatedCommunicator>> Build(Communicator& base,
                                                               std::shared_ptr<LinkFabric> fabric,
                                                               std::shared_ptr<CopyEngine> engine,
                                                               std::vector<int> endpoints,
                                                               EmulatedOptions options);
  // The base follows this communicator's op timeout.
  Communicator& Base();

  Communicator& base_;
  std::shared_ptr<LinkFabric> fabric_;
  std::shared_ptr<CopyEngine> engine_;
  std::vector<int> endpoints_;  // fabric endpoint of each rank
  EmulatedOptions options_;
  std::unique_ptr<LinkCollectives> collectives_;
};

}  // namespace tessera::comm
