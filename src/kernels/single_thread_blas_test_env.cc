// Test-binary set-up for xema_pipeline_test: one BLAS thread, so the pipeline tests stay fast
// and deterministic in time on a loaded 2-core machine (OpenMP spinning over busy cores made a
// 64x64 run ~20x slower). The pipeline itself leaves the thread count to its caller.
#include <gtest/gtest.h>

#include "kernels/gemm.h"

namespace {

class SingleThreadBlas : public ::testing::Environment {
 public:
  void SetUp() override { ASSERT_TRUE(tessera::kernels::SetBlasNumThreads(1).ok()); }
};

[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new SingleThreadBlas);

}  // namespace
