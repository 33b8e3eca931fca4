// ValidateServerOptions (server.h): the checks a DiffusionServer's options pass before it
// starts, each failure naming the option.
#include <fmt/format.h>

#include "serve/http_options.h"
#include "xema/pipeline/template_check.h"
#include "xema/serve/server.h"

namespace tessera::xema {

core::Status ValidateServerOptions(const ServerOptions& o) {
  if (o.budget_bytes <= 0) {
    return core::InvalidArgument(fmt::format("budget: got {}, must be > 0 bytes", o.budget_bytes));
  }
  if (o.devices < 1 || o.devices > kMaxServeDevices) {
    return core::InvalidArgument(
        fmt::format("devices: got {}, must be in [1, {}]", o.devices, kMaxServeDevices));
  }
  if (o.queue_capacity < 1 || o.queue_capacity > kMaxServeQueue) {
    return core::InvalidArgument(
        fmt::format("queue: got {}, must be in [1, {}]", o.queue_capacity, kMaxServeQueue));
  }
  if (o.port < 0 || o.port > 65535) {
    return core::InvalidArgument(fmt::format("port: got {}, must be in [0, 65535]", o.port));
  }
  if (o.max_requests < 0) {
    return core::InvalidArgument(fmt::format("max-requests: got {}, must be >= 0", o.max_requests));
  }
  if (!(o.duration_s >= 0) || o.duration_s > 1e7) {
    return core::InvalidArgument(
        fmt::format("duration-s: got {}, must be in [0, 1e7] seconds", o.duration_s));
  }
  // Runs allocate real memory: the devices together may use at most 80% of what the host has.
  const int64_t host = HostMemoryBudgetBytes();
  if (host > 0 && o.budget_bytes > host / o.devices) {
    return core::InvalidArgument(fmt::format(
        "budget: got {} bytes per device x {} devices, more than the {} bytes (80% of the "
        "memory available) this host can give them",
        o.budget_bytes, o.devices, host));
  }
  if (!(o.host_gbps > 0) || o.host_gbps > 1e6) {
    return core::InvalidArgument(
        fmt::format("host-gbps: got {}, must be in (0, 1e6] GB/s", o.host_gbps));
  }
  if (!(o.time_scale >= 0) || o.time_scale > 1e7) {
    return core::InvalidArgument(
        fmt::format("time-scale: got {}, must be in [0, 1e7] (0: measured)", o.time_scale));
  }
  if (o.serving_plan != nullptr && !o.plans.empty()) {
    return core::InvalidArgument(
        "plan: a serving plan table and mitigation plans cannot be given together");
  }
  if (o.serving_plan != nullptr && !o.warm_up.empty()) {
    return core::InvalidArgument(
        "warm_up: a serving plan plans its own templates before serving; give no warm-up list");
  }
  if (!o.plans.empty() && !UsesPlannedMitigations(o.policy)) {
    return core::InvalidArgument(
        fmt::format("plan: the policy {} does not use mitigation plans (caching and xema do)",
                    MemoryPolicyName(o.policy)));
  }
  if (o.max_body_bytes < 1024 || o.http_threads < 1 || o.http_threads > 1024) {
    return core::InvalidArgument(
        "server: max_body_bytes must be >= 1024, http_threads in [1, 1024]");
  }
  return serve::ValidateHttpOptions(o.http);
}

}  // namespace tessera::xema
