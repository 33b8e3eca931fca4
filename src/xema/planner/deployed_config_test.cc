#include "xema/planner/deployed_config.h"

#include <gtest/gtest.h>

#include <cmath>

#include "xema/analytic_trace.h"
#include "xema/planner/deployed_compare.h"

// Every seconds figure here (solo_s, weight_transfer_s) is modeled arithmetic on an analytic
// trace, not a wall-clock time: the comparisons are exact and do not depend on the machine.
namespace tessera::xema {
namespace {

ModeledDevice Device(const std::string& name) { return FindModeledDevice(name).value(); }

DiffusionRequest Template(const std::string& model, size_t index) {
  return PaperMix(model).value().at(index).request;
}

// Weight bytes of the plain resident trace per phase: text, denoise, vae.
std::array<double, 3> WeightsByPhase(const DiffusionRequest& r, const ModeledDevice& d) {
  const MemoryTrace t = DeployedTrace({DeployedKind::kXditFixedSp, 1}, r, d).value();
  std::array<double, 3> w = {0, 0, 0};
  for (const TraceTensor& x : t.tensors)
    if (x.kind == TensorKind::kWeight)
      w[static_cast<size_t>(x.phase)] += static_cast<double>(x.bytes);
  return w;
}

TEST(DeployedConfig, ParsesNamesAndDegreesAndRefusesBadOnes) {
  EXPECT_EQ(DeployedConfigName(ParseDeployedConfig("xdit-fixed-sp", 8).value()), "xdit-fixed-sp:8");
  EXPECT_EQ(ParseDeployedConfig("xdit-fixed-sp:2", 8).value().degree, 2);
  EXPECT_EQ(ParseDeployedConfig("fsdp-sharded-weights", 4).value().degree, 4);
  EXPECT_EQ(ParseDeployedConfig("diffusers-model-offload", 8).value().degree, 1);
  const core::Status bad = ParseDeployedConfig("xdit-fixed-sp:3", 8).status();
  EXPECT_EQ(bad.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("xdit-fixed-sp:3"), std::string::npos) << bad.message();
  EXPECT_NE(bad.message().find("divide the 8 devices"), std::string::npos) << bad.message();
  const core::Status unknown = ParseDeployedConfig("diffusers-offload", 1).status();
  EXPECT_NE(unknown.message().find("got 'diffusers-offload'"), std::string::npos);
  EXPECT_NE(unknown.message().find("vae-slicing-tiling"), std::string::npos) << unknown.message();
  EXPECT_FALSE(ParseDeployedConfig("vae-slicing-tiling:2", 2).ok());
  EXPECT_FALSE(ParseDeployedConfig("xdit-fixed-sp:x", 2).ok());
  EXPECT_EQ(AllDeployedConfigs(1).size(), 4u);  // no FSDP on one GPU
  EXPECT_EQ(AllDeployedConfigs(8).size(), 5u);
}

TEST(DeployedConfig, EveryConfigurationTraceValidatesOnEveryModelAndDevice) {
  for (const char* model : {"flux2-dev", "cogvideox-5b", "ltx-2"}) {
    for (const std::string& dev : ModeledDeviceNames()) {
      for (const DeployedConfig& c : AllDeployedConfigs(8)) {
        for (size_t i = 0; i < 3; ++i) {
          auto d = ModelDeployedTemplate(c, Template(model, i), Device(dev));
          ASSERT_TRUE(d.ok()) << model << " " << dev << " " << DeployedConfigName(c) << ": "
                              << d.status().message();
          EXPECT_GE(d->device_bytes, d->live_peak_bytes);  // the allocator holds what is live
          EXPECT_EQ(d->fits, d->device_bytes <= Device(dev).memory_bytes);
          EXPECT_GT(d->solo_s, 0);
        }
      }
    }
  }
}

TEST(DeployedConfig, ModelOffloadMovesEachComponentInAndOutOncePerRequest) {
  const ModeledDevice h100 = Device("h100-80g");
  const DiffusionRequest r = Template("cogvideox-5b", 1);
  const auto w = WeightsByPhase(r, h100);
  const DeployedTemplate resident =
      ModelDeployedTemplate({DeployedKind::kXditFixedSp, 1}, r, h100).value();
  const DeployedTemplate off =
      ModelDeployedTemplate({DeployedKind::kModelOffload, 1}, r, h100).value();
  EXPECT_NEAR(off.weight_transfer_s, 2 * (w[0] + w[1] + w[2]) / h100.host_bytes_per_s, 1e-9);
  EXPECT_NEAR(off.solo_s - resident.solo_s, off.weight_transfer_s, 1e-9);
  // One component on the device at a time: more than the transformer, less than all three.
  EXPECT_GT(off.live_peak_bytes, static_cast<int64_t>(w[1]));
  EXPECT_LT(off.live_peak_bytes, resident.live_peak_bytes);
  EXPECT_LT(off.device_bytes, resident.device_bytes);
  // Pageable copies at a quarter of the link: four times the transfer, the same bytes.
  const DeployedTemplate slow =
      ModelDeployedTemplate({DeployedKind::kModelOffload, 1, h100.host_bytes_per_s / 4}, r, h100)
          .value();
  EXPECT_NEAR(slow.weight_transfer_s, 4 * off.weight_transfer_s, 1e-9);
  EXPECT_EQ(slow.device_bytes, off.device_bytes);
}

TEST(DeployedConfig, SequentialOffloadStreamsTheTransformerEveryStep) {
  const ModeledDevice l40s = Device("l40s-48g");
  const DiffusionRequest r = Template("flux2-dev", 0);
  const auto w = WeightsByPhase(r, l40s);
  const DeployedTemplate seq =
      ModelDeployedTemplate({DeployedKind::kSequentialOffload, 1}, r, l40s).value();
  const double expected =
      (w[0] + static_cast<double>(r.steps) * w[1] + w[2]) / l40s.host_bytes_per_s;
  EXPECT_NEAR(seq.weight_transfer_s, expected, 1e-6 * expected);
  EXPECT_TRUE(seq.fits);  // Flux.2's 112 GB of weights run on 48 GB, a block at a time
  const DeployedTemplate model =
      ModelDeployedTemplate({DeployedKind::kModelOffload, 1}, r, l40s).value();
  EXPECT_FALSE(model.fits);  // its 64 GB transformer does not
  EXPECT_LT(seq.device_bytes, model.device_bytes);
}

TEST(DeployedConfig, VaeTilingTakesTilesOfAtMost512PixelsAndLowersTheDecodePeak) {
  const ModeledDevice h100 = Device("h100-80g");
  const DiffusionRequest big = Template("cogvideox-5b", 2);  // 1360x768: 3 x 3 tiles
  const MemoryTrace tiled = DeployedTrace({DeployedKind::kVaeSlicingTiling, 1}, big, h100).value();
  const MemoryTrace plain = DeployedTrace({DeployedKind::kXditFixedSp, 1}, big, h100).value();
  ASSERT_EQ(tiled.epilogue.size(), plain.epilogue.size());
  EXPECT_NEAR(tiled.epilogue[0].flops / plain.epilogue[0].flops, 1.5625, 1e-9);  // overlap
  DiffusionRequest three = big;
  three.vae_tiles = 3;
  EXPECT_EQ(RequestSeconds(AnalyticTrace(ToAnalyticRequest(three, 1, h100)).value()),
            RequestSeconds(tiled));
  EXPECT_LT(ModelDeployedTemplate({DeployedKind::kVaeSlicingTiling, 1}, big, h100)->live_peak_bytes,
            ModelDeployedTemplate({DeployedKind::kXditFixedSp, 1}, big, h100)->live_peak_bytes);
  const DeployedTemplate small =
      ModelDeployedTemplate({DeployedKind::kVaeSlicingTiling, 1}, Template("flux2-dev", 0), h100)
          .value();
  EXPECT_EQ(small.weight_transfer_s, 0);
}

TEST(DeployedConfig, FsdpHoldsAShardOfEveryWeightAndGathersBehindCompute) {
  const ModeledDevice h100 = Device("h100-80g");
  const DiffusionRequest r = Template("ltx-2", 1);
  const auto w = WeightsByPhase(r, h100);
  const MemoryTrace t = DeployedTrace({DeployedKind::kFsdpShardedWeights, 8}, r, h100).value();
  double resident = 0;
  for (const TraceTensor& x : t.tensors)
    if (x.kind == TensorKind::kWeight) resident += static_cast<double>(x.bytes);
  EXPECT_NEAR(resident, (w[0] + w[1] + w[2]) / 8, 1e-3 * resident);
  const DeployedTemplate fsdp =
      ModelDeployedTemplate({DeployedKind::kFsdpShardedWeights, 8}, r, h100).value();
  const DeployedTemplate xdit =
      ModelDeployedTemplate({DeployedKind::kXditFixedSp, 8}, r, h100).value();
  EXPECT_EQ(fsdp.sp_degree, 8);
  EXPECT_GE(fsdp.solo_s, xdit.solo_s);  // a gather never makes an op faster
  EXPECT_NEAR(fsdp.solo_s - xdit.solo_s, fsdp.weight_transfer_s, 1e-9);
  EXPECT_LT(fsdp.device_bytes, xdit.device_bytes);
  // On a PCIe card the gathers are slower than the blocks' compute: they show.
  const DeployedTemplate pcie =
      ModelDeployedTemplate({DeployedKind::kFsdpShardedWeights, 8}, r, Device("rtx4090-24g"))
          .value();
  EXPECT_GT(pcie.weight_transfer_s, 0);
}

}  // namespace
}  // namespace tessera::xema
