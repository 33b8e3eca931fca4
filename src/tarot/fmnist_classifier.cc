#include "tarot/fmnist_classifier.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numeric>
#include <opencv2/imgproc.hpp>
#include <string>

#include "core/rng.h"
#include "tarot/fmnist_items.h"
#include "tarot/seeded.h"
#include "tarot/vocabulary.h"

namespace tessera::tarot {
namespace {

constexpr float kInputFloor = 0.2f;  // the darkest region pixel's value
constexpr int kInputs = kFmnistPixels + 1;
constexpr double kTrainMinHalf = 14, kTrainMaxHalf = 28;
constexpr double kTestHalf = 24;

double Luminance(Rgb c) { return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b; }

uint8_t ClampByte(double v) { return static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L)); }

}  // namespace

ItemInput RegionInput(const Image& image, const Mask& region) {
  ItemInput out{};
  const Box box = BoxOf(region);
  if (box.empty()) return out;
  const int x0 = static_cast<int>(box.x0), y0 = static_cast<int>(box.y0);
  const int w = static_cast<int>(box.x1) - x0, h = static_cast<int>(box.y1) - y0;
  double lo = 1e9, hi = -1e9;
  for (int y = y0; y < y0 + h; ++y)
    for (int x = x0; x < x0 + w; ++x)
      if (region.get(x, y)) {
        const double l = Luminance(image.at(x, y));
        lo = std::min(lo, l);
        hi = std::max(hi, l);
      }
  cv::Mat crop = cv::Mat::zeros(h, w, CV_32F);
  for (int y = 0; y < h; ++y) {
    float* row = crop.ptr<float>(y);
    for (int x = 0; x < w; ++x) {
      if (!region.get(x0 + x, y0 + y)) continue;
      const double t = hi > lo ? (Luminance(image.at(x0 + x, y0 + y)) - lo) / (hi - lo) : 1.0;
      row[x] = kInputFloor + (1 - kInputFloor) * static_cast<float>(t);
    }
  }
  const double scale = static_cast<double>(kFmnistSide) / std::max(w, h);
  const int tw = std::clamp(static_cast<int>(std::lround(w * scale)), 1, kFmnistSide);
  const int th = std::clamp(static_cast<int>(std::lround(h * scale)), 1, kFmnistSide);
  cv::Mat small;
  cv::resize(crop, small, cv::Size(tw, th), 0, 0, scale < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
  const int ox = (kFmnistSide - tw) / 2, oy = (kFmnistSide - th) / 2;
  for (int y = 0; y < th; ++y) {
    const float* row = small.ptr<float>(y);
    for (int x = 0; x < tw; ++x) out[static_cast<size_t>(oy + y) * kFmnistSide + ox + x] = row[x];
  }
  return out;
}

ItemInput RenderedInput(const uint8_t* item, double half_size_px, Rgb tint) {
  const int side = static_cast<int>(std::ceil(2 * half_size_px)) + 2;
  const double c = side / 2.0;
  Image image(side, side, Rgb{240, 240, 240});
  Mask mask(side, side);
  ForEachItemPixel(item, c, c, half_size_px, side, side, [&](int x, int y, double v) {
    const double f = ItemShade(v);
    image.at(x, y) = {ClampByte(tint.r * f), ClampByte(tint.g * f), ClampByte(tint.b * f)};
    mask.set(x, y);
  });
  return RegionInput(image, mask);
}

core::StatusOr<FmnistClassifier> FmnistClassifier::Train(const FmnistData& train,
                                                         const FmnistClassifierOptions& o) {
  if (o.epochs < 1 || o.epochs > 100) {
    return core::InvalidArgument("fmnist.classifier.epochs: got " + std::to_string(o.epochs) +
                                 ", must be in [1, 100]");
  }
  if (!(o.learning_rate > 0 && o.learning_rate <= 10) || !(o.l2 >= 0 && o.l2 < 1)) {
    return core::InvalidArgument(
        "fmnist.classifier: learning_rate must be in (0, 10] and l2 in [0, 1)");
  }
  if (train.count() == 0) {
    return core::InvalidArgument("fmnist.classifier: the training split " + train.dir +
                                 " has no items");
  }
  FmnistClassifier c;
  c.weights_.assign(static_cast<size_t>(kFmnistClasses) * kInputs, 0.0f);
  const core::Rng root(o.seed);
  std::vector<int> order(static_cast<size_t>(train.count()));
  std::iota(order.begin(), order.end(), 0);
  core::Rng order_rng = root.Fork(0);
  Shuffle(order_rng, order);
  if (o.max_items > 0 && o.max_items < train.count()) order.resize(o.max_items);
  // Each item drawn once (a seeded half-size and tint), its input kept as bytes (value x 255).
  std::vector<uint8_t> inputs(order.size() * kFmnistPixels);
  core::Rng draw_rng = root.Fork(1);
  for (size_t n = 0; n < order.size(); ++n) {
    const double half = draw_rng.Uniform(kTrainMinHalf, kTrainMaxHalf);
    const Rgb tint = Pick(draw_rng, Palette()).rgb;
    const ItemInput x = RenderedInput(train.item(order[n]), half, tint);
    for (int i = 0; i < kFmnistPixels; ++i)
      inputs[n * kFmnistPixels + i] = static_cast<uint8_t>(std::lround(x[i] * 255));
  }
  std::vector<size_t> slots(order.size());
  std::iota(slots.begin(), slots.end(), size_t{0});
  const long total = static_cast<long>(o.epochs) * static_cast<long>(order.size());
  long step = 0;
  std::array<double, kFmnistClasses> z{};
  ItemInput x{};
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    core::Rng rng = root.Fork(static_cast<uint64_t>(epoch) + 2);
    Shuffle(rng, slots);
    for (size_t slot : slots) {
      const int index = order[slot];
      for (int i = 0; i < kFmnistPixels; ++i) x[i] = inputs[slot * kFmnistPixels + i] / 255.0f;
      const double lr = o.learning_rate * (1.0 - static_cast<double>(step++) / total);
      // Forward: softmax over z_k = w_k . [x, 1].
      double zmax = -1e30;
      for (int k = 0; k < kFmnistClasses; ++k) {
        const float* w = &c.weights_[static_cast<size_t>(k) * kInputs];
        double s = w[kFmnistPixels];
        for (int i = 0; i < kFmnistPixels; ++i) s += static_cast<double>(w[i]) * x[i];
        z[k] = s;
        zmax = std::max(zmax, s);
      }
      double sum = 0;
      for (double& v : z) sum += (v = std::exp(v - zmax));
      const int label = train.labels[static_cast<size_t>(index)];
      for (int k = 0; k < kFmnistClasses; ++k) {
        const float g = static_cast<float>(lr * (z[k] / sum - (k == label ? 1.0 : 0.0)));
        const float decay = static_cast<float>(1.0 - lr * o.l2);
        float* w = &c.weights_[static_cast<size_t>(k) * kInputs];
        for (int i = 0; i < kFmnistPixels; ++i) w[i] = w[i] * decay - g * x[i];
        w[kFmnistPixels] -= g;
      }
    }
  }
  return c;
}

