#include "models/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/json_util.h"
#include "core/output_file.h"

namespace tessera::models {
namespace {

// The largest header we accept (the format's own readers use the same bound).
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

struct Entry {
  std::string name;
  TensorDtype dtype = TensorDtype::kF32;
  std::vector<int64_t> shape;
  int64_t numel = 1;
  uint64_t begin = 0;
  uint64_t end = 0;
};

core::StatusOr<TensorDtype> DtypeFromName(const std::string& name, const std::string& source,
                                          const std::string& tensor) {
  if (name == "F32") return TensorDtype::kF32;
  if (name == "BF16") return TensorDtype::kBF16;
  if (name == "F16") return TensorDtype::kF16;
  return core::InvalidArgument(fmt::format(
      "{}: tensor '{}': dtype: got '{}', must be F32, BF16 or F16", source, tensor, name));
}

core::StatusOr<uint64_t> NonNegativeInt(const core::Json& v, const std::string& what) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0)
    return static_cast<uint64_t>(v.get<int64_t>());
  return core::InvalidArgument(
      fmt::format("{}: got {}, must be a non-negative integer", what, core::ShowJson(v)));
}

core::StatusOr<Entry> ParseEntry(const std::string& name, const core::Json& j,
                                 const std::string& source) {
  const std::string where = fmt::format("{}: tensor '{}'", source, name);
  if (!j.is_object()) {
    return core::InvalidArgument(
        fmt::format("{}: got {}, must be an object", where, core::ShowJson(j)));
  }
  Entry e;
  e.name = name;
  auto dtype_it = j.find("dtype");
  if (dtype_it == j.end() || !dtype_it->is_string()) {
    return core::InvalidArgument(fmt::format("{}: dtype: missing or not a string", where));
  }
  ASSIGN_OR_RETURN(e.dtype, DtypeFromName(dtype_it->get<std::string>(), source, name));
  auto shape_it = j.find("shape");
  if (shape_it == j.end() || !shape_it->is_array()) {
    return core::InvalidArgument(fmt::format("{}: shape: missing or not an array", where));
  }
  for (const core::Json& d : *shape_it) {
    ASSIGN_OR_RETURN(uint64_t dim, NonNegativeInt(d, where + ": shape"));
    if (dim > (uint64_t{1} << 40) ||
        __builtin_mul_overflow(e.numel, static_cast<int64_t>(dim), &e.numel) ||
        e.numel > (int64_t{1} << 40)) {
      return core::InvalidArgument(
          fmt::format("{}: shape: got {}, too many elements", where, core::ShowJson(*shape_it)));
    }
    e.shape.push_back(static_cast<int64_t>(dim));
  }
  auto off_it = j.find("data_offsets");
  if (off_it == j.end() || !off_it->is_array() || off_it->size() != 2) {
    return core::InvalidArgument(
        fmt::format("{}: data_offsets: missing or not a [begin, end] pair", where));
  }
  ASSIGN_OR_RETURN(e.begin, NonNegativeInt((*off_it)[0], where + ": data_offsets[0]"));
  ASSIGN_OR_RETURN(e.end, NonNegativeInt((*off_it)[1], where + ": data_offsets[1]"));
  if (e.end < e.begin) {
    return core::InvalidArgument(
        fmt::format("{}: data_offsets: got [{}, {}], end before begin", where, e.begin, e.end));
  }
  const uint64_t want = static_cast<uint64_t>(e.numel) * TensorDtypeBytes(e.dtype);
  if (e.end - e.begin != want) {
    return core::InvalidArgument(fmt::format(
        "{}: data_offsets: got [{}, {}] ({} bytes), must span {} bytes ({} {} elements)", where,
        e.begin, e.end, e.end - e.begin, want, e.numel, TensorDtypeName(e.dtype)));
  }
  return e;
}

