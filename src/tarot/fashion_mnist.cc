#include "tarot/fashion_mnist.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "core/check.h"
#include "workload/gzip_text.h"

namespace tessera::tarot {
namespace {

constexpr size_t kMaxIdxBytes = size_t{256} << 20;
constexpr int kIdxUnsignedByte = 0x08;

std::string InstallHint() {
  return std::string(
             "; install the Debian package dataset-fashion-mnist (scripts/install-deps.sh) "
             "or set ") +
         kFmnistDirEnv + " to a folder holding the Fashion-MNIST IDX files";
}

// The whole file, gunzipped when it is gzip (workload/gzip_text.h), as it is otherwise.
core::StatusOr<std::string> ReadGzip(const std::string& path) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    return core::NotFound("fmnist: cannot open " + path + ": " +
                          (err != 0 ? std::strerror(err) : "unreadable") + InstallHint());
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!workload::IsGzip(bytes.view())) return std::move(bytes).str();
  core::StatusOr<std::string> out =
      workload::Gunzip(bytes.view(), "fmnist: " + path, static_cast<int64_t>(kMaxIdxBytes));
  if (!out.ok()) return core::InvalidArgument(out.status().message() + InstallHint());
  return out;
}

uint32_t BigEndian32(const std::string& s, size_t at) {
  return (static_cast<uint32_t>(static_cast<uint8_t>(s[at])) << 24) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[at + 1])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[at + 2])) << 8) |
         static_cast<uint32_t>(static_cast<uint8_t>(s[at + 3]));
}

std::string FilePath(const std::string& dir, FmnistSplit split, bool images) {
  return dir + "/" + FmnistSplitName(split) +
         (images ? "-images-idx3-ubyte.gz" : "-labels-idx1-ubyte.gz");
}

}  // namespace

const char* FmnistSplitName(FmnistSplit split) {
  return split == FmnistSplit::kTrain ? "train" : "t10k";
}

std::string FmnistDir() {
  const char* env = std::getenv(kFmnistDirEnv);
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(kFmnistDefaultDir);
}

core::StatusOr<IdxArray> ReadIdxFile(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string bytes, ReadGzip(path));
  auto bad = [&](const std::string& what) {
    return core::InvalidArgument("fmnist: " + path + ": not an IDX file of unsigned bytes (" +
                                 what + ")" + InstallHint());
  };
  if (bytes.size() < 4) return bad("shorter than its 4-byte magic");
  if (bytes[0] != 0 || bytes[1] != 0) return bad("the magic does not start with two zero bytes");
  if (bytes[2] != kIdxUnsignedByte) {
    return bad(fmt::format("element type 0x{:02x}, need 0x08", static_cast<uint8_t>(bytes[2])));
  }
  const int ndims = static_cast<uint8_t>(bytes[3]);
  if (ndims < 1 || ndims > 4) return bad(std::to_string(ndims) + " dimensions, need 1 to 4");
  const size_t header = 4 + 4 * static_cast<size_t>(ndims);
  if (bytes.size() < header) return bad("truncated header");
  IdxArray a;
  size_t total = 1;
  for (int d = 0; d < ndims; ++d) {
    const uint32_t n = BigEndian32(bytes, 4 + 4 * static_cast<size_t>(d));
    a.dims.push_back(n);
    if (n > kMaxIdxBytes || total * n > kMaxIdxBytes) return bad("dimensions too large");
    total *= n;
  }
  if (bytes.size() != header + total) {
    return bad("the header promises " + std::to_string(total) + " data bytes, the file holds " +
               std::to_string(bytes.size() - header));
  }
  a.data.assign(bytes.begin() + static_cast<long>(header), bytes.end());
  return a;
}

const uint8_t* FmnistData::item(int index) const {
  CHECK(index >= 0 && index < count()) << index << " of " << count();
  return pixels.data() + static_cast<size_t>(index) * kFmnistPixels;
}

core::StatusOr<FmnistData> LoadFmnist(const std::string& dir, FmnistSplit split) {
  const std::string ipath = FilePath(dir, split, true), lpath = FilePath(dir, split, false);
  ASSIGN_OR_RETURN(IdxArray images, ReadIdxFile(ipath));
  ASSIGN_OR_RETURN(IdxArray labels, ReadIdxFile(lpath));
  if (images.dims.size() != 3 || images.dims[1] != kFmnistSide || images.dims[2] != kFmnistSide) {
    return core::InvalidArgument("fmnist: " + ipath + ": need 3 dimensions (count, 28, 28)" +
                                 InstallHint());
  }
  if (labels.dims.size() != 1 || labels.dims[0] != images.dims[0]) {
    return core::InvalidArgument("fmnist: " + lpath + ": need one label per image of " + ipath +
                                 " (" + std::to_string(images.dims[0]) + ")" + InstallHint());
  }
  FmnistData d;
  d.split = split;
  d.dir = dir;
  d.by_label.resize(kFmnistClasses);
  for (size_t i = 0; i < labels.data.size(); ++i) {
    const int l = labels.data[i];
    if (l >= kFmnistClasses) {
      return core::InvalidArgument("fmnist: " + lpath + ": label " + std::to_string(l) +
                                   " at item " + std::to_string(i) + ", must be in 0..9" +
                                   InstallHint());
    }
    d.by_label[l].push_back(static_cast<int>(i));
  }
  d.pixels = std::move(images.data);
  d.labels = std::move(labels.data);
  return d;
}

core::StatusOr<std::shared_ptr<const FmnistData>> SharedFmnist(FmnistSplit split) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const FmnistData>> cache;
  const std::string dir = FmnistDir();
  const std::string key = dir + "\n" + FmnistSplitName(split);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  ASSIGN_OR_RETURN(FmnistData d, LoadFmnist(dir, split));
  auto shared = std::make_shared<const FmnistData>(std::move(d));
  cache.emplace(key, shared);
  return shared;
}

}  // namespace tessera::tarot
