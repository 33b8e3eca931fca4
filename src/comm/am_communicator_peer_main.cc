// am_communicator_peer: one rank of an AmCommunicator group on the ucx transport, a process of
// its own, for the test that SIGKILLs a rank mid-collective (am_communicator_process_test.cc).
// Test support, not installed.
//
// Usage: am_communicator_peer DIR WORLD_ID N VICTIM
// Ranks 0..N-1 listen on 127.0.0.1 (any port) and exchange addresses through files in DIR
// (DIR/addr.EPOCH.ID, written then renamed). After a checked AllReduceSum at epoch 1:
//  - the VICTIM writes "victim parked" to stderr and sleeps (the test kills it);
//  - every other rank writes "entering AllReduceSum" and blocks in one; it must fail with
//    Unavailable naming world rank VICTIM ("failed: <status>" on stderr). The survivors then
//    Reconfigure in place (epoch 2) and run every Communicator conformance check, then
//    RebuildPartial (epoch 3) and RebuildFull (epoch 4, new addresses through DIR), each
//    followed by a checked AllReduceSum, and write
//    "RESULT ok reconfigure_us=.. partial_us=.. full_us=.. detect_ms=.. failed_at_unix_s=.."
//    (measured; detect_ms counts from entering the AllReduceSum, failed_at_unix_s is the wall
//    clock when it failed, to compare with the time of the kill).
// Exit: 0 when every step passed, 1 when a check failed, 2 on a setup error, 3 when it gave up
// waiting (every process ends by itself after 120 s, so none outlives a crashed test).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "comm/am_communicator.h"
#include "comm/am_communicator_conformance.h"

