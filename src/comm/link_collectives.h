// LinkCollectives: AllGather and ReduceScatter over emulated links (copy_engine.h), in three
// algorithms, for one communicator. Data really moves between the ranks' symmetric memory
// (one window per rank), paced by the fabric; results equal the plain collectives'
// (AllGather bit for bit; ReduceScatter sums in ring order, so they differ from a rank-order
// sum only by floating-point rounding).
//
// Algorithms (n ranks; ring position p holds rank order[p]; "block j" is rank j's block of
// c elements; steps are sequential, a step's messages run concurrently):
//  - kRing1 (Flux/NCCL single ring, one direction of every edge): AllGather step s = 0..n-2:
//    forward block of position p-s to position p+1, receive block p-s-1 from p-1.
//    ReduceScatter step s: add own contribution to the partial of block p-s-1 received at
//    step s-1 (none at s = 0) and send it to p+1; after step n-2 the partial of block p
//    arrives from p-1 and the own contribution is added last.
//  - kRing2 (Compass double ring): every block splits into two halves (first c/2 elements,
//    the rest); half 0 runs kRing1 clockwise, half 1 the mirror counter-clockwise (to p-1,
//    blocks p+s and p+s+1), so both directions of every edge carry half the bytes at once.
//  - kDirect (PyTorch async-TP pull order): step s = 1..n-1: position p receives from
//    position p+s (the sender pushes its own block, or for ReduceScatter its raw contribution
//    to the receiver's block); ReduceScatter sums own + steps 1..n-1 at the end.
// Sums accumulate in fp32 for float and bf16 (bf16 rounds once at the end), in double for
// double, exactly for int64.
//
// Wire bytes: every message is paced as elements x wire_element_bytes (the training dtype's
// width), whatever the element type in memory.
//
// Synchronisation: a collective starts only after every rank finished the previous one (each
// rank signals all peers when it is done with its window), so windows are reused safely.
// Waits use the communicator's op timeout: DeadlineExceeded when a peer stops answering.
//
// Collective rules: Create, AllGather and ReduceScatter are collective over the communicator
// (same algorithm and sizes on every rank). Thread-safety: one thread per rank, as
// Communicator. The engine and the communicator must outlive this object.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/copy_engine.h"
#include "comm/symmetric_memory.h"

namespace tessera::comm {

enum class LinkAlgo { kRing1, kRing2, kDirect };
// "ring1", "ring2", "direct".
const char* LinkAlgoName(LinkAlgo a);
StatusOr<LinkAlgo> ParseLinkAlgo(const std::string& name);

struct LinkCollectivesOptions {
  // endpoint_of_rank[r]: the fabric endpoint (world rank) of rank r of the communicator.
  std::vector<int> endpoint_of_rank;
  // The ring: order[p] is the rank at ring position p (a permutation of 0..n-1).
  std::vector<int> order;
  // Bytes of symmetric memory per rank; a collective that needs more is InvalidArgument.
  int64_t window_bytes = 64 << 20;
  // Wire width of one element (2: bf16 training data).
  int wire_element_bytes = 2;
};

class LinkCollectives {
 public:
  static StatusOr<std::unique_ptr<LinkCollectives>> Create(Communicator& comm, CopyEngine* engine,
                                                           LinkCollectivesOptions options);
  ~LinkCollectives();

  const LinkCollectivesOptions& options() const { return options_; }
  // Window bytes a collective needs: AllGather n*c*sizeof(T); ReduceScatter (n-1)*c*acc.
  static int64_t AllGatherWindowBytes(int n, int64_t count, DType t);
  static int64_t ReduceScatterWindowBytes(int n, int64_t count, DType t);

  // recv.count == n * send.count; rank j's block at j * send.count. Same dtype.
  Status AllGather(ConstBuffer send, MutableBuffer recv, LinkAlgo algo);
  // send.count == n * recv.count; recv gets this rank's block of the element-wise sum.
  Status ReduceScatter(ConstBuffer send, MutableBuffer recv, LinkAlgo algo);

 private:
  LinkCollectives(Communicator& comm, CopyEngine* engine, LinkCollectivesOptions options,
                  std::unique_ptr<SymmetricMemory> memory);
  template <typename T>
  Status AllGatherT(const T* send, T* recv, int64_t c, LinkAlgo algo);
  template <typename T, typename Acc>
  Status ReduceScatterT(const T* send, T* recv, int64_t c, LinkAlgo algo);
  // Start: wait until every peer finished the previous collective. End: tell them.
  Status BeginCollective();
  Status EndCollective();
  // The signal counters of `rank`'s window; data counters per (direction, step).
  std::atomic<uint32_t>* Signal(int rank, int slot) const;
  Status Wait(int slot);
  void Send(int to_rank, int64_t dst_offset, const void* src, int64_t bytes, int64_t elements,
            int slot_at_receiver);
  std::byte* Data(int rank) const;
  Status Drained(Status st);
  int64_t Deadline() const;

  Communicator& comm_;
  CopyEngine* engine_;
  LinkCollectivesOptions options_;
  std::unique_ptr<SymmetricMemory> memory_;
  std::vector<int> position_of_rank_;
  std::vector<uint32_t> expected_;  // per slot of this rank's window
  uint32_t collectives_done_ = 0;
  std::vector<std::byte> stage_;  // ReduceScatter partial sums, read by the engine
};

}  // namespace tessera::comm
