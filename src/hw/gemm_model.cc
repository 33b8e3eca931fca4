#include "hw/gemm_model.h"

#include <algorithm>

namespace tessera::hw {

double RooflineGemmSeconds(const Device& d, int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  const double achieved = d.PeakFlops(Dtype::kBF16) * d.compute_efficiency;
  if (!(achieved > 0)) return 0;
  const double bytes =
      2.0 * (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n);
  return std::max(2.0 * static_cast<double>(m) * n * k / achieved, bytes / d.mem_bw_bytes_per_s);
}

double ModeledGemmSeconds(const Device& d, int64_t m, int64_t n, int64_t k) {
  if (d.sm_count <= 0) return RooflineGemmSeconds(d, m, n, k);
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  const double achieved = d.PeakFlops(Dtype::kBF16) * d.compute_efficiency;
  if (!(achieved > 0)) return 0;
  const int64_t tiles = ((m + kGemmTile - 1) / kGemmTile) * ((n + kGemmTile - 1) / kGemmTile);
  const int64_t waves = (tiles + d.sm_count - 1) / d.sm_count;
  const double tile_s =
      2.0 * kGemmTile * kGemmTile * static_cast<double>(k) / (achieved / d.sm_count);
  const double bytes =
      2.0 * (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n);
  return std::max(static_cast<double>(waves) * tile_s, bytes / d.mem_bw_bytes_per_s);
}

}  // namespace tessera::hw
