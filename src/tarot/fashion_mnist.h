// Fashion-MNIST as Debian's `dataset-fashion-mnist` installs it: 28 x 28 grey images (0 = the
// black background, 255 = full intensity) of ten clothing classes, in the gzip-compressed IDX
// files {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz of one folder (60000 training and 10000
// test items). The fmnist benchmark set composites test items into scenes; the classifier of
// the pixels-only backends trains on the training items (tarot/fmnist_classifier.h).
//   FmnistDir        $TESSERA_FMNIST_DIR when set and not empty, else
//                    /usr/share/datasets/fashion-mnist.
//   ReadIdxFile      one gzip-compressed (or plain) IDX file of unsigned bytes: its dimensions
//                    (big-endian 32-bit counts after the magic 0x0000 08 <ndims>) and data; at
//                    most 256 MiB once decompressed.
//   LoadFmnist       one split from a folder: the image and label files, checked against each
//                    other (same count, images 28 x 28, labels 0..9).
//   SharedFmnist     LoadFmnist(FmnistDir(), split), loaded once per process and folder and kept
//                    (errors are not kept: a later call tries again).
// Errors: a missing, unreadable, truncated or malformed file is NotFound / InvalidArgument naming
// the path and what is wrong, and saying to install `dataset-fashion-mnist` or set
// TESSERA_FMNIST_DIR. Labels are the dataset's: 0 t-shirt/top, 1 trouser, 2 pullover, 3 dress,
// 4 coat, 5 sandal, 6 shirt, 7 sneaker, 8 bag, 9 ankle boot (the vocabulary's fashion
// categories, tarot/vocabulary.h, in this order).
// Thread-safety: ReadIdxFile and LoadFmnist are pure; SharedFmnist is thread-safe, and the data
// it returns is immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::tarot {

inline constexpr int kFmnistSide = 28;
inline constexpr int kFmnistPixels = kFmnistSide * kFmnistSide;
inline constexpr int kFmnistClasses = 10;
inline constexpr const char* kFmnistDefaultDir = "/usr/share/datasets/fashion-mnist";
inline constexpr const char* kFmnistDirEnv = "TESSERA_FMNIST_DIR";

enum class FmnistSplit { kTrain, kTest };
// "train" or "t10k" (the files' prefix).
const char* FmnistSplitName(FmnistSplit split);

std::string FmnistDir();

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // row-major, product(dims) bytes
};
core::StatusOr<IdxArray> ReadIdxFile(const std::string& path);

struct FmnistData {
  FmnistSplit split = FmnistSplit::kTest;
  std::string dir;
  std::vector<uint8_t> pixels;             // count x 784, row-major per item
  std::vector<uint8_t> labels;             // count
  std::vector<std::vector<int>> by_label;  // item indices per label, ascending
  int count() const { return static_cast<int>(labels.size()); }
  // The item's 784 bytes; CHECKs the index.
  const uint8_t* item(int index) const;
};

core::StatusOr<FmnistData> LoadFmnist(const std::string& dir, FmnistSplit split);
core::StatusOr<std::shared_ptr<const FmnistData>> SharedFmnist(FmnistSplit split);

}  // namespace tessera::tarot
