// am_transport_peer: a ucx AmTransport in a process of its own, for the tests that kill a peer
// process (ucx_am_transport_test.cc). Test support, not installed.
//
// Usage: am_transport_peer listen            listens on 127.0.0.1:0 and writes
//                                            "listening on HOST:PORT" to stderr
//        am_transport_peer connect ADDRESS   connects to ADDRESS and sends am 5 (hello)
// It serves: am 1 -> replies am 2 with the same header and payload (echo); am 3 -> replies
// am 4 with header (address, bytes) of its registered memory and the remote key as payload.
// The registered memory holds kPeerMemoryBytes bytes, byte i = (i * 131 + 7) mod 256.
// It exits 0 when its (only) peer fails or closes, 2 on a setup error, and by itself after
// 120 s so that it never outlives a crashed test.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/am_transport.h"

namespace {

constexpr size_t kPeerMemoryBytes = (size_t{1} << 20) + 3;

int Fail(const std::string& what, const tessera::core::Status& status) {
  std::fprintf(stderr, "am_transport_peer: %s: %s\n", what.c_str(), status.ToString().c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera::comm;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!(mode == "listen" && argc == 2) && !(mode == "connect" && argc == 3)) {
    std::fprintf(stderr, "usage: am_transport_peer listen | connect HOST:PORT\n");
    return 2;
  }
  auto made = MakeAmTransport("ucx");
  if (!made.ok()) return Fail("MakeAmTransport", made.status());
  std::unique_ptr<AmTransport> t = std::move(made).value();

  std::vector<std::byte> memory(kPeerMemoryBytes);
  for (size_t i = 0; i < memory.size(); ++i) memory[i] = std::byte((i * 131 + 7) & 0xff);
  auto registered = t->RegisterMemory(memory.data(), memory.size());
  if (!registered.ok()) return Fail("RegisterMemory", registered.status());
  const RegisteredMemory& mem = **registered;

  std::atomic<bool> done{false};
  t->SetHandler(
      1, [&](PeerId from, std::span<const std::byte> header, std::span<const std::byte> payload) {
        const tessera::core::Status s = t->Send(from, 2, header, payload);
        if (!s.ok()) std::fprintf(stderr, "echo: %s\n", s.ToString().c_str());
      });
  t->SetHandler(3, [&](PeerId from, std::span<const std::byte>, std::span<const std::byte>) {
    const uint64_t header[2] = {mem.address(), mem.size_bytes()};
    const tessera::core::Status s =
        t->Send(from, 4, std::as_bytes(std::span(header)), mem.remote_key());
    if (!s.ok()) std::fprintf(stderr, "key: %s\n", s.ToString().c_str());
  });
  t->SetFailureHandler([&](PeerId, const tessera::core::Status& why) {
    std::fprintf(stderr, "peer lost: %s\n", why.ToString().c_str());
    done = true;
  });

  if (mode == "listen") {
    const tessera::core::Status s = t->Listen("127.0.0.1", 0);
    if (!s.ok()) return Fail("Listen", s);
    std::fprintf(stderr, "listening on %s\n", t->address().c_str());
  } else {
    auto peer = t->Connect(argv[2], 30.0);
    if (!peer.ok()) return Fail("Connect", peer.status());
    const tessera::core::Status s = t->Send(*peer, 5, {}, {});
    if (!s.ok()) return Fail("Send hello", s);
    std::fprintf(stderr, "connected to %s\n", argv[2]);
  }
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!done && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  registered->reset();
  return 0;
}
