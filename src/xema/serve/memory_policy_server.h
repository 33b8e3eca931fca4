// MemoryPolicyServer: the DiffusionServer (server.h) of one memory policy (memory_policy.h)
// over D devices: each device is a ServeDevice (serve_device.h: one request at a time, its
// budget, its allocator or weight pool and arena region) driven by one worker thread with one
// BLAS thread; the serving core's OneJobPerDevice admission starts the queue's head on the idle
// device of lowest index. The devices share one TemplateCache: the mitigation plans of
// options.plans are loaded into it and the templates of options.warm_up planned into it in
// Start, before the listener opens; any other template is planned by its first request (the
// lazy path, server.h). /v1/metrics: per device live / peak / peak reserved bytes, requests,
// weight loads and region maps; "templates_planned" counts the layouts planned.
// Errors: Start returns the errors of ServeDevice::Prepare for a warm-up template that cannot
// be planned (InvalidArgument for a bad template; an Infeasible one is kept refused: its
// requests are answered 507), and HostLinkTimeScale's for host-tier policies.
// Thread-safety: as DiffusionServer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "xema/serve/server.h"

namespace tessera::xema {

class MemoryPolicyServer final : public DiffusionServer {
 public:
  // `options` must pass ValidateServerOptions and have no serving plan.
  static core::StatusOr<std::unique_ptr<MemoryPolicyServer>> Start(const ServerOptions& options);
  ~MemoryPolicyServer() override;

 protected:
  std::string PolicyName() const override;
  MemoryPolicy StrongestPolicy() const override { return options_.policy; }
  void AddMetrics(core::Json& metrics) const override;

 private:
  explicit MemoryPolicyServer(const ServerOptions& options) : DiffusionServer(options) {}

  TemplateCache templates_;  // before the devices, which point to it
  std::vector<std::unique_ptr<ServeDevice>> devices_;
};

}  // namespace tessera::xema
