// DeviceAllocator: the one door through which a system's run gets device memory, so that the
// same run can be accounted, recorded, replayed from a static layout inside an arena of exactly
// the planned size, or run under a replay of PyTorch's caching allocator, and every byte is
// accounted for. Implementations: HeapDeviceAllocator (plain, below; the reference), Xema's
// recording observer and layout / caching replays (xema/pipeline), and the pages of a
// PagedPool (paged_pool.h) for KV caches and snapshot slots.
//
// Ops. A run brackets its work in ops: BeginOp(info) ... EndOp(flops, bytes). Tensors
// allocated while an op is open belong to that op; a tensor freed while an op is open is
// released when that op ENDS (stream-ordered, as on a GPU stream), so within an op every
// allocation happens before every free (a tensor is live from its alloc op through its free
// op, both inclusive). Allocations and frees outside any op (loading weights, tearing down,
// code that never opens ops) take effect at once. An op's OpInfo says where it sits in a run
// that repeats a body: its Section (prologue, body, epilogue), its 0-based step in the body,
// and a phase label the system defines (Xema: "text", "denoise", "vae").
//
// Accounting (the same for every implementation): each allocation counts its bytes rounded up
// to the allocator's granularity (kAlignmentBytes = 512 B by default, as a GPU caching
// allocator rounds; 4 counts exact fp32 bytes); live_bytes() is the sum over allocated, not
// yet released tensors, peak_bytes() its maximum since construction or ResetPeak(). With a
// budget (budget_bytes() > 0) an allocation that would take live bytes above the budget fails
// with Infeasible ("out of device memory: ...") and changes nothing; implementations may
// refuse earlier (the caching replay reserves more than it allocates; a layout arena has fixed
// offsets).
//
// Allocation ids: the k-th successful allocation of an allocator's life has id k (0, 1,
// ...); a layout replays by id. Memory is 64-byte aligned, contents unspecified (write before
// reading).
//
// Observers see every allocation, release and op boundary (one at a time, not owned).
//
// Lifetime: every tensor must be freed (or destroyed) before its allocator and no op may be
// open then; the destructor CHECKs it.
// Thread-safety: one thread uses an allocator and its tensors at a time. Misuse (nested ops,
// EndOp without BeginOp) is a programming error and CHECK-fails.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace tessera::runtime {

inline constexpr int64_t kAlignmentBytes = 512;               // the default accounting granularity
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;  // largest single allocation

// What a tensor holds: weights live for a whole run; activations flow between ops; workspaces
// are an op's scratch.
enum class TensorKind { kWeight, kActivation, kWorkspace };
// Where an op sits in a run that repeats a body `steps` times: before the first step, in a
// step, after the last.
enum class Section { kPrologue, kBody, kEpilogue };

const char* KindName(TensorKind kind);     // "weight", "act", "workspace"
const char* SectionName(Section section);  // "prologue", "body", "epilogue"

// `bytes` rounded up to a multiple of `granularity_bytes` (bytes in [0, kMaxTensorBytes],
// granularity >= 1).
int64_t AlignBytes(int64_t bytes, int64_t granularity_bytes = kAlignmentBytes);

struct OpInfo {
  std::string name;   // e.g. "dit.block0.attn"
  std::string phase;  // the system's label for the part of the run (Xema: text, denoise, vae)
  Section section = Section::kPrologue;
  int step = -1;  // 0-based step for body ops, -1 otherwise
};

class AllocationObserver {
 public:
  virtual ~AllocationObserver() = default;
  // `bytes` are aligned; `op` is the index of the open op in this allocator's op count, or -1
  // outside ops.
  virtual void OnAllocate(int64_t id, const std::string& name, TensorKind kind, int64_t bytes,
                          int64_t op) = 0;
  // The tensor's memory is released now (at the end of op `op`, or -1 outside ops).
  virtual void OnRelease(int64_t id, int64_t op) = 0;
  virtual void OnBeginOp(int64_t op, const OpInfo& info) = 0;
  virtual void OnEndOp(int64_t op, double flops, double bytes) = 0;
};

class DeviceAllocator;

// An owned device buffer; move-only. Destruction (or Reset) frees it through its allocator.
class DeviceTensor {
 public:
  DeviceTensor() = default;
  DeviceTensor(DeviceTensor&& other) noexcept;
  DeviceTensor& operator=(DeviceTensor&& other) noexcept;
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  ~DeviceTensor() { Reset(); }