namespace {

using tessera::core::Status;
using tessera::core::StatusOr;
using Clock = std::chrono::steady_clock;

constexpr double kWaitS = 60.0;

int Fail(int code, const std::string& what, const Status& status) {
  std::fprintf(stderr, "am_communicator_peer: %s: %s\n", what.c_str(), status.ToString().c_str());
  return code;
}

void Say(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

double Since(Clock::time_point t, double unit_per_s) {
  return std::chrono::duration<double>(Clock::now() - t).count() * unit_per_s;
}

// Publishes this rank's address for `epoch` and reads the addresses of `ids`.
StatusOr<tessera::comm::AmAddressBook> ExchangeAddresses(const std::string& dir, uint64_t epoch,
                                                         int id, const std::string& address,
                                                         const std::vector<int>& ids) {
  namespace fs = std::filesystem;
  const auto path = [&](int who) {
    return fs::path(dir) / ("addr." + std::to_string(epoch) + "." + std::to_string(who));
  };
  {
    const fs::path tmp = path(id).string() + ".tmp";
    std::ofstream(tmp) << address;
    fs::rename(tmp, path(id));
  }
  tessera::comm::AmAddressBook book;
  const auto give_up = Clock::now() + std::chrono::duration<double>(kWaitS);
  for (int who : ids) {
    for (;;) {
      std::ifstream in(path(who));
      std::string line;
      if (in && std::getline(in, line) && !line.empty()) {
        book[who] = line;
        break;
      }
      if (Clock::now() > give_up) {
        return tessera::core::DeadlineExceeded("no address from world rank " + std::to_string(who));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return book;
}

// A checked AllReduceSum of the members' world ids (+1).
Status CheckSum(tessera::comm::Communicator& comm) {
  std::vector<int64_t> v = {comm.world_rank() + 1};
  RETURN_IF_ERROR(comm.AllReduceSum(std::span<int64_t>(v)));
  int64_t want = 0;
  for (int w : comm.world_ranks()) want += w + 1;
  if (v[0] != want) {
    return tessera::core::Internal("AllReduceSum: got " + std::to_string(v[0]) + ", expected " +
                                   std::to_string(want));
  }
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera::comm;
  if (argc != 5) {
    std::fprintf(stderr, "usage: am_communicator_peer DIR WORLD_ID N VICTIM\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int id = std::atoi(argv[2]);
  const int n = std::atoi(argv[3]);
  const int victim = std::atoi(argv[4]);
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(120));
    std::fprintf(stderr, "am_communicator_peer: gave up after 120 s\n");
    _exit(3);
  }).detach();

  std::vector<int> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = i;
  auto transport = MakeAmTransport("ucx");
  if (!transport.ok()) return Fail(2, "transport", transport.status());
  auto world = AmWorld::Create(std::move(transport).value(), id, "127.0.0.1", 0);
  if (!world.ok()) return Fail(2, "AmWorld", world.status());
  auto book = ExchangeAddresses(dir, 1, id, (*world)->address(), ids);
  if (!book.ok()) return Fail(2, "address exchange", book.status());
  for (const auto& [who, address] : *book) (*world)->SetAddress(who, address);
  Status s = (*world)->ConnectMesh(ids, kWaitS);
  if (!s.ok()) return Fail(2, "ConnectMesh", s);
  auto made = AmCommunicator::Create(*world, ids, 1);
  if (!made.ok()) return Fail(2, "AmCommunicator", made.status());
  AmCommunicator& comm = **made;
  comm.set_op_timeout_s(kWaitS);  // a hang guard only
  s = CheckSum(comm);
  if (!s.ok()) return Fail(1, "AllReduceSum at epoch 1", s);

  if (id == victim) {
    Say("victim parked");
    std::this_thread::sleep_for(std::chrono::seconds(120));
    return 3;
  }
  std::vector<float> data(1 << 16, 1.0f);
  Say("entering AllReduceSum");
  const Clock::time_point entered = Clock::now();
  s = comm.AllReduceSum(std::span<float>(data));
  const double detect_ms = Since(entered, 1e3);  // includes the wait for the kill
  const double failed_at_unix_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  Say("failed: " + s.ToString());
  const std::string named = "world rank " + std::to_string(victim) + " (127.0.0.1:";
  if (s.code() != tessera::core::StatusCode::kUnavailable ||
      s.message().find(named) == std::string::npos) {
    return Fail(1, "the pending AllReduceSum did not fail naming the victim", s);
  }

  std::vector<int> survivors;
  for (int i : ids) {
    if (i != victim) survivors.push_back(i);
  }
  Clock::time_point t = Clock::now();
  s = comm.Reconfigure(survivors, 2);
  const double reconfigure_us = Since(t, 1e6);
  if (!s.ok()) return Fail(1, "Reconfigure", s);
  s = testing::RunConformance(comm, 2024);
  if (!s.ok()) return Fail(1, "conformance after Reconfigure", s);

  t = Clock::now();
  s = comm.RebuildPartial(survivors, 3, kWaitS);
  const double partial_us = Since(t, 1e6);
  if (!s.ok()) return Fail(1, "RebuildPartial", s);
  s = CheckSum(comm);
  if (!s.ok()) return Fail(1, "AllReduceSum after RebuildPartial", s);

  auto fresh = MakeAmTransport("ucx");
  if (!fresh.ok()) return Fail(2, "fresh transport", fresh.status());
  t = Clock::now();
  s = comm.RebuildFull(
      std::move(fresh).value(),
      [&](const std::string& address) { return ExchangeAddresses(dir, 4, id, address, survivors); },
      survivors, 4, kWaitS);
  const double full_us = Since(t, 1e6);
  if (!s.ok()) return Fail(1, "RebuildFull", s);
  s = CheckSum(comm);
  if (!s.ok()) return Fail(1, "AllReduceSum after RebuildFull", s);
  s = comm.Barrier();
  if (!s.ok()) return Fail(1, "final Barrier", s);
  Say("RESULT ok reconfigure_us=" + std::to_string(reconfigure_us) +
      " partial_us=" + std::to_string(partial_us) + " full_us=" + std::to_string(full_us) +
      " detect_ms=" + std::to_string(detect_ms) +
      " failed_at_unix_s=" + fmt::format("{:.6f}", failed_at_unix_s));
  return 0;
}
