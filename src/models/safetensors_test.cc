#include "models/safetensors.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>

#include "core/output_file.h"
#include "core/rng.h"
#include "models/models_test_util.h"

namespace tessera::models {
namespace {

TensorMap RandomTensors(uint64_t seed) {
  core::Rng rng(seed);
  TensorMap m;
  m["a.weight"] = {{3, 5}, testing::RandomNormal(rng, 15)};
  m["b.bias"] = {{7}, testing::RandomNormal(rng, 7)};
  m["scalar"] = {{}, {1.5f}};
  m["empty"] = {{0, 4}, {}};
  return m;
}

// A file with one tensor and a hand-written header.
std::string FileWithHeader(const std::string& header, size_t data_bytes) {
  std::string out;
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += header;
  out.append(data_bytes, '\0');
  return out;
}

void ExpectInvalid(const std::string& bytes, const std::string& needle) {
  auto r = ParseSafetensors(bytes, "w.safetensors");
  ASSERT_FALSE(r.ok()) << needle;
  EXPECT_EQ(r.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("w.safetensors"), std::string::npos) << r.status().message();
}

TEST(Safetensors, RoundTripF32IsExact) {
  const TensorMap m = RandomTensors(1);
  auto bytes = EncodeSafetensors(m, TensorDtype::kF32);
  ASSERT_TRUE(bytes.ok());
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes->data(), 8);  // little-endian host
  EXPECT_EQ(header_len % 8, 0u);               // the data section starts 8-byte aligned
  auto back = ParseSafetensors(*bytes, "mem");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), m.size());
  for (const auto& [name, t] : m) {
    EXPECT_EQ(back->at(name).shape, t.shape) << name;
    EXPECT_EQ(back->at(name).data, t.data) << name;
  }
}

TEST(Safetensors, RoundTripHalfDtypesThroughFile) {
  const TensorMap m = RandomTensors(2);
  const std::string dir = ::testing::TempDir() + "/safetensors_rt";
  std::filesystem::create_directories(dir);
  for (TensorDtype dtype : {TensorDtype::kBF16, TensorDtype::kF16, TensorDtype::kF32}) {
    const std::string path = dir + "/m_" + TensorDtypeName(dtype) + ".safetensors";
    ASSERT_TRUE(WriteSafetensors(path, m, dtype).ok());
    auto back = ReadSafetensors(path);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    const double tol = dtype == TensorDtype::kBF16 ? 4e-3 : dtype == TensorDtype::kF16 ? 5e-4 : 0;
    for (const auto& [name, t] : m) {
      const Tensor& got = back->at(name);
      EXPECT_EQ(got.shape, t.shape);
      ASSERT_EQ(got.data.size(), t.data.size());
      for (size_t i = 0; i < t.data.size(); ++i) {
        EXPECT_LE(std::abs(got.data[i] - t.data[i]), tol * std::abs(t.data[i]) + 1e-7)
            << name << "[" << i << "] " << TensorDtypeName(dtype);
        // Converting again is the identity: the stored value is representable.
        const float again = dtype == TensorDtype::kBF16  ? Bf16ToFloat(FloatToBf16(got.data[i]))
                            : dtype == TensorDtype::kF16 ? F16ToFloat(FloatToF16(got.data[i]))
                                                         : got.data[i];
        EXPECT_EQ(again, got.data[i]);
      }
    }
  }
}

TEST(Safetensors, Bf16KnownValues) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBf16(-2.0f), 0xc000);
  EXPECT_EQ(FloatToBf16(0.0f), 0x0000);
  EXPECT_EQ(FloatToBf16(-0.0f), 0x8000);
  EXPECT_EQ(Bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(Bf16ToFloat(0x4049), 3.140625f);
  EXPECT_EQ(FloatToBf16(3.14159265f), 0x4049);
  // Ties to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 -> 1 (even mantissa).
  EXPECT_EQ(FloatToBf16(1.0f + 0x1.0p-8f), 0x3f80);
  EXPECT_EQ(FloatToBf16(1.0f + 0x1.0p-7f + 0x1.0p-8f), 0x3f82);
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::numeric_limits<float>::quiet_NaN()))));
  // The largest finite float rounds up to infinity.
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::max()), 0x7f80);
}

