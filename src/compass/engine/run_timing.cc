#include "compass/engine/run_timing.h"

#include <algorithm>
#include <span>

namespace tessera::compass {

core::StatusOr<std::vector<double>> GatherRunTimesS(comm::Communicator& world,
                                                    const std::vector<double>& my_begin_ns,
                                                    const std::vector<double>& my_end_ns,
                                                    double time_scale) {
  const int n = world.size();
  const size_t total = my_begin_ns.size();
  if (my_end_ns.size() != total || time_scale <= 0) {
    return core::InvalidArgument("run times: mismatched begin/end counts or scale");
  }
  std::vector<double> begins(total * n), ends(begins.size());
  RETURN_IF_ERROR(world.AllGather(std::span<const double>(my_begin_ns), std::span<double>(begins)));
  RETURN_IF_ERROR(world.AllGather(std::span<const double>(my_end_ns), std::span<double>(ends)));
  std::vector<double> out(total);
  for (size_t i = 0; i < total; ++i) {
    double last_begin = 0, last_end = 0;
    for (int r = 0; r < n; ++r) {
      last_begin = std::max(last_begin, begins[r * total + i]);
      last_end = std::max(last_end, ends[r * total + i]);
    }
    out[i] = (last_end - last_begin) * 1e-9 / time_scale;
  }
  return out;
}

}  // namespace tessera::compass