// Parses and validates the header against a data section of `data_bytes` bytes.
core::StatusOr<std::vector<Entry>> ParseHeader(const std::string& text, uint64_t data_bytes,
                                               const std::string& source) {
  auto parsed = core::ParseJson(text, source + ": header");
  if (!parsed.ok()) return parsed.status();
  const core::Json& header = *parsed;
  if (!header.is_object()) {
    return core::InvalidArgument(
        fmt::format("{}: header: got {}, must be a JSON object", source, core::ShowJson(header)));
  }
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) {
        return core::InvalidArgument(fmt::format(
            "{}: __metadata__: got {}, must be an object of strings", source, core::ShowJson(*it)));
      }
      continue;
    }
    ASSIGN_OR_RETURN(Entry e, ParseEntry(it.key(), *it, source));
    if (e.end > data_bytes) {
      return core::InvalidArgument(fmt::format(
          "{}: tensor '{}': data_offsets: got [{}, {}], past the end of the {}-byte data "
          "section (file truncated?)",
          source, e.name, e.begin, e.end, data_bytes));
    }
    entries.push_back(std::move(e));
  }
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const Entry& prev = *by_offset[i - 1];
    const Entry& cur = *by_offset[i];
    if (cur.begin < prev.end) {
      return core::InvalidArgument(
          fmt::format("{}: tensor '{}': data_offsets [{}, {}] overlap tensor '{}' [{}, {}]", source,
                      cur.name, cur.begin, cur.end, prev.name, prev.begin, prev.end));
    }
  }
  return entries;
}

uint16_t LoadU16(const char* p) {
  return static_cast<uint16_t>(static_cast<uint8_t>(p[0]) | (static_cast<uint8_t>(p[1]) << 8));
}

uint32_t LoadU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

Tensor Convert(const Entry& e, const char* raw) {
  Tensor t;
  t.shape = e.shape;
  t.data.resize(e.numel);
  for (int64_t i = 0; i < e.numel; ++i) {
    switch (e.dtype) {
      case TensorDtype::kF32:
        t.data[i] = std::bit_cast<float>(LoadU32(raw + 4 * i));
        break;
      case TensorDtype::kBF16:
        t.data[i] = Bf16ToFloat(LoadU16(raw + 2 * i));
        break;
      case TensorDtype::kF16:
        t.data[i] = F16ToFloat(LoadU16(raw + 2 * i));
        break;
    }
  }
  return t;
}

// Reads `len` bytes at `offset` of the data section into `dst`.
using DataReader = std::function<core::Status(uint64_t offset, uint64_t len, char* dst)>;

// The common path of both readers: `prefix` holds at least the first 8 bytes when the file has
// them; `total_bytes` is the file size.
core::StatusOr<TensorMap> ParseWith(
    std::string_view prefix, uint64_t total_bytes,
    const std::function<core::StatusOr<std::string>(uint64_t)>& read_header,
    const DataReader& read_data, const std::string& source) {
  if (total_bytes < 8) {
    return core::InvalidArgument(
        fmt::format("{}: got {} bytes, too short for the 8-byte header length (file truncated?)",
                    source, total_bytes));
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(prefix[i]);
  if (n > kMaxHeaderBytes) {
    return core::InvalidArgument(
        fmt::format("{}: header length: got {} bytes, must be <= {} (not a safetensors file?)",
                    source, n, kMaxHeaderBytes));
  }
  if (8 + n > total_bytes) {
    return core::InvalidArgument(fmt::format(
        "{}: header length: got {} bytes, but the file holds only {} after the length (file "
        "truncated?)",
        source, n, total_bytes - 8));
  }
  ASSIGN_OR_RETURN(std::string header_text, read_header(n));
  const uint64_t data_bytes = total_bytes - 8 - n;
  ASSIGN_OR_RETURN(std::vector<Entry> entries, ParseHeader(header_text, data_bytes, source));
  TensorMap out;
  std::string raw;
  for (const Entry& e : entries) {
    raw.resize(e.end - e.begin);
    RETURN_IF_ERROR(read_data(e.begin, e.end - e.begin, raw.data()));
    out.emplace(e.name, Convert(e, raw.data()));
  }
  return out;
}

void AppendU64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

const char* TensorDtypeName(TensorDtype dtype) {
  switch (dtype) {
    case TensorDtype::kF32:
      return "F32";
    case TensorDtype::kBF16:
      return "BF16";
    case TensorDtype::kF16:
      return "F16";
  }
  return "?";
}

int64_t TensorDtypeBytes(TensorDtype dtype) { return dtype == TensorDtype::kF32 ? 4 : 2; }

core::StatusOr<TensorDtype> ParseTensorDtype(std::string_view text, const std::string& field) {
  std::string s(text);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "f32" || s == "fp32" || s == "float32") return TensorDtype::kF32;
  if (s == "bf16" || s == "bfloat16") return TensorDtype::kBF16;
  if (s == "f16" || s == "fp16" || s == "float16") return TensorDtype::kF16;
  return core::InvalidArgument(
      fmt::format("{}: got '{}', must be f32, bf16 or f16", field, core::Utf8Prefix(s, 40)));
}