ClassProbabilities FmnistClassifier::Probabilities(const ItemInput& x) const {
  ClassProbabilities p{};
  double zmax = -1e30;
  for (int k = 0; k < kFmnistClasses; ++k) {
    const float* w = &weights_[static_cast<size_t>(k) * kInputs];
    double s = w[kFmnistPixels];
    for (int i = 0; i < kFmnistPixels; ++i) s += static_cast<double>(w[i]) * x[i];
    p[k] = s;
    zmax = std::max(zmax, s);
  }
  double sum = 0;
  for (double& v : p) sum += (v = std::exp(v - zmax));
  for (double& v : p) v /= sum;
  return p;
}

int FmnistClassifier::Predict(const ItemInput& input) const {
  const ClassProbabilities p = Probabilities(input);
  return static_cast<int>(std::max_element(p.begin(), p.end()) - p.begin());
}

double TestAccuracy(const FmnistClassifier& classifier, const FmnistData& test, int max_items) {
  const int n = max_items > 0 ? std::min(max_items, test.count()) : test.count();
  if (n == 0) return 0;
  int right = 0;
  for (int i = 0; i < n; ++i) {
    const Rgb tint = Palette()[static_cast<size_t>(i) % Palette().size()].rgb;
    if (classifier.Predict(RenderedInput(test.item(i), kTestHalf, tint)) == test.labels[i]) ++right;
  }
  return static_cast<double>(right) / n;
}

core::StatusOr<std::shared_ptr<const FmnistClassifier>> SharedFmnistClassifier() {
  static std::mutex mu;
  static std::shared_ptr<const FmnistClassifier> trained;
  std::lock_guard<std::mutex> lock(mu);
  if (trained) return trained;
  ASSIGN_OR_RETURN(std::shared_ptr<const FmnistData> train, SharedFmnist(FmnistSplit::kTrain));
  ASSIGN_OR_RETURN(FmnistClassifier c, FmnistClassifier::Train(*train));
  trained = std::make_shared<const FmnistClassifier>(std::move(c));
  return trained;
}

}  // namespace tessera::tarot
