// Test-only helpers for the xema pipeline tests (not part of tessera_xema_pipeline): SpecOf
// gives a request's preset; the allocator observer, output comparison and GEMM-backend helpers
// of models/device_test_util.h, under xema::testing.
// Thread-safety: as the allocator (one thread).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/check.h"
#include "kernels/gemm.h"
#include "models/device_test_util.h"
#include "xema/pipeline/tiny_pipeline.h"

namespace tessera::xema::testing {

using models::testing::BackendGuard;
using models::testing::ForEachGemmBackend;
using models::testing::MaxAbsDiff;
using models::testing::OpPeakObserver;

// The preset the request names (a test bug if there is none).
inline TinyModelSpec SpecOf(const DiffusionRequest& r) {
  auto spec = TinyModel(r.model);
  CHECK(spec.ok()) << spec.status().ToString();
  return *spec;
}

}  // namespace tessera::xema::testing