float Bf16ToFloat(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t FloatToBf16(float value) {
  const uint32_t u = std::bit_cast<uint32_t>(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN
  const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

float F16ToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1fu;
  const uint32_t mant = bits & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    const float mag = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -mag : mag;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t FloatToF16(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u));
  }
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (absx < 0x38800000u) {  // below 2^-14: a subnormal half (or zero)
    if (absx <= 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25 ties to 0
    const uint32_t e = absx >> 23;
    const uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // value / 2^-24 = mant >> shift
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (((absx >> 23) - 112) << 10) | ((absx >> 13) & 0x3ffu);
  const uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

core::StatusOr<TensorMap> ParseSafetensors(std::string_view bytes, const std::string& source) {
  auto read_header = [&](uint64_t n) -> core::StatusOr<std::string> {
    return std::string(bytes.substr(8, n));
  };
  uint64_t data_start = 0;
  if (bytes.size() >= 8) {
    for (int i = 7; i >= 0; --i) data_start = (data_start << 8) | static_cast<uint8_t>(bytes[i]);
    data_start += 8;
  }
  auto read_data = [&](uint64_t offset, uint64_t len, char* dst) {
    std::memcpy(dst, bytes.data() + data_start + offset, len);
    return core::Status::Ok();
  };
  return ParseWith(bytes, bytes.size(), read_header, read_data, source);
}

core::StatusOr<TensorMap> ReadSafetensors(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st)) {
    return core::NotFound(fmt::format("{}: no such file", core::QuotedPath(path)));
  }
  if (!std::filesystem::is_regular_file(st)) {
    return core::InvalidArgument(
        fmt::format("{}: not a regular file, must be a .safetensors file", core::QuotedPath(path)));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::InvalidArgument(fmt::format("{}: cannot open", core::QuotedPath(path)));
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return core::InvalidArgument(fmt::format("{}: {}", core::QuotedPath(path), ec.message()));
  char prefix[8] = {};
  if (size >= 8 && !in.read(prefix, 8)) {
    return core::InvalidArgument(fmt::format("{}: read error", core::QuotedPath(path)));
  }
  uint64_t header_len = 0;
  auto read_at = [&](uint64_t offset, uint64_t len, char* dst) -> core::Status {
    in.seekg(static_cast<std::streamoff>(offset));
    if (!in.read(dst, static_cast<std::streamsize>(len))) {
      return core::InvalidArgument(
          fmt::format("{}: read error at byte {} (file changed?)", core::QuotedPath(path), offset));
    }
    return core::Status::Ok();
  };
  auto read_header = [&](uint64_t n) -> core::StatusOr<std::string> {
    header_len = n;
    std::string text(n, '\0');
    RETURN_IF_ERROR(read_at(8, n, text.data()));
    return text;
  };
  auto read_data = [&](uint64_t offset, uint64_t len, char* dst) {
    return read_at(8 + header_len + offset, len, dst);
  };
  return ParseWith(std::string_view(prefix, 8), size, read_header, read_data, path);
}

core::StatusOr<std::string> EncodeSafetensors(const TensorMap& tensors, TensorDtype dtype) {
  core::Json header = core::Json::object();
  const int64_t elem = TensorDtypeBytes(dtype);
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name == "__metadata__") {
      return core::InvalidArgument(
          fmt::format("tensor name: got '{}', must be non-empty and not __metadata__", name));
    }
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    if (numel != static_cast<int64_t>(t.data.size())) {
      return core::InvalidArgument(
          fmt::format("tensor '{}': shape holds {} elements, data {}", name, numel, t.data.size()));
    }
    const uint64_t bytes = static_cast<uint64_t>(numel) * elem;
    header[name] = {{"dtype", TensorDtypeName(dtype)},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + text.size() + offset);
  AppendU64(out, text.size());
  out += text;
  for (const auto& [name, t] : tensors) {
    for (float v : t.data) {
      if (dtype == TensorDtype::kF32) {
        const uint32_t u = std::bit_cast<uint32_t>(v);
        for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
      } else {
        const uint16_t h = dtype == TensorDtype::kBF16 ? FloatToBf16(v) : FloatToF16(v);
        out.push_back(static_cast<char>(h & 0xff));
        out.push_back(static_cast<char>(h >> 8));
      }
    }
  }
  return out;
}

core::Status WriteSafetensors(const std::string& path, const TensorMap& tensors,
                              TensorDtype dtype) {
  ASSIGN_OR_RETURN(std::string bytes, EncodeSafetensors(tensors, dtype));
  return core::WriteFileAtomically(path, bytes);
}

}  // namespace tessera::models
