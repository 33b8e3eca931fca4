#include "xema/serve/memory_policy_server.h"

#include <fmt/format.h>

#include <optional>

#include "kernels/gemm.h"
#include "serve/admission.h"

namespace tessera::xema {

core::StatusOr<std::unique_ptr<MemoryPolicyServer>> MemoryPolicyServer::Start(
    const ServerOptions& options) {
  std::unique_ptr<MemoryPolicyServer> s(new MemoryPolicyServer(options));
  RETURN_IF_ERROR(s->Bind());
  for (const PlannedTemplate& p : options.plans) {
    s->templates_.InsertMitigated(p.key, std::make_shared<MitigatedTemplate>(p.plan));
  }
  std::optional<runtime::TimeScale> scale;
  if (UsesHostTier(options.policy)) {
    ASSIGN_OR_RETURN(scale, HostLinkTimeScale(options.time_scale));
  }
  for (int d = 0; d < options.devices; ++d) {
    std::unique_ptr<HostTier> tier;
    if (scale) {
      ASSIGN_OR_RETURN(tier, HostTier::ForDevice(options.host_gbps, *scale));
    }
    s->devices_.push_back(std::make_unique<ServeDevice>(d, options.policy, options.budget_bytes,
                                                        &s->templates_, std::move(tier)));
  }
  // Profiling before serving: the templates known in advance are planned now, on device 0.
  for (size_t i = 0; i < options.warm_up.size(); ++i) {
    RETURN_IF_ERROR(
        s->devices_[0]->Prepare(options.warm_up[i]).WithPrefix(fmt::format("warm_up[{}]", i)));
  }
  MemoryPolicyServer* self = s.get();
  s->core_->Start(
      std::make_unique<serve::OneJobPerDevice>(options.devices),
      [self](serve::Job& j, const serve::Placement&, int device, int) {
        auto& job = static_cast<DiffusionJob&>(j);
        ServeDevice& dev = *self->devices_[static_cast<size_t>(device)];
        self->RunPass(job, device, [&] { return dev.Execute(job.request.request); });
        return core::Status::Ok();
      },
      // A device is one core: GEMMs single-threaded (the setting is process-wide; every
      // worker asks for the same).
      [](int) { (void)kernels::SetBlasNumThreads(1); });
  return s;
}

MemoryPolicyServer::~MemoryPolicyServer() { Stop(); }  // the workers use the devices

std::string MemoryPolicyServer::PolicyName() const { return MemoryPolicyName(options_.policy); }

void MemoryPolicyServer::AddMetrics(core::Json& j) const {
  j["templates_planned"] = templates_.size();
  core::Json devices = core::Json::array();
  for (const auto& d : devices_) {
    const DeviceSnapshot s = d->Snapshot();
    devices.push_back({{"device", d->index()},
                       {"live_bytes", s.live_bytes},
                       {"peak_bytes", s.peak_bytes},
                       {"peak_reserved_bytes", s.peak_reserved_bytes},
                       {"requests", s.requests},
                       {"weight_loads", s.weight_loads},
                       {"region_maps", s.region_maps}});
  }
  j["devices"] = devices;
}

}  // namespace tessera::xema