TEST(Safetensors, F16KnownValues) {
  EXPECT_EQ(FloatToF16(1.0f), 0x3c00);
  EXPECT_EQ(FloatToF16(-2.0f), 0xc000);
  EXPECT_EQ(FloatToF16(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToF16(65519.0f), 0x7bff);
  EXPECT_EQ(FloatToF16(65520.0f), 0x7c00);
  EXPECT_EQ(FloatToF16(0x1.0p-14f), 0x0400);         // smallest normal
  EXPECT_EQ(FloatToF16(0x1.0p-24f), 0x0001);         // smallest subnormal
  EXPECT_EQ(FloatToF16(0x1.0p-25f), 0x0000);         // tie to even -> 0
  EXPECT_EQ(FloatToF16(0x1.8p-25f), 0x0001);         // above the tie
  EXPECT_EQ(FloatToF16(0x1.8p-24f), 0x0002);         // 1.5 ulp ties to even (2)
  EXPECT_EQ(FloatToF16(1.0f + 0x1.0p-11f), 0x3c00);  // tie to even
  EXPECT_EQ(FloatToF16(1.0f + 0x1.8p-10f), 0x3c02);  // 1.5 ulp -> 2
  EXPECT_EQ(F16ToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(F16ToFloat(0x0001), 0x1.0p-24f);
  EXPECT_EQ(F16ToFloat(0x03ff), 0x1.ff8p-15f);
  EXPECT_EQ(F16ToFloat(0x8000), -0.0f);
  EXPECT_TRUE(std::signbit(F16ToFloat(0x8000)));
  EXPECT_EQ(F16ToFloat(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(F16ToFloat(FloatToF16(std::numeric_limits<float>::quiet_NaN()))));
  // Every half value converts back to itself.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = F16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToF16(f), h) << h;
  }
}

TEST(Safetensors, ReadsMetadataAndPadding) {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})"
      "    ";
  std::string bytes = FileWithHeader(header, 0);
  const float v = 2.5f;
  bytes.append(reinterpret_cast<const char*>(&v), 4);
  auto r = ParseSafetensors(bytes, "w.safetensors");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at("x").data[0], 2.5f);
}

TEST(Safetensors, MalformedFilesAreRefused) {
  auto good = EncodeSafetensors(RandomTensors(3), TensorDtype::kF32);
  ASSERT_TRUE(good.ok());
  ExpectInvalid(good->substr(0, 5), "too short");
  ExpectInvalid(good->substr(0, 20), "header length");
  ExpectInvalid(good->substr(0, good->size() - 4), "past the end");
  ExpectInvalid(FileWithHeader("{not json", 0), "header");
  ExpectInvalid(FileWithHeader("[1, 2]", 0), "must be a JSON object");
  ExpectInvalid(FileWithHeader(R"({"x":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8),
                "tensor 'x': dtype: got 'F64'");
  ExpectInvalid(FileWithHeader(R"({"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", 8),
                "'I64'");
  ExpectInvalid(FileWithHeader(R"({"x":{"shape":[1],"data_offsets":[0,4]}})", 4),
                "tensor 'x': dtype");
  ExpectInvalid(FileWithHeader(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
                "tensor 'x': shape");
  ExpectInvalid(FileWithHeader(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 8),
                "must span 8 bytes");
  ExpectInvalid(FileWithHeader(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 8),
                "end before begin");
  ExpectInvalid(FileWithHeader(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 8),
                "tensor 'x': data_offsets: got [8, 12], past the end");
  ExpectInvalid(FileWithHeader(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 8),
                "data_offsets");
  ExpectInvalid(FileWithHeader(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                               R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                               12),
                "tensor 'b': data_offsets [4, 12] overlap tensor 'a'");
  ExpectInvalid(FileWithHeader(R"({"__metadata__":3})", 0), "__metadata__");
  // A huge header length is refused before anything is allocated.
  std::string huge(16, '\0');
  huge[5] = 1;  // 2^40
  ExpectInvalid(huge, "header length");
}

TEST(Safetensors, FileErrorsNameThePath) {
  auto missing = ReadSafetensors(::testing::TempDir() + "/no_such.safetensors");
  EXPECT_EQ(missing.status().code(), core::StatusCode::kNotFound);
  const std::string path = ::testing::TempDir() + "/truncated.safetensors";
  auto good = EncodeSafetensors(RandomTensors(4), TensorDtype::kBF16);
  ASSERT_TRUE(good.ok());
  ASSERT_TRUE(core::WriteFileAtomically(path, good->substr(0, good->size() - 2)).ok());
  auto r = ReadSafetensors(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(path), std::string::npos);
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status().message();
}

TEST(Safetensors, EncoderChecksShapes) {
  TensorMap m;
  m["w"] = {{2, 2}, {1, 2, 3}};
  EXPECT_FALSE(EncodeSafetensors(m, TensorDtype::kF32).ok());
  EXPECT_TRUE(ParseTensorDtype("BF16", "--dtype").ok());
  auto bad = ParseTensorDtype("int8", "--dtype");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--dtype: got 'int8'"), std::string::npos);
}

}  // namespace
}  // namespace tessera::models
