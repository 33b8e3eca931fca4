// Built only when libgloo-dev was found (src/elaswave/CMakeLists.txt); see gloo_rebuild.h.
#include "elaswave/gloo_rebuild.h"

#include <fmt/format.h>
#include <gloo/allreduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/socket.h>

#include <chrono>
#include <exception>
#include <filesystem>
#include <memory>
#include <vector>

namespace tessera::elaswave {

bool GlooRebuildAvailable() { return true; }

core::StatusOr<GlooAllReduceResult> GlooFreshAllReduce(const std::string& store_dir,
                                                       const std::string& prefix, int rank,
                                                       int size, int64_t value, double timeout_s) {
  if (rank < 0 || rank >= size) {
    return core::InvalidArgument(fmt::format("gloo: rank {} not in [0, {})", rank, size));
  }
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1e3));
  const auto start = std::chrono::steady_clock::now();
  try {
    std::error_code ec;
    std::filesystem::create_directories(store_dir, ec);  // FileStore needs the folder
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    attr.ai_family = AF_INET;
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore file_store(store_dir);
    gloo::rendezvous::PrefixStore store(prefix, file_store);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout);
    context->connectFullMesh(store, device);
    GlooAllReduceResult result;
    result.connect_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::vector<int64_t> data = {value};
    gloo::AllreduceOptions options(context);
    options.setOutput(data.data(), data.size());
    options.setReduceFunction([](void* c, const void* a, const void* b, size_t n) {
      auto* out = static_cast<int64_t*>(c);
      const auto* x = static_cast<const int64_t*>(a);
      const auto* y = static_cast<const int64_t*>(b);
      for (size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
    });
    options.setTimeout(timeout);
    gloo::allreduce(options);
    result.sum = data[0];
    return result;
  } catch (const std::exception& e) {
    return core::Unavailable(
        fmt::format("gloo (rank {} of {}, prefix {}): {}", rank, size, prefix, e.what()));
  }
}

}  // namespace tessera::elaswave
