// DiffusionPipeline::Run with sequence parallelism (tiny_pipeline.h, `sp`): d members, each
// with its own pipeline (replicated weights) and allocator, on RunInProcessRanks(d) threads; the
// image equals a run on one device, and each member's DiT passes hold about 1/d of the rows.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "comm/in_process_communicator.h"
#include "kernels/gemm.h"
#include "xema/pipeline/pipeline_test_util.h"
#include "xema/pipeline/tiny_pipeline.h"

namespace tessera::xema {
namespace {

constexpr double kPipelineOpTimeoutS = 60;

struct PipelineMember {
  core::Status status;
  std::vector<float> output;
  int64_t dit_peak_bytes = 0;  // the most live bytes during a DiT block, weights included
  int64_t weight_bytes = 0;
  bool clean = false;
  std::vector<std::string> epilogue;
};

PipelineMember RunPipelineMember(const TinyModelSpec& spec, const DiffusionRequest& r,
                                 const SpMember* sp) {
  PipelineMember m;
  runtime::HeapDeviceAllocator allocator;
  auto p = DiffusionPipeline::Load(spec, allocator);
  if (!p.ok()) {
    m.status = p.status();
    return m;
  }
  m.weight_bytes = (*p)->WeightBytes();
  const bool decodes = sp == nullptr || sp->member == 0;
  m.output.assign(decodes ? static_cast<size_t>(OutputFloats(r)) : 0, 0.0f);
  {
    testing::OpPeakObserver observer(allocator);
    m.status = (*p)->Run(r, m.output, nullptr, sp);
    m.dit_peak_bytes = observer.MaxPeak("dit.block");
    bool epi = false;
    for (const auto& op : observer.ops()) {
      if (op.name == "vae.unpatchify" || op.name == "sp.done") epi = true;
      if (epi) m.epilogue.push_back(op.name);
    }
  }
  m.clean = !allocator.in_op() && allocator.live_bytes() == (*p)->WeightBytes();
  return m;
}

std::vector<PipelineMember> RunPipelineSp(const TinyModelSpec& spec, const DiffusionRequest& r,
                                          int d) {
  std::vector<PipelineMember> out(static_cast<size_t>(d));
  comm::RunInProcessRanks(d, [&](comm::Communicator& world) {
    CHECK(kernels::SetBlasNumThreads(1).ok());
    world.set_op_timeout_s(kPipelineOpTimeoutS);
    const SpMember sp{&world, world.rank()};
    out[static_cast<size_t>(world.rank())] = RunPipelineMember(spec, r, &sp);
  });
  return out;
}

TEST(SpPipelineTest, ImageEqualsOneDeviceAndMembersHoldAShare) {
  for (const char* model : {"tiny-t2i", "tiny-t2v"}) {
    const TinyModelSpec spec = TinyModel(model).value();
    DiffusionRequest r;
    r.model = model;
    r.width = 64;
    r.height = 48;
    r.frames = spec.video ? 5 : 1;
    r.steps = 2;
    const PipelineMember one = RunPipelineMember(spec, r, nullptr);
    ASSERT_TRUE(one.status.ok()) << one.status.ToString();
    for (int d : {2, 4}) {
      const std::vector<PipelineMember> sp = RunPipelineSp(spec, r, d);
      double scale = 1;
      for (float v : one.output) scale = std::max(scale, std::abs(static_cast<double>(v)));
      for (int m = 0; m < d; ++m) {
        const PipelineMember& x = sp[static_cast<size_t>(m)];
        ASSERT_TRUE(x.status.ok())
            << model << " d=" << d << " member " << m << ": " << x.status.ToString();
        EXPECT_TRUE(x.clean) << model << " member " << m;
        // Activations of a DiT block: weights are replicated, rows split d ways (the text
        // context and the modulation are whole on every member).
        EXPECT_LT(x.dit_peak_bytes - x.weight_bytes,
                  0.75 * static_cast<double>(one.dit_peak_bytes - one.weight_bytes))
            << model << " d=" << d;
        if (m > 0) {
          EXPECT_TRUE(x.output.empty());
          EXPECT_EQ(x.epilogue, std::vector<std::string>{"sp.done"});
        }
      }
      // One BLAS thread, GEMMs over fewer rows: equal within float rounding (sp_dit.h).
      EXPECT_EQ(sp[0].output.size(), one.output.size());
      EXPECT_EQ(sp[0].epilogue.front(), "vae.unpatchify");
      EXPECT_LE(testing::MaxAbsDiff(sp[0].output, one.output), 1e-5 * scale) << model << " " << d;
    }
  }
}

TEST(SpPipelineTest, BadUseIsNamed) {
  const TinyModelSpec spec = TinyModel("tiny-t2i").value();
  DiffusionRequest r;
  r.width = r.height = 32;
  r.steps = 1;
  std::vector<PipelineMember> out(2);
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    world.set_op_timeout_s(kPipelineOpTimeoutS);
    runtime::HeapDeviceAllocator allocator;
    auto p = DiffusionPipeline::Load(spec, allocator);
    CHECK(p.ok());
    const SpMember sp{&world, world.rank()};
    // Member 1 passes an output buffer: refused before any work (and member 0, whose peer is
    // gone, gets the communicator's error instead of hanging).
    std::vector<float> output(static_cast<size_t>(OutputFloats(r)));
    out[static_cast<size_t>(world.rank())].status = (*p)->Run(r, output, nullptr, &sp);
  });
  EXPECT_NE(out[1].status.message().find("only member 0 decodes"), std::string::npos)
      << out[1].status.ToString();
  EXPECT_FALSE(out[0].status.ok());
  DiffusionRequest offload = r;
  offload.offload.latent = true;
  comm::RunInProcessRanks(2, [&](comm::Communicator& world) {
    runtime::HeapDeviceAllocator allocator;
    auto p = DiffusionPipeline::Load(spec, allocator);
    CHECK(p.ok());
    const SpMember sp{&world, world.rank()};
    std::vector<float> output(world.rank() == 0 ? static_cast<size_t>(OutputFloats(r)) : 0);
    out[static_cast<size_t>(world.rank())].status = (*p)->Run(offload, output, nullptr, &sp);
  });
  for (const PipelineMember& m : out) {
    EXPECT_NE(m.status.message().find("not with sequence parallelism"), std::string::npos)
        << m.status.ToString();
  }
}

}  // namespace
}  // namespace tessera::xema
