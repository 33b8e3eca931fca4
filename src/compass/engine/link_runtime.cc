#include "compass/engine/link_runtime.h"

#include <algorithm>
#include <numeric>
#include <span>

#include "compass/engine/emulated_links.h"

namespace tessera::compass {

core::StatusOr<LinkRuntime> StartLinkRuntime(comm::Communicator& world,
                                             const hw::Topology& topology,
                                             const runtime::TimeScale& scale, int64_t window_bytes,
                                             std::optional<int64_t> wake_lead_ns) {
  const int n = world.size();
  if (n < 1 || n > topology.num_devices()) {
    return core::InvalidArgument(std::to_string(n) + " ranks, " + topology.name() + " has " +
                                 std::to_string(topology.num_devices()) + " devices");
  }
  LinkRuntime rt;
  rt.devices.resize(n);
  std::iota(rt.devices.begin(), rt.devices.end(), 0);
  ASSIGN_OR_RETURN(rt.ring1, hw::BestRing(topology, rt.devices, hw::RingKind::kSingle));
  ASSIGN_OR_RETURN(rt.ring2, hw::BestRing(topology, rt.devices, hw::RingKind::kDouble));
  ASSIGN_OR_RETURN(comm::PacedLinks links, EmulatedLinks(topology, rt.devices, scale));
  ASSIGN_OR_RETURN(rt.fabric, comm::LinkFabric::Create(world, std::move(links)));
  rt.engine = std::make_unique<comm::CopyEngine>(rt.fabric.get(), world.rank());
  if (wake_lead_ns) rt.engine->set_wake_lead_ns(*wake_lead_ns);
  ASSIGN_OR_RETURN(rt.barrier, comm::SharedBarrier::Create(world));
  auto make =
      [&](const std::vector<int>& order) -> core::StatusOr<std::unique_ptr<comm::LinkCollectives>> {
    comm::LinkCollectivesOptions o;
    o.endpoint_of_rank = rt.devices;
    o.order = order;
    o.window_bytes = window_bytes;
    o.wire_element_bytes = 2;
    return comm::LinkCollectives::Create(world, rt.engine.get(), std::move(o));
  };
  ASSIGN_OR_RETURN(rt.single, make(rt.ring1.order));
  ASSIGN_OR_RETURN(rt.dual, make(rt.ring2.order));
  return rt;
}

core::StatusOr<runtime::TimeScale> AgreeTimeScale(comm::Communicator& world,
                                                  const hw::Topology& topology,
                                                  std::optional<double> fixed) {
  if (fixed) return runtime::FixedTimeScale(topology.device(), *fixed);
  ASSIGN_OR_RETURN(std::unique_ptr<comm::SharedBarrier> barrier,
                   comm::SharedBarrier::Create(world));
  double flops = 0;
  core::Status measured = core::Status::Ok();
  if (world.rank() == 0) {
    auto f = runtime::MeasureCoreGemmFlops();
    if (f.ok())
      flops = *f;
    else
      measured = f.status();
  }
  RETURN_IF_ERROR(barrier->Arrive(0, 600.0).status());
  RETURN_IF_ERROR(world.Broadcast(std::span<double>(&flops, 1), 0));
  RETURN_IF_ERROR(measured);
  return runtime::MakeTimeScale(topology.device(), flops);
}

int64_t OverlapWindowBytes(const TpOpShape& s) {
  const int64_t rows = s.shard_rows();
  return std::max(
      comm::LinkCollectives::AllGatherWindowBytes(s.tp, rows * s.k, comm::DType::kF32),
      comm::LinkCollectives::ReduceScatterWindowBytes(s.tp, rows * s.n, comm::DType::kF32));
}

core::Status ProfileGemmsOnRankZero(comm::Communicator& world, comm::SharedBarrier& barrier,
                                    const std::vector<runtime::GemmShape>& shapes, double divide,
                                    runtime::GemmProfile* out) {
  std::vector<double> times(shapes.size(), -1.0);
  core::Status profiled = core::Status::Ok();
  if (world.rank() == 0) {
    auto p = runtime::ProfileGemms(shapes);
    if (p.ok()) {
      for (size_t i = 0; i < shapes.size(); ++i) times[i] = p->at(shapes[i]) / divide;
    } else {
      profiled = p.status();
    }
  }
  RETURN_IF_ERROR(barrier.Arrive(0, 600.0).status());
  RETURN_IF_ERROR(world.Broadcast(std::span<double>(times), 0));
  RETURN_IF_ERROR(profiled);
  if (!times.empty() && times[0] < 0) return core::Internal("GEMM profiling failed on rank 0");
  for (size_t i = 0; i < shapes.size(); ++i) (*out)[shapes[i]] = times[i];
  return core::Status::Ok();
}

}  // namespace tessera::compass
