// am_pingpong_bench: AmTransport round-trip latency and Get bandwidth, fake vs ucx.
//
// Latency: a client and a server transport in this process; the server's handler echoes every
// message and the client's handler sends the next ping as soon as the echo arrives, so a round
// is transport + handler dispatch on both sides (no caller thread in the loop). Every echo is
// validated (round number and payload bytes) in a first pass; the timed pass then records each
// round with steady_clock. Reports p50/p99 in microseconds over --rounds rounds after --warmup.
// Bandwidth: Get of 8 MiB from the server's registered memory; the bytes are compared with the
// source first, then --gets Gets are timed one by one; reports the median in GB/s (10^9 B/s).
// Both transports live in one process: 4 threads (2 per ucx transport) share this machine's
// cores, which the header line states. Measured on the machine it runs on.
//
// Usage: bench_am_pingpong [--rounds 5000] [--warmup 300] [--gets 20]
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/am_transport.h"
#include "core/stats.h"

namespace tessera::comm {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  int rounds = 5000;
  int warmup = 300;
  int gets = 20;
};

std::byte PatternByte(uint64_t round, size_t i) { return std::byte((round * 31 + i * 7) & 0xff); }

// A connected client/server pair where the server echoes am 1 back as am 2.
struct Pair {
  std::unique_ptr<AmTransport> server, client;
  PeerId to_server = 0;
};

core::StatusOr<Pair> MakePair(const std::string& backend) {
  Pair p;
  ASSIGN_OR_RETURN(p.server, MakeAmTransport(backend));
  ASSIGN_OR_RETURN(p.client, MakeAmTransport(backend));
  AmTransport* server = p.server.get();
  server->SetHandler(1, [server](PeerId from, std::span<const std::byte> header,
                                 std::span<const std::byte> payload) {
    (void)server->Send(from, 2, header, payload);
  });
  RETURN_IF_ERROR(p.server->Listen("127.0.0.1", 0));
  ASSIGN_OR_RETURN(p.to_server, p.client->Connect(p.server->address(), 30.0));
  return p;
}

