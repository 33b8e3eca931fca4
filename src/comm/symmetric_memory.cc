#include "comm/symmetric_memory.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "comm/mpi_communicator.h"
#include "comm/mpi_util.h"

namespace tessera::comm {

namespace {

constexpr int64_t kAlign = 4096;

int64_t RoundUp(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// MPI ranks on one machine: an MPI-3 shared window.
class MpiSymmetricMemory final : public SymmetricMemory {
 public:
  MpiSymmetricMemory(int rank, int64_t segment_bytes) : SymmetricMemory(rank, segment_bytes) {}
  ~MpiSymmetricMemory() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
  }
  const char* backend() const override { return "MPI shared window"; }

  Status Init(MPI_Comm comm) {
    MpiComm node;
    {
      MPI_Comm raw = MPI_COMM_NULL;
      MPI_RETURN_IF_ERROR(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &raw));
      node = MpiComm(raw);
    }
    int comm_size = 0, node_size = 0, node_rank = 0;
    MPI_RETURN_IF_ERROR(MPI_Comm_size(comm, &comm_size));
    MPI_RETURN_IF_ERROR(MPI_Comm_size(node.get(), &node_size));
    MPI_RETURN_IF_ERROR(MPI_Comm_rank(node.get(), &node_rank));
    // Every rank must agree on the verdict before anyone calls the collective window setup.
    int all_local = node_size == comm_size ? 1 : 0;
    MPI_RETURN_IF_ERROR(MPI_Allreduce(MPI_IN_PLACE, &all_local, 1, MPI_INT, MPI_MIN, comm));
    if (!all_local) {
      return core::FailedPrecondition(
          "symmetric memory needs every rank of the communicator on one machine; " +
          std::to_string(comm_size) + " ranks span more than one node");
    }
    MPI_Info info;
    MPI_RETURN_IF_ERROR(MPI_Info_create(&info));
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    void* base = nullptr;
    const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(RoundUp(segment_bytes_)), 1, info,
                                           comm, &base, &win_);
    MPI_Info_free(&info);
    MPI_RETURN_IF_ERROR(rc);
    segments_.resize(comm_size);
    for (int r = 0; r < comm_size; ++r) {
      MPI_Aint size = 0;
      int disp = 0;
      void* ptr = nullptr;
      MPI_RETURN_IF_ERROR(MPI_Win_shared_query(win_, r, &size, &disp, &ptr));
      segments_[r] = static_cast<std::byte*>(ptr);
    }
    std::memset(segments_[rank_], 0, static_cast<size_t>(segment_bytes_));
    MPI_RETURN_IF_ERROR(MPI_Barrier(comm));  // zeroed everywhere before anyone writes
    (void)node_rank;
    return Status::Ok();
  }

 private:
  MPI_Win win_ = MPI_WIN_NULL;
};

// Threads of one process: one heap block, shared through a reference count so that it
// lives until the last rank's object is destroyed.
struct HeapBlock {
  explicit HeapBlock(int64_t bytes)
      : data(static_cast<std::byte*>(std::aligned_alloc(kAlign, static_cast<size_t>(bytes)))) {}
  ~HeapBlock() { std::free(data); }
  std::byte* data;
};

class HeapSymmetricMemory final : public SymmetricMemory {
 public:
  HeapSymmetricMemory(int rank, int64_t segment_bytes) : SymmetricMemory(rank, segment_bytes) {}
  const char* backend() const override { return "process heap"; }

  Status Init(Communicator& comm) {
    const int64_t stride = RoundUp(segment_bytes_);
    // Rank 0 allocates; the others copy its shared_ptr (same address space) before the
    // barrier, after which rank 0 may drop its local handle.
    std::shared_ptr<HeapBlock> mine;
    int64_t address = 0;
    if (comm.rank() == 0) {
      mine = std::make_shared<HeapBlock>(stride * comm.size());
      if (mine->data == nullptr)
        address = -1;
      else {
        std::memset(mine->data, 0, static_cast<size_t>(stride * comm.size()));
        address = reinterpret_cast<int64_t>(&mine);
      }
    }
    RETURN_IF_ERROR(comm.Broadcast(std::span<int64_t>(&address, 1), 0));
    if (address == -1) {
      return core::Internal("symmetric memory: cannot allocate " +
                            std::to_string(stride * comm.size()) + " bytes");
    }
    if (comm.rank() != 0) mine = *reinterpret_cast<std::shared_ptr<HeapBlock>*>(address);
    RETURN_IF_ERROR(comm.Barrier());
    block_ = std::move(mine);
    segments_.resize(comm.size());
    for (int r = 0; r < comm.size(); ++r) segments_[r] = block_->data + stride * r;
    return Status::Ok();
  }

 private:
  std::shared_ptr<HeapBlock> block_;
};

}  // namespace

SymmetricMemory::~SymmetricMemory() = default;

StatusOr<std::unique_ptr<SymmetricMemory>> SymmetricMemory::Create(Communicator& comm,
                                                                   int64_t segment_bytes) {
  if (segment_bytes < 1 || segment_bytes > kMaxSegmentBytes) {
    return core::InvalidArgument("symmetric memory: segment of " + std::to_string(segment_bytes) +
                                 " bytes, must be in [1, " + std::to_string(kMaxSegmentBytes) +
                                 "]");
  }
  if (auto* mpi = dynamic_cast<MpiCommunicator*>(&comm)) {
    auto mem = std::make_unique<MpiSymmetricMemory>(comm.rank(), segment_bytes);
    RETURN_IF_ERROR(mem->Init(mpi->handle()));
    return std::unique_ptr<SymmetricMemory>(std::move(mem));
  }
  if (comm.ranks_share_address_space()) {
    auto mem = std::make_unique<HeapSymmetricMemory>(comm.rank(), segment_bytes);
    RETURN_IF_ERROR(mem->Init(comm));
    return std::unique_ptr<SymmetricMemory>(std::move(mem));
  }
  return core::FailedPrecondition(
      "symmetric memory: this communicator backend has neither MPI shared windows nor a shared "
      "address space");
}

}  // namespace tessera::comm
