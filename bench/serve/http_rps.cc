// Small-request throughput of HTTP servers, interleaved: for each round, each --url in turn
// gets --connections client threads, each sending GET --path (keep-alive, one request at a
// time; --close: a new connection per request) for --seconds; prints requests/s per url and round,
// the medians, and each url's median against the first one's. Validates first: every url must
// answer --path 200. The clients run on the same machine as the servers (the cores are shared: say
// so).
//   bench_http_rps --url http://127.0.0.1:8001 --url http://127.0.0.1:8002 [--rounds 5]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "serve/http_url.h"
#include "serve/raw_http.h"

namespace {

using tessera::serve::RawHttpConnection;

double RunClients(const std::string& host, int port, const std::string& path, int connections,
                  double seconds, bool close, int64_t* errors) {
  std::atomic<int64_t> done{0}, failed{0};
  std::atomic<bool> stop{false};
  const std::string request =
      fmt::format("GET {} HTTP/1.1\r\nHost: {}:{}\r\n\r\n", path, host, port);
  std::vector<std::thread> threads;
  for (int i = 0; i < connections; ++i) {
    threads.emplace_back([&] {
      while (!stop) {
        auto c = RawHttpConnection::Open(host, port, 30);
        if (!c.ok()) {
          ++failed;
          continue;
        }
        while (!stop) {
          if (!c->Send(request).ok()) break;
          auto r = c->ReadReply();
          if (!r.ok() || r->status != 200) {
            ++failed;
            break;
          }
          ++done;
          if (close || (r->headers.count("connection") && r->headers.at("connection") == "close")) {
            break;
          }
        }
      }
    });
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (std::thread& t : threads) t.join();
  *errors += failed;
  return static_cast<double>(done) / wall;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Small-request throughput of HTTP servers, interleaved runs");
  std::vector<std::string> urls;
  std::string path = "/healthz";
  int rounds = 5, connections = 8;
  double seconds = 5;
  bool close = false;
  app.add_option("--url", urls, "servers, http://HOST:PORT (repeat)")->required();
  app.add_option("--path", path, "GET path answered 200")->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved rounds")->capture_default_str();
  app.add_option("--connections", connections, "client threads")->capture_default_str();
  app.add_option("--seconds", seconds, "per url and round")->capture_default_str();
  app.add_flag("--close", close, "a new connection per request (Connection: close)");
  CLI11_PARSE(app, argc, argv);
  struct Target {
    std::string host;
    int port = 0;
    std::vector<double> rps;
  };
  std::vector<Target> targets;
  for (const std::string& u : urls) {
    Target t;
    if (auto s = tessera::serve::ParseHttpUrl(u, &t.host, &t.port); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    auto c = RawHttpConnection::Open(t.host, t.port, 10);
    if (!c.ok() ||
        !c->Send(fmt::format("GET {} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path))
             .ok()) {
      std::fprintf(stderr, "%s: cannot connect\n", u.c_str());
      return 1;
    }
    auto r = c->ReadReply();
    if (!r.ok() || r->status != 200) {
      std::fprintf(stderr, "%s%s: not answered 200\n", u.c_str(), path.c_str());
      return 1;
    }
    targets.push_back(t);
  }
  std::printf("measured on this machine: %d client threads share the cores with the servers; %s\n",
              connections, close ? "a new connection per request" : "keep-alive connections");
  int64_t errors = 0;
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < targets.size(); ++i) {
      const double rps =
          RunClients(targets[i].host, targets[i].port, path, connections, seconds, close, &errors);
      targets[i].rps.push_back(rps);
      std::printf("round %d  %s  %.0f requests/s\n", round + 1, urls[i].c_str(), rps);
      std::fflush(stdout);
    }
  }
  const double base = Median(targets[0].rps);
  for (size_t i = 0; i < targets.size(); ++i) {
    std::printf("median %s  %.0f requests/s  (%.3f x the first)\n", urls[i].c_str(),
                Median(targets[i].rps), Median(targets[i].rps) / base);
  }
  std::printf("errors: %lld\n", static_cast<long long>(errors));
  return 0;
}