// Runs `rounds` handler-driven ping-pongs with `payload_bytes` of payload; returns each round's
// time in seconds, or an error if an echo was wrong (when validating) or missing.
core::StatusOr<std::vector<double>> PingPong(Pair& p, int rounds, size_t payload_bytes,
                                             bool validate) {
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::string error;
  std::vector<double> round_s(rounds);
  std::vector<Clock::time_point> sent(rounds + 1);
  auto make_payload = [&](uint64_t round) {
    std::vector<std::byte> payload(payload_bytes);
    for (size_t i = 0; i < payload_bytes; ++i) payload[i] = PatternByte(round, i);
    return payload;
  };
  std::vector<std::byte> fixed = make_payload(0);
  AmTransport* client = p.client.get();
  const PeerId to = p.to_server;
  client->SetHandler(2, [&](PeerId, std::span<const std::byte> header,
                            std::span<const std::byte> payload) {
    const auto now = Clock::now();
    uint64_t round = 0;
    if (header.size() == sizeof(round)) std::memcpy(&round, header.data(), sizeof(round));
    if (round >= static_cast<uint64_t>(rounds)) return;
    if (validate) {
      const std::vector<std::byte> want = make_payload(round);
      if (payload.size() != want.size() ||
          (!want.empty() && std::memcmp(payload.data(), want.data(), want.size()) != 0)) {
        std::lock_guard<std::mutex> lock(mu);
        error = fmt::format("round {}: the echo's payload differs", round);
      }
    }
    round_s[round] = std::chrono::duration<double>(now - sent[round]).count();
    const uint64_t next = round + 1;
    if (static_cast<int>(next) < rounds) {
      const std::vector<std::byte> payload_next = validate ? make_payload(next) : fixed;
      sent[next] = Clock::now();
      const core::Status s = client->Send(to, 1, std::as_bytes(std::span(&next, 1)), payload_next);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        error = s.ToString();
        done = rounds;
        cv.notify_all();
        return;
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    done = static_cast<int>(next);
    cv.notify_all();
  });
  const uint64_t first = 0;
  const std::vector<std::byte> payload0 = make_payload(0);
  sent[0] = Clock::now();
  RETURN_IF_ERROR(p.client->Send(to, 1, std::as_bytes(std::span(&first, 1)), payload0));
  std::unique_lock<std::mutex> lock(mu);
  if (!cv.wait_for(lock, std::chrono::seconds(60), [&] { return done >= rounds; })) {
    return core::Internal(fmt::format("ping-pong stalled after {} of {} rounds", done, rounds));
  }
  if (!error.empty()) return core::Internal(error);
  return round_s;
}

// Median Get bandwidth (bytes/s) for `bytes` from the server's registered memory.
core::StatusOr<double> GetBandwidth(Pair& p, size_t bytes, int gets) {
  std::vector<std::byte> source(bytes);
  for (size_t i = 0; i < bytes; ++i) source[i] = PatternByte(99, i);
  ASSIGN_OR_RETURN(std::unique_ptr<RegisteredMemory> mem,
                   p.server->RegisterMemory(source.data(), bytes));
  const std::vector<std::byte> key(mem->remote_key().begin(), mem->remote_key().end());
  std::vector<std::byte> local(bytes);
  RETURN_IF_ERROR(p.client->Get(p.to_server, key, mem->address(), local.data(), bytes));
  if (local != source) return core::Internal("Get returned different bytes");
  std::vector<double> bw;
  for (int i = 0; i < gets; ++i) {
    const auto t0 = Clock::now();
    RETURN_IF_ERROR(p.client->Get(p.to_server, key, mem->address(), local.data(), bytes));
    bw.push_back(static_cast<double>(bytes) /
                 std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return core::Median(bw);
}

int Run(const Args& a) {
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  fmt::print(
      "AmTransport ping-pong and Get, measured on {} ({} cores online); client and server "
      "transports in one process (ucx: 4 threads)\n\n",
      host, std::thread::hardware_concurrency());
  fmt::print("| backend | measure | size | p50 | p99 | unit |\n|---|---|---|---|---|---|\n");
  for (const std::string backend : {"fake", "ucx"}) {
    auto pair = MakePair(backend);
    if (!pair.ok()) {
      fmt::print(stderr, "{}: {}\n", backend, pair.status().ToString());
      return 1;
    }
    for (size_t payload : {size_t{8}, size_t{1024}}) {
      auto checked = PingPong(*pair, 200, payload, /*validate=*/true);
      if (!checked.ok()) {
        fmt::print(stderr, "{}: validation failed: {}\n", backend, checked.status().ToString());
        return 1;
      }
      auto timed = PingPong(*pair, a.warmup + a.rounds, payload, /*validate=*/false);
      if (!timed.ok()) {
        fmt::print(stderr, "{}: {}\n", backend, timed.status().ToString());
        return 1;
      }
      const std::span<const double> rounds = std::span(*timed).subspan(a.warmup);
      fmt::print("| {} | AM round trip | 8 B header + {} B | {:.1f} | {:.1f} | us |\n", backend,
                 payload, core::Percentile(rounds, 50) * 1e6, core::Percentile(rounds, 99) * 1e6);
    }
    auto bw = GetBandwidth(*pair, size_t{8} << 20, a.gets);
    if (!bw.ok()) {
      fmt::print(stderr, "{}: Get: {}\n", backend, bw.status().ToString());
      return 1;
    }
    fmt::print("| {} | Get bandwidth (median of {}) | 8 MiB | {:.2f} | - | GB/s |\n", backend,
               a.gets, *bw / 1e9);
  }
  return 0;
}

}  // namespace
}  // namespace tessera::comm

int main(int argc, char** argv) {
  tessera::comm::Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (k == "--rounds" && v > 0) {
      a.rounds = v;
    } else if (k == "--warmup" && v >= 0) {
      a.warmup = v;
    } else if (k == "--gets" && v > 0) {
      a.gets = v;
    } else {
      fmt::print(stderr, "bench_am_pingpong: {} {}: unknown option or bad value\n", k, argv[i + 1]);
      return 1;
    }
  }
  return tessera::comm::Run(a);
}
