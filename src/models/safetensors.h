// Safetensors files: the weight format of Hugging Face model directories, read into named fp32
// tensors and written from them.
//
// File layout: an 8-byte little-endian unsigned header length N, then N bytes of JSON
//   {"<tensor name>": {"dtype": "F32"|"BF16"|"F16"|..., "shape": [d0, d1, ...],
//                      "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}?}
// (the header may be padded with trailing spaces), then the raw data: tensor t occupies bytes
// [begin, end) of the data section (offsets relative to its start), little-endian, row-major.
//
// Reading converts F32, BF16 and F16 to fp32 exactly (every BF16/F16 value is an fp32 value).
// Any other dtype (F64, I64, U8, F8_E4M3, ...) is InvalidArgument naming the file, the tensor and
// the dtype. A malformed file is InvalidArgument naming the file and, where there is one, the
// tensor: shorter than its header says (truncated), header not JSON or not an object, a field
// missing or of the wrong type, data_offsets reversed or past the end of the file, a byte size
// that does not match dtype x shape, two tensors whose bytes overlap.
// Writing converts fp32 to the chosen dtype with round-to-nearest-even (NaN stays NaN, values
// beyond the F16 range become +-inf), lays tensors out in name order, pads the header to a
// multiple of 8 bytes, and writes through core::WriteFileAtomically.
//
// Memory: ReadSafetensors reads the header, then each tensor's bytes one at a time, so it holds
// the fp32 result plus one tensor's raw bytes (not the whole file twice).
// Thread-safety: free functions, reentrant.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera::models {

enum class TensorDtype { kF32, kBF16, kF16 };

// "F32", "BF16", "F16" (the safetensors spelling).
const char* TensorDtypeName(TensorDtype dtype);
// Bytes per element: 4, 2, 2.
int64_t TensorDtypeBytes(TensorDtype dtype);
// Parses "f32"/"F32"/"fp32"/"float32", "bf16"/"BF16"/"bfloat16", "f16"/"F16"/"fp16"/"float16";
// anything else is InvalidArgument naming `field` and the value.
core::StatusOr<TensorDtype> ParseTensorDtype(std::string_view text, const std::string& field);

// A dense fp32 tensor: data.size() == product(shape) (1 for a scalar, shape []).
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// Name -> tensor, ordered by name.
using TensorMap = std::map<std::string, Tensor>;

// Exact conversions between fp32 and the 16-bit formats (round-to-nearest-even to 16 bits).
float Bf16ToFloat(uint16_t bits);
uint16_t FloatToBf16(float value);
float F16ToFloat(uint16_t bits);
uint16_t FloatToF16(float value);

// Parses a whole file held in memory; `source` names it in messages.
core::StatusOr<TensorMap> ParseSafetensors(std::string_view bytes, const std::string& source);

// Reads the file at `path` (NotFound when it does not exist).
core::StatusOr<TensorMap> ReadSafetensors(const std::string& path);

// The bytes of a safetensors file holding `tensors` in `dtype`. InvalidArgument when a tensor's
// data size does not match its shape (naming the tensor) or a name is empty or "__metadata__".
core::StatusOr<std::string> EncodeSafetensors(const TensorMap& tensors, TensorDtype dtype);

// EncodeSafetensors, then core::WriteFileAtomically(path, ...).
[[nodiscard]] core::Status WriteSafetensors(const std::string& path, const TensorMap& tensors,
                                            TensorDtype dtype);

}  // namespace tessera::models
