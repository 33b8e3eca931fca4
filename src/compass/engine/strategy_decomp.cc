// `decomp:D` (InterDecom): the operator in D parts; a second thread of the rank runs the
// parts' collectives (single ring) in order while the rank's thread runs the GEMMs, so part
// i's collective overlaps part i+1's GEMM (AllGather, wgrad: the collective runs ahead; RS:
// the GEMM runs ahead). AllGather and wgrad split each rank's token shard into D row ranges
// of q = M/(tD) rows (part i gathers rows [r M/t + i q, r M/t + (i+1) q) of every rank r);
// ReduceScatter splits the output columns into D ranges of N/D (Transformer Engine's
// split_overlap_rs), each reduce-scattered over the tokens and copied into its columns.
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "compass/engine/strategies.h"

namespace tessera::compass::internal {

namespace {

// Parts handed from one thread to the other: a count and the first error.
class Handoff {
 public:
  void Done(core::Status st) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!st.ok() && status_.ok()) status_ = std::move(st);
    ++done_;
    cv_.notify_all();
  }
  // Waits until `count` parts are done; the first error if any.
  core::Status WaitFor(int count) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_ >= count || !status_.ok(); });
    return status_;
  }
  void Fail(core::Status st) {
    std::lock_guard<std::mutex> lock(mu_);
    if (status_.ok()) status_ = std::move(st);
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int done_ = 0;
  core::Status status_ = core::Status::Ok();
};

class Decomposed final : public OverlapStrategy {
 public:
  core::Status Run(OverlapContext& ctx, const TpOpShape& s, int d, const OpBuffers& io) override {
    return s.kind == TpOpKind::kGemmReduceScatter ? RunRs(ctx, s, d, io) : RunAg(ctx, s, d, io);
  }

 private:
  static core::Status RunAg(OverlapContext& ctx, const TpOpShape& s, int d, const OpBuffers& io) {
    const int t = s.tp;
    const int64_t rows = s.shard_rows(), q = rows / d, part = t * q * s.k;
    float* gathered = ctx.Scratch(1, d * part);  // part i: (t, q, K) at i * part
    float* tmp = ctx.Scratch(2, t * q * s.n);
    Handoff arrived;
    std::thread comm_thread([&] {
      for (int i = 0; i < d; ++i) {
        core::Status st = ctx.ring1().AllGather(
            ConstBuffer{io.x + i * q * s.k, q * s.k, DType::kF32},
            MutableBuffer{gathered + i * part, part, DType::kF32}, LinkAlgo::kRing1);
        const bool ok = st.ok();
        arrived.Done(std::move(st));
        if (!ok) return;
      }
    });
    core::Status st = core::Status::Ok();
    for (int i = 0; i < d && st.ok(); ++i) {
      st = arrived.WaitFor(i + 1);
      if (!st.ok()) break;
      const float* g = gathered + i * part;
      if (s.kind == TpOpKind::kAllGatherGemm) {
        // One GEMM over the part's t x q rows, then each rank's q rows into place.
        st = ctx.Gemm(false, t * q, s.n, s.k, g, s.k, io.w, s.n, false, tmp, s.n);
        for (int r = 0; r < t && st.ok(); ++r) {
          std::memcpy(io.y + (r * rows + i * q) * s.n, tmp + r * q * s.n,
                      static_cast<size_t>(q * s.n) * sizeof(float));
        }
      } else {
        // dW += (rows of rank r in part i)^T dY (the same token rows).
        for (int r = 0; r < t && st.ok(); ++r) {
          st = ctx.Gemm(true, s.k, s.n, q, g + r * q * s.k, s.k, io.w + (r * rows + i * q) * s.n,
                        s.n, i > 0 || r > 0, io.y, s.n);
        }
      }
    }
    if (!st.ok()) arrived.Fail(st);
    comm_thread.join();
    return st.ok() ? arrived.WaitFor(d) : st;
  }

  static core::Status RunRs(OverlapContext& ctx, const TpOpShape& s, int d, const OpBuffers& io) {
    const int64_t rows = s.shard_rows(), nq = s.n / d;
    float* partial = ctx.Scratch(1, d * s.m * nq);  // part i: (M, N/D) at i * M * N/D
    float* reduced = ctx.Scratch(2, d * rows * nq);
    Handoff produced, sent;
    std::thread comm_thread([&] {
      for (int i = 0; i < d; ++i) {
        core::Status st = produced.WaitFor(i + 1);
        if (st.ok()) {
          st = ctx.ring1().ReduceScatter(
              ConstBuffer{partial + i * s.m * nq, s.m * nq, DType::kF32},
              MutableBuffer{reduced + i * rows * nq, rows * nq, DType::kF32}, LinkAlgo::kRing1);
        }
        if (st.ok()) {
          for (int64_t r = 0; r < rows; ++r) {
            std::memcpy(io.y + r * s.n + i * nq, reduced + (i * rows + r) * nq,
                        static_cast<size_t>(nq) * sizeof(float));
          }
        }
        const bool ok = st.ok();
        sent.Done(std::move(st));
        if (!ok) return;
      }
    });
    core::Status st = core::Status::Ok();
    for (int i = 0; i < d; ++i) {
      st = ctx.Gemm(false, s.m, nq, s.k, io.x, s.k, io.w + i * nq, s.n, false,
                    partial + i * s.m * nq, nq);
      if (!st.ok()) {
        produced.Fail(st);
        break;
      }
      produced.Done(core::Status::Ok());
    }
    comm_thread.join();
    return st.ok() ? sent.WaitFor(d) : st;
  }
};

}  // namespace

std::unique_ptr<OverlapStrategy> NewDecomposed() { return std::make_unique<Decomposed>(); }

}  // namespace tessera::compass::internal
