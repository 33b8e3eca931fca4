#include "hw/gemm_model.h"

#include <algorithm>

namespace tessera::hw {

double ModeledGemmSeconds(const Device& d, int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  const double achieved = d.PeakFlops(Dtype::kBF16) * d.compute_efficiency;
  if (!(achieved > 0)) return 0;
  double compute_s = 2.0 * static_cast<double>(m) * n * k / achieved;
  if (d.sm_count > 0) {
    const int64_t tiles = ((m + kGemmTile - 1) / kGemmTile) * ((n + kGemmTile - 1) / kGemmTile);
    const int64_t waves = (tiles + d.sm_count - 1) / d.sm_count;
    const double tile_s =
        2.0 * kGemmTile * kGemmTile * static_cast<double>(k) / (achieved / d.sm_count);
    compute_s = static_cast<double>(waves) * tile_s;
  }
  const double bytes =
      2.0 * (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n);
  return std::max(compute_s, bytes / d.mem_bw_bytes_per_s);
}

}  // namespace tessera::hw
