// The Fashion-MNIST reader on small hand-made IDX files (gzip and plain) and on bad ones:
// missing, truncated, wrong magic, a header that promises more data than the file holds, and
// labels that do not match the images. Each error names the path and the package.
#include "tarot/fashion_mnist.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace tessera::tarot {
namespace {

using namespace std::string_literals;

std::string TestDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "fmnist_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string Header(uint8_t type, const std::vector<uint32_t>& dims) {
  std::string h = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    h.push_back(static_cast<char>(d >> 24));
    h.push_back(static_cast<char>(d >> 16));
    h.push_back(static_cast<char>(d >> 8));
    h.push_back(static_cast<char>(d));
  }
  return h;
}

void WriteGzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

void WritePlain(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Three 28 x 28 images (item i: every pixel i * 10 + row) and labels 3, 0, 9.
void WriteSmallSplit(const std::string& dir, const std::string& prefix) {
  std::string images = Header(0x08, {3, 28, 28});
  for (int i = 0; i < 3; ++i)
    for (int y = 0; y < 28; ++y)
      for (int x = 0; x < 28; ++x) images.push_back(static_cast<char>(i * 10 + y));
  WriteGzip(dir + "/" + prefix + "-images-idx3-ubyte.gz", images);
  WriteGzip(dir + "/" + prefix + "-labels-idx1-ubyte.gz", Header(0x08, {3}) + "\x03\x00\x09"s);
}

TEST(FashionMnist, ReadsAHandMadeGzipIdxFile) {
  const std::string dir = TestDir("idx");
  WriteGzip(dir + "/a.gz", Header(0x08, {2, 3}) + "\x01\x02\x03\x04\x05\xff"s);
  auto a = ReadIdxFile(dir + "/a.gz");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->data, (std::vector<uint8_t>{1, 2, 3, 4, 5, 255}));
  // A plain (not compressed) file reads the same.
  WritePlain(dir + "/b", Header(0x08, {2, 3}) + "\x01\x02\x03\x04\x05\xff"s);
  auto b = ReadIdxFile(dir + "/b");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->data, a->data);
}

TEST(FashionMnist, LoadsASplitAndGroupsItemsByLabel) {
  const std::string dir = TestDir("split");
  WriteSmallSplit(dir, "t10k");
  auto d = LoadFmnist(dir, FmnistSplit::kTest);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->count(), 3);
  EXPECT_EQ(d->labels, (std::vector<uint8_t>{3, 0, 9}));
  EXPECT_EQ(d->by_label[3], std::vector<int>{0});
  EXPECT_EQ(d->by_label[9], std::vector<int>{2});
  EXPECT_TRUE(d->by_label[5].empty());
  EXPECT_EQ(d->item(2)[0], 20);
  EXPECT_EQ(d->item(2)[28 * 27 + 5], 20 + 27);
}

void ExpectError(const core::Status& s, const std::string& path) {
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("dataset-fashion-mnist"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(kFmnistDirEnv), std::string::npos) << s.ToString();
}

TEST(FashionMnist, BadFilesAreErrorsNamingThePathAndThePackage) {
  const std::string dir = TestDir("bad");
  // Missing.
  ExpectError(ReadIdxFile(dir + "/missing.gz").status(), dir + "/missing.gz");
  ExpectError(LoadFmnist(dir, FmnistSplit::kTrain).status(), dir + "/train-images-idx3-ubyte.gz");
  // Truncated gzip stream.
  const std::string good = Header(0x08, {400}) + std::string(400, '\x07');
  WriteGzip(dir + "/full.gz", good);
  std::ifstream in(dir + "/full.gz", std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  WritePlain(dir + "/cut.gz", gz.substr(0, gz.size() / 2));
  ExpectError(ReadIdxFile(dir + "/cut.gz").status(), dir + "/cut.gz");
  // Not IDX: text, a wrong element type, a short header, data shorter than promised.
  WritePlain(dir + "/text", "hello, world");
  ExpectError(ReadIdxFile(dir + "/text").status(), dir + "/text");
  WriteGzip(dir + "/float.gz", Header(0x0D, {1}) + "abcd");
  ExpectError(ReadIdxFile(dir + "/float.gz").status(), dir + "/float.gz");
  WriteGzip(dir + "/short.gz", Header(0x08, {2, 3}).substr(0, 9));
  ExpectError(ReadIdxFile(dir + "/short.gz").status(), dir + "/short.gz");
  WriteGzip(dir + "/less.gz", Header(0x08, {2, 3}) + "\x01\x02"s);
  const core::Status less = ReadIdxFile(dir + "/less.gz").status();
  ExpectError(less, dir + "/less.gz");
  EXPECT_NE(less.message().find("promises 6 data bytes"), std::string::npos) << less.ToString();
  // Labels that do not match the images: a count, and a label out of 0..9.
  WriteSmallSplit(dir, "t10k");
  WriteGzip(dir + "/t10k-labels-idx1-ubyte.gz", Header(0x08, {2}) + "\x01\x02"s);
  ExpectError(LoadFmnist(dir, FmnistSplit::kTest).status(), dir + "/t10k-labels-idx1-ubyte.gz");
  WriteGzip(dir + "/t10k-labels-idx1-ubyte.gz", Header(0x08, {3}) + "\x01\x0c\x02"s);
  ExpectError(LoadFmnist(dir, FmnistSplit::kTest).status(), dir + "/t10k-labels-idx1-ubyte.gz");
}

TEST(FashionMnist, TheFolderComesFromTheEnvironment) {
  const char* old = std::getenv(kFmnistDirEnv);
  const std::string saved = old ? old : "";
  const std::string dir = TestDir("env");
  WriteSmallSplit(dir, "t10k");
  setenv(kFmnistDirEnv, dir.c_str(), 1);
  EXPECT_EQ(FmnistDir(), dir);
  auto shared = SharedFmnist(FmnistSplit::kTest);
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  EXPECT_EQ((*shared)->count(), 3);
  setenv(kFmnistDirEnv, (dir + "/nowhere").c_str(), 1);
  ExpectError(SharedFmnist(FmnistSplit::kTest).status(), dir + "/nowhere");
  setenv(kFmnistDirEnv, "", 1);
  EXPECT_EQ(FmnistDir(), kFmnistDefaultDir);
  if (old) {
    setenv(kFmnistDirEnv, saved.c_str(), 1);
  } else {
    unsetenv(kFmnistDirEnv);
  }
}

}  // namespace
}  // namespace tessera::tarot
