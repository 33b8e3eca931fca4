// Run times of collective operations measured on every rank (collective_bench.h,
// overlap_bench.h): each rank records, per run, its begin and end in nanoseconds after the
// run's agreed start instant; a run takes from the LAST rank's begin to the last rank's end
// (the ranks' wake-ups from the common start differ by tens of microseconds, and no rank can
// finish before all began), divided by the time scale into device seconds.
// Collective over `world` (every rank passes the same number of runs).
#pragma once

#include <vector>

#include "comm/communicator.h"
#include "core/status.h"

namespace tessera::compass {

// Device seconds of each run: my_begin_ns and my_end_ns hold this rank's runs.
core::StatusOr<std::vector<double>> GatherRunTimesS(comm::Communicator& world,
                                                    const std::vector<double>& my_begin_ns,
                                                    const std::vector<double>& my_end_ns,
                                                    double time_scale);

}  // namespace tessera::compass
