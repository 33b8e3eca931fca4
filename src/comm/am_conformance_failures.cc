// The failure checks of the AmTransport conformance suite (Close, a destroyed peer, bad
// addresses), the pair helper and the list of checks.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "comm/am_conformance.h"
#include "comm/am_conformance_util.h"

namespace tessera::comm::testing {

namespace {

// Failure events one transport saw: (peer, status).
struct FailureLog {
  AmSignal sig;
  std::vector<std::pair<PeerId, core::Status>> events;
  void Install(AmTransport& t) {
    t.SetFailureHandler([this](PeerId peer, const core::Status& why) {
      std::lock_guard<std::mutex> lock(sig.mu);
      events.emplace_back(peer, why);
      sig.Notify();
    });
  }
  // Waits for an event about `peer`; checks it is Unavailable and the only one about it.
  void Expect(PeerId peer, AmFailures& f, const std::string& who) {
    auto count = [&] {
      int n = 0;
      for (const auto& e : events) n += e.first == peer ? 1 : 0;
      return n;
    };
    f.Expect(sig.WaitUntil([&] { return count() > 0; }),
             fmt::format("{}: no failure event for peer {}", who, peer));
    std::lock_guard<std::mutex> lock(sig.mu);
    for (const auto& e : events) {
      if (e.first == peer) f.ExpectCode(e.second, core::StatusCode::kUnavailable, who + " event");
    }
    f.Expect(count() <= 1, fmt::format("{}: {} failure events for peer {}", who, count(), peer));
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(sig.mu);
    return events.size();
  }
};

}  // namespace

core::StatusOr<AmPair> MakeAmPair(const AmTransportFactory& make, const AmConfigure& configure) {
  AmPair pair;
  ASSIGN_OR_RETURN(pair.server, make());
  ASSIGN_OR_RETURN(pair.client, make());
  auto sig = std::make_shared<AmSignal>();
  auto accepted = std::make_shared<std::vector<PeerId>>();
  configure(*pair.server, *pair.client);
  pair.server->SetAcceptHandler([sig, accepted](PeerId peer, const core::Status&) {
    std::lock_guard<std::mutex> lock(sig->mu);
    accepted->push_back(peer);
    sig->Notify();
  });
  RETURN_IF_ERROR(pair.server->Listen("127.0.0.1", 0));
  ASSIGN_OR_RETURN(pair.client_to_server, pair.client->Connect(pair.server->address(), 30.0));
  if (!sig->WaitUntil([&] { return !accepted->empty(); })) {
    return core::Internal("MakeAmPair: the server saw no accept event");
  }
  std::lock_guard<std::mutex> lock(sig->mu);
  pair.server_to_client = accepted->front();
  return pair;
}

core::Status CheckAmClose(const AmTransportFactory& make, uint64_t seed) {
  (void)seed;
  AmFailures f;
  FailureLog server_log, client_log;
  ASSIGN_OR_RETURN(AmPair pair, MakeAmPair(make, [&](AmTransport& server, AmTransport& client) {
                     server_log.Install(server);
                     client_log.Install(client);
                     // am 3: the server closes the sender's connection from inside a handler.
                     server.SetHandler(3, [&f, t = &server](PeerId from, auto, auto) {
                       f.ExpectOk(t->Close(from), "Close in a handler");
                     });
                   }));
  f.ExpectOk(pair.client->Close(pair.client_to_server), "client Close");
  server_log.Expect(pair.server_to_client, f, "server after client Close");
  f.ExpectCode(pair.client->Send(pair.client_to_server, 1, {}, {}), core::StatusCode::kUnavailable,
               "client Send after its Close");
  f.ExpectCode(pair.server->Send(pair.server_to_client, 1, {}, {}), core::StatusCode::kUnavailable,
               "server Send after the client's Close");
  f.Expect(client_log.size() == 0, "Close ran the closing side's failure handler");

  // A second connection, closed by the server's handler.
  PeerId second = 0;
  { ASSIGN_OR_RETURN(second, pair.client->Connect(pair.server->address(), 30.0)); }
  f.ExpectOk(pair.client->Send(second, 3, {}, {}), "Send asking the server to close");
  client_log.Expect(second, f, "client after the server's Close");
  f.ExpectCode(pair.client->Send(second, 1, {}, {}), core::StatusCode::kUnavailable,
               "client Send after the server's Close");
  return f.Result();
}

core::Status CheckAmDestroyedPeer(const AmTransportFactory& make, uint64_t seed) {
  (void)seed;
  AmFailures f;
  FailureLog client_log, server_log;
  AmSignal sig;
  int arrived = 0;
  std::vector<std::byte> exposed(4096, std::byte{7});
  ASSIGN_OR_RETURN(AmPair pair, MakeAmPair(make, [&](AmTransport& server, AmTransport& client) {
                     client_log.Install(client);
                     server.SetHandler(1, [&](PeerId, auto, auto) {
                       std::lock_guard<std::mutex> lock(sig.mu);
                       ++arrived;
                       sig.Notify();
                     });
                   }));
  ASSIGN_OR_RETURN(std::unique_ptr<RegisteredMemory> mem,
                   pair.server->RegisterMemory(exposed.data(), exposed.size()));
  const std::vector<std::byte> key(mem->remote_key().begin(), mem->remote_key().end());
  const uint64_t address = mem->address();
  // A client thread keeps sending until the server is gone.
  core::Status last;
  std::thread sender([&] {
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(kAmCheckDeadlineS);
    const std::vector<std::byte> payload(512, std::byte{1});
    while (std::chrono::steady_clock::now() < give_up) {
      last = pair.client->Send(pair.client_to_server, 1, {}, payload);
      if (!last.ok()) return;
    }
  });
  f.Expect(sig.WaitUntil([&] { return arrived >= 100; }), "messages before the destruction");
  pair.server.reset();
  sender.join();
  f.ExpectCode(last, core::StatusCode::kUnavailable, "the sender thread's last Send");
  client_log.Expect(pair.client_to_server, f, "client after the server was destroyed");
  f.ExpectCode(pair.client->Send(pair.client_to_server, 1, {}, {}), core::StatusCode::kUnavailable,
               "Send to a destroyed peer");
  std::vector<std::byte> got(16);
  f.ExpectCode(pair.client->Get(pair.client_to_server, key, address, got.data(), got.size()),
               core::StatusCode::kUnavailable, "Get from a destroyed peer");
  mem.reset();  // after its transport: allowed

  // The other way round: the connecting side goes away; the listener sees it.
  ASSIGN_OR_RETURN(AmPair pair2, MakeAmPair(make, [&](AmTransport& server, AmTransport&) {
                     server_log.Install(server);
                   }));
  pair2.client.reset();
  server_log.Expect(pair2.server_to_client, f, "server after the client was destroyed");
  f.ExpectCode(pair2.server->Send(pair2.server_to_client, 1, {}, {}),
               core::StatusCode::kUnavailable, "Send to a destroyed client");
  return f.Result();
}

core::Status CheckAmBadAddresses(const AmTransportFactory& make, uint64_t seed) {
  (void)seed;
  AmFailures f;
  std::string dead;
  {
    ASSIGN_OR_RETURN(std::unique_ptr<AmTransport> gone, make());
    RETURN_IF_ERROR(gone->Listen("127.0.0.1", 0));
    dead = gone->address();
  }
  ASSIGN_OR_RETURN(std::unique_ptr<AmTransport> t, make());
  core::StatusOr<PeerId> peer = t->Connect(dead, 5.0);
  f.ExpectCode(peer.status(), core::StatusCode::kUnavailable, "Connect to " + dead);
  f.Expect(peer.status().message().find(dead) != std::string::npos,
           "the Connect error does not name " + dead + ": " + peer.status().message());
  f.ExpectCode(t->Connect("no-port-here", 1.0).status(), core::StatusCode::kInvalidArgument,
               "Connect to a malformed address");
  std::vector<std::byte> buffer(8);
  f.ExpectCode(t->Send(12345, 1, {}, {}), core::StatusCode::kInvalidArgument,
               "Send to an unknown peer");
  f.ExpectCode(t->Get(12345, buffer, 0, buffer.data(), buffer.size()),
               core::StatusCode::kInvalidArgument, "Get from an unknown peer");
  f.ExpectCode(t->Close(12345), core::StatusCode::kInvalidArgument, "Close an unknown peer");
  f.ExpectCode(t->Listen("127.0.0.1", 70000), core::StatusCode::kInvalidArgument,
               "Listen on port 70000");
  return f.Result();
}

std::vector<AmNamedCheck> AmConformanceChecks() {
  return {{"ConnectAccept", CheckAmConnectAccept},
          {"SendBothWays", CheckAmSendBothWays},
          {"Fifo", CheckAmFifo},
          {"ConcurrentSenders", CheckAmConcurrentSenders},
          {"PingPongInHandler", CheckAmPingPongInHandler},
          {"RegisterGet", CheckAmRegisterGet},
          {"Close", CheckAmClose},
          {"DestroyedPeer", CheckAmDestroyedPeer},
          {"BadAddresses", CheckAmBadAddresses}};
}

}  // namespace tessera::comm::testing
