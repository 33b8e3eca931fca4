#include "elaswave/comm_bench_peer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <thread>

#include "comm/am_communicator.h"
#include "core/output_file.h"
#include "elaswave/gloo_rebuild.h"
#include "elaswave/job_config.h"

namespace tessera::elaswave {
namespace {

// The survivors' barrier group (untimed alignment before each change); the measured
// communicator is group 0.
constexpr uint64_t kCommBenchSyncGroup = 1;

// Publishes this peer's address for `epoch` and waits for the addresses of `ids` (a barrier
// over them: it returns once every one has published).
core::StatusOr<comm::AmAddressBook> CommBenchExchangeAddresses(const CommBenchPeerOptions& o,
                                                               uint64_t epoch,
                                                               const std::string& address,
                                                               const std::vector<int>& ids) {
  RETURN_IF_ERROR(core::WriteFileAtomically(CommBenchAddressPath(o.dir, epoch, o.id), address));
  comm::AmAddressBook book;
  const auto give_up = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(o.timeout_s));
  for (int who : ids) {
    for (;;) {
      std::ifstream in(CommBenchAddressPath(o.dir, epoch, who));
      std::string line;
      if (in && std::getline(in, line) && !line.empty()) {
        book[who] = line;
        break;
      }
      if (std::chrono::steady_clock::now() > give_up) {
        return core::DeadlineExceeded(
            fmt::format("address exchange at epoch {}: no address from world rank {} after {} s",
                        epoch, who, o.timeout_s));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return book;
}

// The test hook (see the header): what this peer adds to its contribution after `mode`.
int64_t CommBenchSkew(const CommBenchPeerOptions& o, CommChangeMode mode,
                      const std::vector<int>& survivors) {
  const char* after = std::getenv("TESSERA_COMM_BENCH_BAD_SUM_AFTER");
  if (after == nullptr || after != std::string(CommChangeModeName(mode))) return 0;
  return o.id == survivors.front() ? 1000 : 0;
}

// An AllReduceSum of (world id + 1) (+ skew) over the communicator, checked against the
// members' sum.
core::Status CommBenchCheckedSum(comm::Communicator& c, const char* when, int64_t skew = 0) {
  std::vector<int64_t> v = {c.world_rank() + 1 + skew};
  RETURN_IF_ERROR(c.AllReduceSum(std::span<int64_t>(v)).WithPrefix(when));
  int64_t want = 0;
  for (int w : c.world_ranks()) want += w + 1;
  if (v[0] != want) {
    return core::Internal(fmt::format("{}: AllReduceSum gave {}, expected {}", when, v[0], want));
  }
  return core::Status::Ok();
}

[[noreturn]] void CommBenchPark() {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

struct CommBenchPeerReport {
  bool ok = false;
  std::string error;
  double detect_at_s = -1;
  std::string detect_error;
  double steady_s = -1;
  core::Json seconds = core::Json::object();
  core::Json call_seconds = core::Json::object();
};

void CommBenchWriteReport(const CommBenchPeerOptions& o, const CommBenchPeerReport& r) {
  const core::Json j = {{"id", o.id},
                        {"ok", r.ok},
                        {"error", r.error},
                        {"detect_at_s", r.detect_at_s},
                        {"detect_error", r.detect_error},
                        {"steady_s", r.steady_s},
                        {"seconds", r.seconds},
                        {"call_seconds", r.call_seconds}};
  const core::Status s = core::WriteFileAtomically(CommBenchResultPath(o.dir, o.id), j.dump());
  if (!s.ok()) std::fprintf(stderr, "comm-bench-peer %d: %s\n", o.id, s.ToString().c_str());
}

// Runs one change of `mode` at `epoch` and the checked collective after it; returns the seconds
// of the change's call alone (for gloo: up to the connected mesh).
core::StatusOr<double> CommBenchChange(const CommBenchPeerOptions& o, CommChangeMode mode,
                                       uint64_t epoch, comm::AmCommunicator& c,
                                       const std::vector<int>& survivors) {
  const int64_t skew = CommBenchSkew(o, mode, survivors);
  const double start = MonotonicSeconds();
  switch (mode) {
    case CommChangeMode::kInPlace: {
      RETURN_IF_ERROR(c.Reconfigure(survivors, epoch).WithPrefix("Reconfigure"));
      const double call_s = MonotonicSeconds() - start;
      RETURN_IF_ERROR(CommBenchCheckedSum(c, "after Reconfigure", skew));
      return call_s;
    }
    case CommChangeMode::kPartial: {
      RETURN_IF_ERROR(c.RebuildPartial(survivors, epoch, o.timeout_s).WithPrefix("RebuildPartial"));
      const double call_s = MonotonicSeconds() - start;
      RETURN_IF_ERROR(CommBenchCheckedSum(c, "after RebuildPartial", skew));
      return call_s;
    }
    case CommChangeMode::kFull: {
      ASSIGN_OR_RETURN(auto fresh, comm::MakeAmTransport("ucx"));
      RETURN_IF_ERROR(c.RebuildFull(
                           std::move(fresh),
                           [&](const std::string& address) {
                             return CommBenchExchangeAddresses(o, epoch, address, survivors);
                           },
                           survivors, epoch, o.timeout_s)
                          .WithPrefix("RebuildFull"));
      const double call_s = MonotonicSeconds() - start;
      RETURN_IF_ERROR(CommBenchCheckedSum(c, "after RebuildFull", skew));
      return call_s;
    }
    case CommChangeMode::kGloo: {
      const auto me = std::find(survivors.begin(), survivors.end(), o.id);
      const int rank = static_cast<int>(me - survivors.begin());
      const std::string store =
          CommBenchGlooStorePath(std::filesystem::path(o.dir).parent_path().string());
      ASSIGN_OR_RETURN(
          const GlooAllReduceResult r,
          GlooFreshAllReduce(store, o.gloo_prefix, rank, static_cast<int>(survivors.size()),
                             o.id + 1 + skew, o.timeout_s));
      int64_t want = 0;
      for (int w : survivors) want += w + 1;
      if (r.sum != want) {
        return core::Internal(fmt::format("gloo allreduce gave {}, expected {}", r.sum, want));
      }
      return r.connect_s;
    }
  }
  return core::Internal("unknown mode");
}

}  // namespace

std::string CommBenchAddressPath(const std::string& dir, uint64_t epoch, int id) {
  return fmt::format("{}/addr.{}.{}", dir, epoch, id);
}
std::string CommBenchReadyPath(const std::string& dir, int id) {
  return fmt::format("{}/ready.{}", dir, id);
}
std::string CommBenchResultPath(const std::string& dir, int id) {
  return fmt::format("{}/result.{}.json", dir, id);
}
std::string CommBenchGlooStorePath(const std::string& run_dir) { return run_dir + "/gloo-store"; }

int RunCommBenchPeer(const CommBenchPeerOptions& o) {
  const double guard_s = 2 * o.timeout_s + 30;
  std::thread([guard_s, id = o.id] {
    std::this_thread::sleep_for(std::chrono::duration<double>(guard_s));
    std::fprintf(stderr, "comm-bench-peer %d: ended itself after %.0f s\n", id, guard_s);
    _exit(3);
  }).detach();
  const auto setup_error = [&](const char* what, const core::Status& s) {
    std::fprintf(stderr, "comm-bench-peer %d: %s: %s\n", o.id, what, s.ToString().c_str());
    return 2;
  };
  CommBenchPeerReport report;
  const auto check_failed = [&](const core::Status& s) {
    report.ok = false;
    report.error = s.ToString();
    std::fprintf(stderr, "comm-bench-peer %d: %s\n", o.id, report.error.c_str());
    CommBenchWriteReport(o, report);
    return 1;
  };
  if (o.ranks < 2 || o.id < 0 || o.id >= o.ranks || o.victim < 0 || o.victim >= o.ranks) {
    return setup_error("options", core::InvalidArgument(fmt::format(
                                      "id {}, victim {} and ranks {} do not fit together", o.id,
                                      o.victim, o.ranks)));
  }
  std::vector<int> all(static_cast<size_t>(o.ranks));
  std::iota(all.begin(), all.end(), 0);

  // The mesh of all N, and the warm-up.
  auto transport = comm::MakeAmTransport("ucx");
  if (!transport.ok()) return setup_error("transport", transport.status());
  auto world = comm::AmWorld::Create(std::move(transport).value(), o.id, "127.0.0.1", 0);
  if (!world.ok()) return setup_error("AmWorld", world.status());
  auto book = CommBenchExchangeAddresses(o, 0, (*world)->address(), all);
  if (!book.ok()) return setup_error("address exchange", book.status());
  for (const auto& [who, address] : *book) (*world)->SetAddress(who, address);
  core::Status s = (*world)->ConnectMesh(all, o.timeout_s);
  if (!s.ok()) return setup_error("ConnectMesh", s);
  auto made = comm::AmCommunicator::Create(*world, all, 0);
  if (!made.ok()) return setup_error("AmCommunicator", made.status());
  comm::AmCommunicator& c = **made;
  c.set_op_timeout_s(o.timeout_s);  // a hang guard only
  s = CommBenchCheckedSum(c, "warm-up");
  if (!s.ok()) return check_failed(s);
  s = core::WriteFileAtomically(CommBenchReadyPath(o.dir, o.id), "ready\n");
  if (!s.ok()) return setup_error("ready file", s);
  if (o.id == o.victim) CommBenchPark();  // the bench kills it

  // The death: a pending collective must fail with Unavailable naming the victim.
  std::vector<int64_t> pending = {o.id + 1};
  s = c.AllReduceSum(std::span<int64_t>(pending));
  report.detect_at_s = MonotonicSeconds();
  report.detect_error = s.ToString();
  const std::string named = fmt::format("world rank {} (", o.victim);
  if (s.code() != core::StatusCode::kUnavailable || s.message().find(named) == std::string::npos) {
    return check_failed(core::FailedPrecondition(
        fmt::format("the pending AllReduceSum did not fail with Unavailable naming world rank "
                    "{}: it returned {}",
                    o.victim, s.ToString())));
  }

  std::vector<int> survivors;
  for (int w : all) {
    if (w != o.victim) survivors.push_back(w);
  }
  auto sync = comm::AmCommunicator::Create(*world, survivors, 0, kCommBenchSyncGroup);
  if (!sync.ok()) return setup_error("the survivors' barrier communicator", sync.status());
  (*sync)->set_op_timeout_s(o.timeout_s);
  // The floor: a steady collective over the survivors on connections that are up.
  s = (*sync)->Barrier();
  if (!s.ok()) return check_failed(s.WithPrefix("barrier before the steady collective"));
  const double steady_start = MonotonicSeconds();
  s = CommBenchCheckedSum(**sync, "steady AllReduceSum of the survivors");
  report.steady_s = MonotonicSeconds() - steady_start;
  if (!s.ok()) return check_failed(s);
  uint64_t epoch = 0;
  for (CommChangeMode mode : OrderedCommChangeModes(o.modes)) {
    s = (*sync)->Barrier();  // aligns the survivors; not timed
    if (!s.ok()) {
      return check_failed(s.WithPrefix(fmt::format("barrier before {}", CommChangeModeName(mode))));
    }
    const double start = MonotonicSeconds();
    const core::StatusOr<double> call_s = CommBenchChange(o, mode, ++epoch, c, survivors);
    const double seconds = MonotonicSeconds() - start;
    if (!call_s.ok()) return check_failed(call_s.status().WithPrefix(CommChangeModeName(mode)));
    report.seconds[CommChangeModeName(mode)] = seconds;
    report.call_seconds[CommChangeModeName(mode)] = *call_s;
  }
  s = (*sync)->Barrier();
  if (!s.ok()) return check_failed(s.WithPrefix("final barrier"));
  report.ok = true;
  CommBenchWriteReport(o, report);
  CommBenchPark();  // the bench stops every peer once it has every report
}

}  // namespace tessera::elaswave
