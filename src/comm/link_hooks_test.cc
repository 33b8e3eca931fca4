// comm::BlockHooks: a fused operator's view of LinkCollectives. AllGather's `ready` must
// announce every element of every block exactly once, each after it arrived; ReduceScatter's
// `produce` must be asked for every element of every block exactly once, before it is read
// (the send buffer starts as NaN and only produce fills it), for every algorithm, ring order
// and granule.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "comm/copy_engine.h"
#include "comm/in_process_communicator.h"
#include "comm/link_collectives.h"
#include "comm/link_fabric.h"
#include "core/rng.h"

namespace tessera::comm {
namespace {

float HookValue(int rank, int64_t i) {
  return static_cast<float>((rank * 7919 + i * 104729) % 1000) / 64.0f - 7.0f;
}

Status CheckHooks(Communicator& comm, LinkAlgo algo, const std::vector<int>& order, int64_t c,
                  int64_t granule) {
  const int n = comm.size(), me = comm.rank();
  PacedLinks links = FullMeshLinks(n, 400e6, 20'000);
  links.packet_bytes = 512;
  ASSIGN_OR_RETURN(std::unique_ptr<LinkFabric> fabric, LinkFabric::Create(comm, links));
  CopyEngine engine(fabric.get(), me);
  LinkCollectivesOptions o;
  o.endpoint_of_rank.resize(n);
  std::iota(o.endpoint_of_rank.begin(), o.endpoint_of_rank.end(), 0);
  o.order = order;
  o.window_bytes = 1 << 20;
  ASSIGN_OR_RETURN(std::unique_ptr<LinkCollectives> lc,
                   LinkCollectives::Create(comm, &engine, std::move(o)));
  // AllGather: each announced range is complete in recv when announced, and no element is
  // announced twice or missed.
  std::vector<float> send(c), recv(n * c, NAN);
  for (int64_t i = 0; i < c; ++i) send[i] = HookValue(me, i);
  std::vector<int> seen(n * c, 0);
  BlockHooks hooks;
  hooks.granule = granule;
  hooks.ready = [&](int block, int64_t lo, int64_t hi) -> Status {
    if (lo % granule != 0 || hi % granule != 0) {
      return core::Internal("ready range not on a granule boundary");
    }
    for (int64_t i = lo; i < hi; ++i) {
      if (recv[block * c + i] != HookValue(block, i)) {
        return core::Internal("ready before element " + std::to_string(i) + " of block " +
                              std::to_string(block) + " arrived");
      }
      ++seen[block * c + i];
    }
    return Status::Ok();
  };
  RETURN_IF_ERROR(lc->AllGather(ConstBuffer{send.data(), c, DType::kF32},
                                MutableBuffer{recv.data(), n * c, DType::kF32}, algo, &hooks));
  for (size_t i = 0; i < seen.size(); ++i) {
    if (seen[i] != 1) {
      return core::Internal("AllGather element " + std::to_string(i) + " announced " +
                            std::to_string(seen[i]) + " times");
    }
  }
  // ReduceScatter: the contributions exist only once produced.
  std::vector<float> contrib(n * c, NAN), mine(c);
  std::vector<int> produced(n * c, 0);
  BlockHooks rs;
  rs.granule = granule;
  rs.produce = [&](int block, int64_t lo, int64_t hi) -> Status {
    for (int64_t i = lo; i < hi; ++i) {
      contrib[block * c + i] = HookValue(me, block * c + i);
      ++produced[block * c + i];
    }
    return Status::Ok();
  };
  RETURN_IF_ERROR(lc->ReduceScatter(ConstBuffer{contrib.data(), n * c, DType::kF32},
                                    MutableBuffer{mine.data(), c, DType::kF32}, algo, &rs));
  for (size_t i = 0; i < produced.size(); ++i) {
    if (produced[i] != 1) {
      return core::Internal("ReduceScatter element " + std::to_string(i) + " produced " +
                            std::to_string(produced[i]) + " times");
    }
  }
  for (int64_t i = 0; i < c; ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) want += HookValue(r, me * c + i);
    if (mine[i] != static_cast<float>(want)) {
      return core::Internal("ReduceScatter element " + std::to_string(i) + ": got " +
                            std::to_string(mine[i]) + ", want " + std::to_string(want));
    }
  }
  return Status::Ok();
}

TEST(BlockHooks, AnnounceAndProduceEveryElementOnceInTime) {
  for (int n : {1, 2, 3, 4}) {
    for (LinkAlgo algo : {LinkAlgo::kRing1, LinkAlgo::kRing2, LinkAlgo::kDirect}) {
      core::Rng rng(300 + n);
      std::vector<int> order(n);
      std::iota(order.begin(), order.end(), 0);
      for (int i = n - 1; i > 0; --i) std::swap(order[i], order[rng.Below(i + 1)]);
      const int64_t granule = 1 + static_cast<int64_t>(rng.Below(16));
      const int64_t c = granule * static_cast<int64_t>(1 + rng.Below(40));
      std::vector<Status> results(n, Status::Ok());
      RunInProcessRanks(n, [&](Communicator& comm) {
        comm.set_op_timeout_s(5);
        results[comm.rank()] = CheckHooks(comm, algo, order, c, granule);
      });
      for (int r = 0; r < n; ++r) {
        EXPECT_TRUE(results[r].ok()) << "n=" << n << " " << LinkAlgoName(algo) << " rank " << r
                                     << ": " << results[r].ToString();
      }
    }
  }
}

}  // namespace
}  // namespace tessera::comm
