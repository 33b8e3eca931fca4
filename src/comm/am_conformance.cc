// The message and memory checks of the AmTransport conformance suite; the failure checks and
// the pair helper are in am_conformance_failures.cc.
#include "comm/am_conformance.h"

#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "comm/am_conformance_util.h"
#include "core/rng.h"

namespace tessera::comm::testing {

namespace {

constexpr size_t kMiB = size_t{1} << 20;

std::span<const std::byte> AsBytes(const uint64_t& v) {
  return std::as_bytes(std::span<const uint64_t, 1>(&v, 1));
}

uint64_t ReadU64(std::span<const std::byte> bytes, size_t index = 0) {
  uint64_t v = 0;
  if (bytes.size() >= (index + 1) * sizeof(v)) {
    std::memcpy(&v, bytes.data() + index * sizeof(v), sizeof(v));
  }
  return v;
}

bool SameBytes(std::span<const std::byte> got, const std::vector<std::byte>& want) {
  return got.size() == want.size() &&
         (want.empty() || std::memcmp(got.data(), want.data(), want.size()) == 0);
}

// The payload of FIFO message i: mostly small, every 97th over the eager limit.
size_t FifoPayloadBytes(uint64_t seed, uint64_t i) {
  core::Rng rng = core::Rng(seed).Fork(i);
  return i % 97 == 13 ? 20000 + rng.Below(180000) : rng.Below(257);
}

// Sends `count` FIFO messages (header: the index) and returns the first failure.
core::Status SendFifo(AmTransport& t, PeerId peer, uint64_t seed, int count) {
  for (uint64_t i = 0; i < static_cast<uint64_t>(count); ++i) {
    const std::vector<std::byte> payload = AmTestBytes(seed, i, FifoPayloadBytes(seed, i));
    RETURN_IF_ERROR(t.Send(peer, 5, AsBytes(i), payload));
  }
  return core::Status::Ok();
}

// A receiver that checks FIFO messages in order.
struct FifoReceiver {
  AmSignal signal;
  uint64_t next = 0;
  void Install(AmTransport& t, uint64_t seed, AmFailures& f, const std::string& side) {
    t.SetHandler(5, [this, seed, &f, side](PeerId, std::span<const std::byte> header,
                                           std::span<const std::byte> payload) {
      std::lock_guard<std::mutex> lock(signal.mu);
      const uint64_t i = ReadU64(header);
      if (i != next) {
        f.Add(fmt::format("{}: FIFO message {} arrived when {} was due", side, i, next));
      } else if (!SameBytes(payload, AmTestBytes(seed, i, FifoPayloadBytes(seed, i)))) {
        f.Add(fmt::format("{}: FIFO message {} has wrong payload ({} bytes)", side, i,
                          payload.size()));
      }
      next = i + 1;
      signal.Notify();
    });
  }
};

}  // namespace

std::vector<std::byte> AmTestBytes(uint64_t seed, uint64_t stream, size_t bytes) {
  std::vector<std::byte> out(bytes);
  core::Rng rng = core::Rng(seed).Fork(stream);
  for (size_t i = 0; i < bytes; i += 8) {
    const uint64_t v = rng.NextU64();
    std::memcpy(out.data() + i, &v, std::min<size_t>(8, bytes - i));
  }
  return out;
}

core::Status CheckAmConnectAccept(const AmTransportFactory& make, uint64_t seed) {
  (void)seed;
  AmFailures f;
  AmSignal sig;
  std::vector<PeerId> accepted;
  std::vector<PeerId> message_from;
  ASSIGN_OR_RETURN(std::unique_ptr<AmTransport> server, make());
  ASSIGN_OR_RETURN(std::unique_ptr<AmTransport> client, make());
  f.Expect(server->address().empty(), "address() before Listen: got '" + server->address() + "'");
  server->SetAcceptHandler([&](PeerId peer, const core::Status& why) {
    std::lock_guard<std::mutex> lock(sig.mu);
    f.ExpectOk(why, "accept event status");
    accepted.push_back(peer);
    sig.Notify();
  });
  client->SetHandler(1, [&](PeerId from, std::span<const std::byte>, std::span<const std::byte>) {
    std::lock_guard<std::mutex> lock(sig.mu);
    message_from.push_back(from);
    sig.Notify();
  });
  RETURN_IF_ERROR(server->Listen("127.0.0.1", 0));
  const std::string address = server->address();
  f.Expect(!address.empty(), "address() after Listen is empty");
  f.Expect(!server->Listen("127.0.0.1", 0).ok(), "a second Listen succeeded");
  ASSIGN_OR_RETURN(PeerId to_server, client->Connect(address, 30.0));
  ASSIGN_OR_RETURN(PeerId to_server_2, client->Connect(address, 30.0));
  f.Expect(to_server != to_server_2, "two connections got the same PeerId");
  f.Expect(sig.WaitUntil([&] { return accepted.size() >= 2; }), "two accept events not seen");
  PeerId first = 0;
  {
    std::lock_guard<std::mutex> lock(sig.mu);
    f.Expect(accepted.size() == 2, fmt::format("{} accept events, want 2", accepted.size()));
    if (accepted.size() == 2) f.Expect(accepted[0] != accepted[1], "accepted ids not distinct");
    if (!accepted.empty()) first = accepted[0];
  }
  f.ExpectOk(server->Send(first, 1, {}, {}), "server Send to an accepted peer");
  f.Expect(sig.WaitUntil([&] { return !message_from.empty(); }), "message to client not seen");
  std::lock_guard<std::mutex> lock(sig.mu);
  if (!message_from.empty()) {
    f.Expect(message_from[0] == to_server || message_from[0] == to_server_2,
             fmt::format("message from peer {}, want {} or {}", message_from[0], to_server,
                         to_server_2));
  }
  f.Expect(server->backend_name() == client->backend_name(), "backend names differ");
  return f.Result();
}

core::Status CheckAmSendBothWays(const AmTransportFactory& make, uint64_t seed) {
  struct Case {
    size_t header, payload;
  };
  const std::vector<Case> cases = {{0, 0},          {0, 1},        {1, 0},          {3, 1},
                                   {24, 64 * 1024}, {0, 8 * kMiB}, {100, 8 * kMiB}, {65536, 5}};
  AmFailures f;
  AmSignal sig;
  int received[2] = {0, 0};  // by the server, by the client
  auto install = [&](AmTransport& t, int side, PeerId* expected_from) {
    t.SetHandler(7, [&, side, expected_from](PeerId from, std::span<const std::byte> header,
                                             std::span<const std::byte> payload) {
      std::lock_guard<std::mutex> lock(sig.mu);
      const size_t k = received[side]++;
      if (k >= cases.size()) return f.Add("more messages than sent");
      const uint64_t stream = 100 * k + 10 * side;
      f.Expect(SameBytes(header, AmTestBytes(seed, stream, cases[k].header)),
               fmt::format("side {} case {}: header differs ({} bytes)", side, k, header.size()));
      f.Expect(SameBytes(payload, AmTestBytes(seed, stream + 1, cases[k].payload)),
               fmt::format("side {} case {}: payload differs ({} bytes)", side, k, payload.size()));
      f.Expect(from == *expected_from, fmt::format("side {}: from {}", side, from));
      sig.Notify();
    });
  };
  PeerId ids[2] = {0, 0};
  ASSIGN_OR_RETURN(AmPair pair, MakeAmPair(make, [&](AmTransport& server, AmTransport& client) {
                     install(server, 0, &ids[0]);
                     install(client, 1, &ids[1]);
                   }));
  ids[0] = pair.server_to_client;
  ids[1] = pair.client_to_server;
  for (size_t k = 0; k < cases.size(); ++k) {
    for (int side : {0, 1}) {  // the receiving side
      AmTransport& sender = side == 0 ? *pair.client : *pair.server;
      const PeerId to = side == 0 ? pair.client_to_server : pair.server_to_client;
      const uint64_t stream = 100 * k + 10 * side;
      f.ExpectOk(sender.Send(to, 7, AmTestBytes(seed, stream, cases[k].header),
                             AmTestBytes(seed, stream + 1, cases[k].payload)),
                 fmt::format("Send case {} to side {}", k, side));
      f.Expect(sig.WaitUntil([&] { return received[side] > static_cast<int>(k); }),
               fmt::format("case {} not received by side {}", k, side));
    }
  }
  return f.Result();
}

core::Status CheckAmFifo(const AmTransportFactory& make, uint64_t seed) {
  constexpr int kCount = 10000;
  AmFailures f;
  FifoReceiver at_server, at_client;
  ASSIGN_OR_RETURN(AmPair pair, MakeAmPair(make, [&](AmTransport& server, AmTransport& client) {
                     at_server.Install(server, seed, f, "server");
                     at_client.Install(client, seed + 1, f, "client");
                   }));
  core::Status back;
  std::thread reverse(
      [&] { back = SendFifo(*pair.server, pair.server_to_client, seed + 1, kCount); });
  f.ExpectOk(SendFifo(*pair.client, pair.client_to_server, seed, kCount), "client sends");
  reverse.join();
  f.ExpectOk(back, "server sends");
  f.Expect(at_server.signal.WaitUntil([&] { return at_server.next >= kCount; }),
           "server did not receive all messages");
  f.Expect(at_client.signal.WaitUntil([&] { return at_client.next >= kCount; }),
           "client did not receive all messages");
  return f.Result();
}

core::Status CheckAmConcurrentSenders(const AmTransportFactory& make, uint64_t seed) {
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 500;
  AmFailures f;
  AmSignal sig;
  std::vector<uint64_t> next(kThreads, 0);
  uint64_t total = 0;
  auto payload_of = [&](uint64_t t, uint64_t i) {
    return AmTestBytes(seed + t, i, i % 100 == 7 ? 100 * 1024 : t * 100 + i % 50);
  };
  ASSIGN_OR_RETURN(AmPair pair, MakeAmPair(make, [&](AmTransport& server, AmTransport&) {
                     server.SetHandler(9, [&](PeerId, std::span<const std::byte> header,
                                              std::span<const std::byte> payload) {
                       std::lock_guard<std::mutex> lock(sig.mu);
                       const uint64_t t = ReadU64(header, 0), i = ReadU64(header, 1);
                       if (t >= kThreads || i != next[t]) {
                         f.Add(fmt::format("thread {} message {} out of order", t, i));
                       } else if (!SameBytes(payload, payload_of(t, i))) {
                         f.Add(fmt::format("thread {} message {}: payload differs", t, i));
                       }
                       if (t < kThreads) next[t] = i + 1;
                       ++total;
                       sig.Notify();
                     });
                   }));
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        const uint64_t header[2] = {t, i};
        f.ExpectOk(pair.client->Send(pair.client_to_server, 9, std::as_bytes(std::span(header)),
                                     payload_of(t, i)),
                   fmt::format("thread {} Send {}", t, i));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  f.Expect(sig.WaitUntil([&] { return total >= kThreads * kPerThread; }),
           "not all concurrent messages arrived");
  return f.Result();
}

core::Status CheckAmPingPongInHandler(const AmTransportFactory& make, uint64_t seed) {
  constexpr uint64_t kRounds = 1000;
  AmFailures f;
  AmSignal sig;
  uint64_t last_round = 0;
  auto payload_bytes = [](uint64_t round) { return round % 100 == 50 ? kMiB : 2048; };
  auto install = [&](AmTransport& t, uint16_t my_id, uint16_t reply_id) {
    t.SetHandler(my_id,
                 [&, my_id, reply_id, ptr = &t](PeerId from, std::span<const std::byte> header,
                                                std::span<const std::byte> payload) {
                   const uint64_t round = ReadU64(header);
                   f.Expect(payload.size() == payload_bytes(round),
                            fmt::format("round {}: payload {} bytes", round, payload.size()));
                   f.Expect(payload.empty() || payload.back() == std::byte(round & 0xff),
                            fmt::format("round {}: payload content", round));
                   if (round >= kRounds) {
                     std::lock_guard<std::mutex> lock(sig.mu);
                     last_round = round;
                     sig.Notify();
                     return;
                   }
                   const uint64_t next = round + 1;
                   std::vector<std::byte> reply(payload_bytes(next), std::byte(next & 0xff));
                   f.ExpectOk(ptr->Send(from, reply_id, AsBytes(next), reply),
                              fmt::format("am {} replying round {}", my_id, next));
                 });
  };
  ASSIGN_OR_RETURN(AmPair pair, MakeAmPair(make, [&](AmTransport& server, AmTransport& client) {
                     install(server, 1, 2);
                     install(client, 2, 1);
                   }));
  (void)seed;
  const uint64_t first = 1;
  std::vector<std::byte> payload(payload_bytes(first), std::byte(first));
  f.ExpectOk(pair.client->Send(pair.client_to_server, 1, AsBytes(first), payload), "first ping");
  f.Expect(sig.WaitUntil([&] { return last_round >= kRounds; }),
           fmt::format("ping-pong stopped before round {}", kRounds));
  return f.Result();
}

core::Status CheckAmRegisterGet(const AmTransportFactory& make, uint64_t seed) {
  AmFailures f;
  AmSignal sig;
  const size_t kBytes = 8 * kMiB + 64;
  const std::vector<std::byte> source = AmTestBytes(seed, 1, kBytes);
  std::vector<std::byte> exposed = source;  // the registered copy
  int handler_gets = 0;
  AmTransport* client_ptr = nullptr;
  ASSIGN_OR_RETURN(AmPair pair, MakeAmPair(make, [&](AmTransport&, AmTransport& client) {
                     client_ptr = &client;
                     // The server ships (address, offset, bytes) in the header and the key as
                     // payload.
                     client.SetHandler(4, [&](PeerId from, std::span<const std::byte> header,
                                              std::span<const std::byte> key) {
                       const uint64_t base = ReadU64(header, 0), offset = ReadU64(header, 1),
                                      bytes = ReadU64(header, 2);
                       std::vector<std::byte> got(bytes);
                       f.ExpectOk(client_ptr->Get(from, key, base + offset, got.data(), bytes),
                                  "Get in handler");
                       f.Expect(std::memcmp(got.data(), source.data() + offset, bytes) == 0,
                                "Get in handler: bytes differ");
                       std::lock_guard<std::mutex> lock(sig.mu);
                       ++handler_gets;
                       sig.Notify();
                     });
                   }));
  ASSIGN_OR_RETURN(std::unique_ptr<RegisteredMemory> mem,
                   pair.server->RegisterMemory(exposed.data(), kBytes));
  f.Expect(mem->size_bytes() == kBytes, "size_bytes()");
  const std::vector<std::byte> key(mem->remote_key().begin(), mem->remote_key().end());
  auto check_get = [&](uint64_t offset, size_t bytes) {
    std::vector<std::byte> got(bytes, std::byte{0x5a});
    f.ExpectOk(
        pair.client->Get(pair.client_to_server, key, mem->address() + offset, got.data(), bytes),
        fmt::format("Get {} bytes at {}", bytes, offset));
    f.Expect(std::memcmp(got.data(), source.data() + offset, bytes) == 0,
             fmt::format("Get {} bytes at {}: bytes differ", bytes, offset));
  };
  const std::vector<std::pair<uint64_t, size_t>> cases = {
      {0, 1},          {1, 1},     {3, 7},        {100, 4096},    {4095, 65537},
      {kBytes - 1, 1}, {17, kMiB}, {0, 8 * kMiB}, {64, 8 * kMiB}, {kBytes - 3000, 3000}};
  for (const auto& [offset, bytes] : cases) check_get(offset, bytes);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      core::Rng rng = core::Rng(seed).Fork(50 + t);
      for (int i = 0; i < 16; ++i) {
        const size_t bytes = 1 + rng.Below(300000);
        check_get(rng.Below(kBytes - bytes + 1), bytes);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const uint64_t header[3] = {mem->address(), 12345, kMiB};
  f.ExpectOk(pair.server->Send(pair.server_to_client, 4, std::as_bytes(std::span(header)), key),
             "ship the key");
  f.Expect(sig.WaitUntil([&] { return handler_gets >= 1; }), "Get in handler did not finish");
  return f.Result();
}

}  // namespace tessera::comm::testing
