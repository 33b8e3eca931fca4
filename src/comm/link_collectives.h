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
// Chunks and send order (what compass/collective_model.h models): every message of a step
// (per direction) goes as k back-to-back chunk messages, k chosen per collective from the
// ring's links and the block size (link_chunks.h: CollectiveChunkCount on the fabric's
// routes; the model applies the same rule to the topology). A rank sends its own block (or
// first partial) at once, from the caller's buffer; a ring forwards (or adds to and sends)
// chunk j as soon as chunk j of the previous step has arrived, before copying it out; direct
// issues step s+1's push once all of step s has arrived. Ring2's two directions progress on
// their own: the rank's thread serves whichever direction's next chunk arrives first, and
// each direction keeps its own timeline (below), so a counter-clockwise forward never waits
// for a clockwise arrival or the reverse. So copies and additions overlap the transfers and
// only the last chunk's is exposed.
// Sums accumulate in fp32 for float and bf16 (bf16 rounds once at the end), in double for
// double, exactly for int64.
//
// Wire bytes: every message is paced as elements x wire_element_bytes (the training dtype's
// width), whatever the element type in memory.
//
// Fused operators (compass/overlap_ops.h) compute inside a collective through BlockHooks, on
// the calling thread, while the copy engine moves the next step's data:
//  - AllGather `ready(block, lo, hi)`: elements [lo, hi) of rank `block`'s block are in recv.
//    Called once per block part: the own block right after its first sends are issued, then
//    after each step (ring: every chunk of the step's part received and forwarded first;
//    ring2 calls each half when its direction has it, in arrival order; direct: the block
//    from p+s).
//  - ReduceScatter `produce(block, lo, hi)`: write this rank's contribution to elements
//    [lo, hi) of block `block` into the send buffer (which the caller owns and the hook
//    writes); called before those elements are read, as early as the order allows (ring:
//    a direction's next step's part as soon as its previous step is sent, the own block once
//    a direction has sent its last step; direct: the next receiver's block before waiting on
//    the current step; the own block second).
//  - Ring2's halves split at a multiple of `granule` elements (a GEMM row), h0 =
//    floor(c / granule / 2) x granule; without hooks h0 = floor(c / 2).
// A hook's error stops the collective (after the engine drained) and is returned.
//
// Timeline: a message forwarded (or added to and sent) because data arrived may start on the
// wire at that data's arrival time on the fabric's timeline (later if the rank's own inputs,
// a produce hook's result, were complete later), not when this rank's thread got round to
// it; so the scheduler delays of a machine with fewer cores than threads do not add up along
// the ring. Each direction has its own timeline (the latest arrival it waited for, and the
// end of the produce hooks of its parts). The dependencies are the ones above (what
// compass/collective_model.h models).
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
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/copy_engine.h"
#include "comm/link_algo.h"
#include "comm/link_chunks.h"
#include "comm/symmetric_memory.h"

namespace tessera::comm {

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

struct BlockHooks {
  std::function<Status(int block, int64_t lo, int64_t hi)> ready;    // AllGather
  std::function<Status(int block, int64_t lo, int64_t hi)> produce;  // ReduceScatter
  int64_t granule = 1;
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
  Status AllGather(ConstBuffer send, MutableBuffer recv, LinkAlgo algo,
                   const BlockHooks* hooks = nullptr);
  // send.count == n * recv.count; recv gets this rank's block of the element-wise sum.
  Status ReduceScatter(ConstBuffer send, MutableBuffer recv, LinkAlgo algo,
                       const BlockHooks* hooks = nullptr);

 private:
  LinkCollectives(Communicator& comm, CopyEngine* engine, LinkCollectivesOptions options,
                  std::unique_ptr<SymmetricMemory> memory);
  template <typename T>
  Status AllGatherT(const T* send, T* recv, int64_t c, LinkAlgo algo, const BlockHooks* hooks);
  template <typename T, typename Acc>
  Status ReduceScatterT(const T* send, T* recv, int64_t c, LinkAlgo algo, const BlockHooks* hooks);
  // Start: wait until every peer finished the previous collective. End: tell them.
  Status BeginCollective();
  Status EndCollective();
  // The signal counters of `rank`'s window; data counters per (direction, step).
  std::atomic<uint32_t>* Signal(int rank, int slot) const;
  // The arrival time of chunk message `chunk` on `slot` of `rank`'s window.
  std::atomic<int64_t>* Stamp(int rank, int slot, int chunk) const;
  // Whether the slot's next message has arrived (non-blocking).
  bool Arrived(int slot) const;
  // Waits for the slot's next message and moves direction `dir`'s timeline to its arrival.
  Status Wait(int slot, int dir);
  // Runs `dirs` (1 or 2) directions' chunk handlers in arrival order: next_slot(d) is the
  // slot of direction d's next chunk (-1: d is done), handle(d) consumes it after its Wait.
  // With two directions the thread sleeps on the window's wake counter until either has
  // data, serving one chunk of each ready direction per pass.
  Status Progress(int dirs, const std::function<int(int)>& next_slot,
                  const std::function<Status(int)>& handle);
  // This rank's own inputs for what direction `dir` sends next are complete now (after a
  // produce hook).
  void LocalInputsReady(int dir);
  // Chunk `chunk` (0..chunks_-1) of a step's message to `slot_at_receiver`, on direction
  // `dir`'s timeline; `wake` also bumps the receiver's wake counter (two-direction rings).
  void Send(int to_rank, int64_t dst_offset, const void* src, int64_t bytes, int64_t elements,
            int slot_at_receiver, int chunk, int dir, bool wake = false);
  std::byte* Data(int rank) const;
  // This collective's chunk count (link_chunks.h) for `algo` and blocks of `count` elements.
  int ChunkCount(LinkAlgo algo, int64_t count) const;
  std::pair<int64_t, int64_t> Chunk(int64_t lo, int64_t hi, int j) const;
  Status Drained(Status st);
  int64_t Deadline() const;

  Communicator& comm_;
  CopyEngine* engine_;
  LinkCollectivesOptions options_;
  std::unique_ptr<SymmetricMemory> memory_;
  std::vector<int> position_of_rank_;
  std::vector<uint32_t> expected_;  // per slot of this rank's window
  std::vector<uint32_t> base_;      // expected_ when this collective began
  uint32_t collectives_done_ = 0;
  int chunks_ = 1;  // this collective's chunk messages per step and direction
  // Per direction (clockwise / direct, counter-clockwise): when the data of its next send
  // are ready on the fabric's timeline: the latest arrival it waited for and the end of its
  // latest produce hook in this collective (0 at the start: sends start when submitted).
  // See CopyEngine::Put::ready_ns.
  int64_t timeline_ns_[2] = {0, 0};
  std::vector<std::byte> stage_;  // ReduceScatter partial sums, read by the engine
};

}  // namespace tessera::comm
