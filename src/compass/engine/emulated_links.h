// The link emulator's view of a topology: every resource of hw::Topology (directed links,
// capacity vertices) becomes a paced resource with bandwidth / s, every route's latency is
// multiplied by s (time_scale.h), and the endpoints are the ranks of a job placed on devices
// (device_of_rank[r]; distinct devices). comm/ stays independent of hw/.
#pragma once

#include <span>

#include "comm/paced_links.h"
#include "core/status.h"
#include "hw/topology.h"
#include "runtime/time_scale.h"

namespace tessera::compass {

// InvalidArgument for a device id out of range or used twice.
core::StatusOr<comm::PacedLinks> EmulatedLinks(const hw::Topology& topology,
                                               std::span<const int> device_of_rank,
                                               const runtime::TimeScale& scale);

}  // namespace tessera::compass