  bool empty() const { return allocator_ == nullptr; }
  int64_t id() const { return id_; }
  int64_t bytes() const { return bytes_; }  // as requested
  void* data() const { return data_; }
  float* f32() const { return static_cast<float*>(data_); }
  int64_t f32_count() const { return bytes_ / 4; }
  std::span<float> f32_span() const { return {f32(), static_cast<size_t>(f32_count())}; }
  // Frees the buffer (released at the end of the open op, if any). No-op when empty.
  void Reset();

 private:
  friend class DeviceAllocator;
  DeviceAllocator* allocator_ = nullptr;
  int64_t id_ = -1;
  int64_t bytes_ = 0;
  void* data_ = nullptr;
};

class DeviceAllocator {
 public:
  // budget_bytes 0: unlimited; granularity_bytes >= 1 (CHECKed).
  explicit DeviceAllocator(int64_t budget_bytes = 0, int64_t granularity_bytes = kAlignmentBytes);
  virtual ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // bytes in [1, kMaxTensorBytes] (else InvalidArgument naming the tensor). Infeasible when
  // out of memory (see the file comment), the message naming the tensor, its size, live
  // bytes and the budget.
  core::StatusOr<DeviceTensor> Allocate(int64_t bytes, const std::string& name, TensorKind kind);
  // count floats (4 bytes each).
  core::StatusOr<DeviceTensor> AllocateF32(int64_t count, const std::string& name,
                                           TensorKind kind) {
    return Allocate(count * 4, name, kind);
  }

  void BeginOp(OpInfo info);
  void EndOp(double flops = 0, double bytes = 0);
  bool in_op() const { return in_op_; }
  int64_t ops() const { return ops_; }  // ops begun so far

  int64_t live_bytes() const { return live_bytes_; }
  int64_t peak_bytes() const { return peak_bytes_; }
  int64_t budget_bytes() const { return budget_bytes_; }
  int64_t granularity_bytes() const { return granularity_bytes_; }
  int64_t allocations() const { return next_id_; }
  void ResetPeak() { peak_bytes_ = live_bytes_; }

  // Not owned; must outlive its attachment. nullptr detaches.
  void set_observer(AllocationObserver* observer) { observer_ = observer; }

  virtual std::string name() const = 0;

 protected:
  // Memory for allocation `id` of `aligned` bytes (the request at the granularity), or Infeasible
  // (out of memory) / FailedPrecondition (a replay diverged). Called after the budget check.
  virtual core::StatusOr<void*> DoAllocate(int64_t id, int64_t aligned, const std::string& name,
                                           TensorKind kind) = 0;
  virtual void DoRelease(int64_t id, void* data, int64_t aligned) = 0;
  // Starts allocation ids again at `next_id` and the op count at 0, so that a replay of the
  // same run can begin again (a layout replay's Rearm). CHECKs that no op is open and
  // that every live tensor has an id below `next_id`.
  void Rewind(int64_t next_id);

 private:
  friend class DeviceTensor;
  struct Live {
    void* data = nullptr;
    int64_t aligned = 0;
  };
  void Free(int64_t id);
  void Release(int64_t id);

  int64_t budget_bytes_ = 0;
  int64_t granularity_bytes_ = kAlignmentBytes;
  int64_t live_bytes_ = 0;
  int64_t peak_bytes_ = 0;
  int64_t next_id_ = 0;
  int64_t ops_ = 0;
  bool in_op_ = false;
  std::unordered_map<int64_t, Live> live_;  // by id, until released
  std::vector<int64_t> pending_;            // freed inside the open op, released at its end
  AllocationObserver* observer_ = nullptr;
};

// A workspace of `count` >= 0 floats from `allocator` (kind workspace), or an empty tensor when
// count is 0: staging whose size depends on the data (a member without rows sends nothing).
core::StatusOr<DeviceTensor> AllocateWorkspaceF32(DeviceAllocator& allocator, int64_t count,
                                                  const std::string& name);

// Plain: one heap block per tensor (64-byte aligned), the budget checked on live bytes. The
// reference the other allocators are compared against.
class HeapDeviceAllocator final : public DeviceAllocator {
 public:
  explicit HeapDeviceAllocator(int64_t budget_bytes = 0,
                               int64_t granularity_bytes = kAlignmentBytes)
      : DeviceAllocator(budget_bytes, granularity_bytes) {}
  std::string name() const override { return "plain"; }

 protected:
  core::StatusOr<void*> DoAllocate(int64_t id, int64_t aligned, const std::string& name,
                                   TensorKind kind) override;
  void DoRelease(int64_t id, void* data, int64_t aligned) override;
};

}  // namespace tessera::runtime
