// Tests of the ucx AmTransport backend beyond the conformance suite: a peer in another process
// (am_transport_peer) that is SIGKILLed is noticed from either side of the connection, ports,
// remote-key checks and the connect timeout.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/am_conformance.h"
#include "comm/am_conformance_util.h"
#include "comm/am_transport.h"
#include "core/child_process.h"

#ifndef TESSERA_AM_PEER_PATH
#error "TESSERA_AM_PEER_PATH must name the am_transport_peer helper (see CMakeLists.txt)"
#endif

namespace tessera::comm {
namespace {

constexpr size_t kPeerMemoryBytes = (size_t{1} << 20) + 3;  // as am_transport_peer_main.cc

// What the test's transport saw from the peer process. Guarded by sig.mu.
struct PeerProcessLog {
  testing::AmSignal sig;
  std::vector<PeerId> accepted;
  std::vector<PeerId> hello_from;
  std::vector<std::vector<std::byte>> echoes;  // header then payload
  std::vector<std::pair<PeerId, core::Status>> failures;
  uint64_t mem_address = 0, mem_bytes = 0;
  std::vector<std::byte> key;

  void Install(AmTransport& t) {
    t.SetAcceptHandler(
        [this](PeerId peer, const core::Status&) { Record([&] { accepted.push_back(peer); }); });
    t.SetHandler(5,
                 [this](PeerId from, auto, auto) { Record([&] { hello_from.push_back(from); }); });
    t.SetHandler(2, [this](PeerId, std::span<const std::byte> h, std::span<const std::byte> p) {
      Record([&] {
        std::vector<std::byte> all(h.begin(), h.end());
        all.insert(all.end(), p.begin(), p.end());
        echoes.push_back(std::move(all));
      });
    });
    t.SetHandler(4, [this](PeerId, std::span<const std::byte> h, std::span<const std::byte> p) {
      Record([&] {
        if (h.size() == 16) {
          std::memcpy(&mem_address, h.data(), 8);
          std::memcpy(&mem_bytes, h.data() + 8, 8);
        }
        key.assign(p.begin(), p.end());
      });
    });
    t.SetFailureHandler([this](PeerId peer, const core::Status& why) {
      Record([&] { failures.emplace_back(peer, why); });
    });
  }
  template <typename F>
  void Record(F f) {
    std::lock_guard<std::mutex> lock(sig.mu);
    f();
    sig.Notify();
  }
};

std::unique_ptr<core::ChildProcess> SpawnPeer(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {TESSERA_AM_PEER_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  auto child = core::ChildProcess::Spawn(argv);
  EXPECT_TRUE(child.ok()) << child.status().ToString();
  return child.ok() ? std::move(child).value() : nullptr;
}

// Waits (bounded) for the peer's "listening on ADDRESS" line; "" if it never came.
std::string WaitForPeerAddress(core::ChildProcess& child) {
  const std::string marker = "listening on ";
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < give_up && !child.Poll().has_value()) {
    const std::string line = child.LastStderrLine();
    if (line.rfind(marker, 0) == 0) return line.substr(marker.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "the peer process did not start listening; its stderr: " << child.StderrTail();
  return "";
}

// Echo (a rendezvous-sized payload) and a Get of the peer's memory across the processes.
void ExchangeWithPeerProcess(AmTransport& t, PeerId peer, PeerProcessLog& log) {
  const std::vector<std::byte> header = testing::AmTestBytes(11, 1, 40);
  const std::vector<std::byte> payload = testing::AmTestBytes(11, 2, 300 * 1024);
  ASSERT_TRUE(t.Send(peer, 1, header, payload).ok());
  ASSERT_TRUE(log.sig.WaitUntil([&] { return !log.echoes.empty(); })) << "no echo";
  std::vector<std::byte> want = header;
  want.insert(want.end(), payload.begin(), payload.end());
  {
    std::lock_guard<std::mutex> lock(log.sig.mu);
    EXPECT_TRUE(log.echoes[0] == want) << "the echo differs from what was sent";
  }
  ASSERT_TRUE(t.Send(peer, 3, {}, {}).ok());
  ASSERT_TRUE(log.sig.WaitUntil([&] { return !log.key.empty(); })) << "no remote key";
  ASSERT_EQ(log.mem_bytes, kPeerMemoryBytes);
  std::vector<std::byte> got(kPeerMemoryBytes - 5);
  const core::Status s = t.Get(peer, log.key, log.mem_address + 5, got.data(), got.size());
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != std::byte(((i + 5) * 131 + 7) & 0xff)) {
      ADD_FAILURE() << "Get from the peer process: byte " << i << " differs";
      break;
    }
  }
}

// Kills the peer and checks that the failure is noticed and later calls fail fast.
void KillAndExpectNoticed(AmTransport& t, PeerId peer, core::ChildProcess& child,
                          PeerProcessLog& log) {
  child.Signal(SIGKILL);
  EXPECT_EQ(child.Wait(), 128 + SIGKILL);
  ASSERT_TRUE(log.sig.WaitUntil([&] { return !log.failures.empty(); }))
      << "no failure event after the peer process was killed";
  {
    std::lock_guard<std::mutex> lock(log.sig.mu);
    ASSERT_EQ(log.failures.size(), 1u);
    EXPECT_EQ(log.failures[0].first, peer);
    EXPECT_EQ(log.failures[0].second.code(), core::StatusCode::kUnavailable);
    EXPECT_NE(log.failures[0].second.message().find(fmt::format("peer {}", peer)),
              std::string::npos)
        << log.failures[0].second.message();
  }
  const core::Status sent = t.Send(peer, 1, {}, {});
  EXPECT_EQ(sent.code(), core::StatusCode::kUnavailable) << sent.ToString();
  EXPECT_NE(sent.message().find(fmt::format("peer {}", peer)), std::string::npos) << sent.message();
  std::vector<std::byte> got(16);
  EXPECT_EQ(t.Get(peer, log.key, log.mem_address, got.data(), got.size()).code(),
            core::StatusCode::kUnavailable);
}

TEST(UcxAmTransport, KilledListeningPeerProcessIsNoticed) {
  auto t = MakeAmTransport("ucx");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  PeerProcessLog log;
  log.Install(**t);
  auto child = SpawnPeer({"listen"});
  ASSERT_NE(child, nullptr);
  const std::string address = WaitForPeerAddress(*child);
  ASSERT_FALSE(address.empty());
  auto peer = (*t)->Connect(address, 30.0);
  ASSERT_TRUE(peer.ok()) << peer.status().ToString();
  ExchangeWithPeerProcess(**t, *peer, log);
  KillAndExpectNoticed(**t, *peer, *child, log);
  std::lock_guard<std::mutex> lock(log.sig.mu);
  EXPECT_NE(log.failures[0].second.message().find(address), std::string::npos)
      << "the failure does not name " << address << ": " << log.failures[0].second.message();
}

TEST(UcxAmTransport, KilledConnectingPeerProcessIsNoticed) {
  auto t = MakeAmTransport("ucx");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  PeerProcessLog log;
  log.Install(**t);
  ASSERT_TRUE((*t)->Listen("127.0.0.1", 0).ok());
  auto child = SpawnPeer({"connect", (*t)->address()});
  ASSERT_NE(child, nullptr);
  ASSERT_TRUE(log.sig.WaitUntil([&] { return !log.hello_from.empty(); }))
      << "no hello from the peer process; its stderr: " << child->StderrTail();
  PeerId peer = 0;
  {
    std::lock_guard<std::mutex> lock(log.sig.mu);
    ASSERT_EQ(log.accepted.size(), 1u);
    EXPECT_EQ(log.accepted[0], log.hello_from[0]) << "accept and hello name different peers";
    peer = log.hello_from[0];
  }
  ExchangeWithPeerProcess(**t, peer, log);
  KillAndExpectNoticed(**t, peer, *child, log);
}

TEST(UcxAmTransport, AddressAndPortInUse) {
  auto a = MakeAmTransport("ucx");
  auto b = MakeAmTransport("ucx");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->Listen("127.0.0.1", 0).ok());
  const std::string address = (*a)->address();
  ASSERT_EQ(address.rfind("127.0.0.1:", 0), 0u) << address;
  const int port = std::stoi(address.substr(address.find(':') + 1));
  EXPECT_GT(port, 0);
  const core::Status second = (*b)->Listen("127.0.0.1", port);
  EXPECT_EQ(second.code(), core::StatusCode::kUnavailable) << second.ToString();
  EXPECT_EQ((*b)->Listen("not a host name!", 0).code(), core::StatusCode::kInvalidArgument);
}

TEST(UcxAmTransport, GetOutsideTheRegionOrWithAForeignKeyIsInvalidArgument) {
  std::vector<std::byte> memory(100, std::byte{9});
  auto pair =
      testing::MakeAmPair([] { return MakeAmTransport("ucx"); }, [](AmTransport&, AmTransport&) {});
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  auto mem = pair->server->RegisterMemory(memory.data(), memory.size());
  ASSERT_TRUE(mem.ok()) << mem.status().ToString();
  const auto key = (*mem)->remote_key();
  const uint64_t base = (*mem)->address();
  std::vector<std::byte> got(8);
  EXPECT_TRUE(pair->client->Get(pair->client_to_server, key, base + 92, got.data(), 8).ok());
  EXPECT_EQ(got[7], std::byte{9});
  EXPECT_EQ(pair->client->Get(pair->client_to_server, key, base + 93, got.data(), 8).code(),
            core::StatusCode::kInvalidArgument);
  EXPECT_EQ(pair->client->Get(pair->client_to_server, key, base - 1, got.data(), 1).code(),
            core::StatusCode::kInvalidArgument);
  std::vector<std::byte> garbage(key.size(), std::byte{1});
  EXPECT_EQ(pair->client->Get(pair->client_to_server, garbage, base, got.data(), 1).code(),
            core::StatusCode::kInvalidArgument);
}

TEST(UcxAmTransport, ConnectGivesUpAfterTheTimeout) {
  auto t = MakeAmTransport("ucx");
  ASSERT_TRUE(t.ok());
  // TEST-NET-1 (RFC 5737): never routed; the connection either fails at once or times out.
  const std::string address = "192.0.2.1:9";
  auto peer = (*t)->Connect(address, 0.5);
  ASSERT_FALSE(peer.ok());
  EXPECT_EQ(peer.status().code(), core::StatusCode::kUnavailable) << peer.status().ToString();
  EXPECT_NE(peer.status().message().find(address), std::string::npos) << peer.status().message();
  EXPECT_EQ((*t)->Connect("127.0.0.1:0", 1.0).status().code(), core::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::comm
