// The control-plane messages between ElasWave's workers and its coordinator (the process that,
// like TorchFT's Lighthouse, watches heartbeats, decides epochs and gathers commit votes), and
// their wire form: one JSON object per active message on the comm transport (am id
// kControlAmId). No new dependency; the messages are small and rare (heartbeats every 100 ms).
//
// Worker -> coordinator:
//   register   {world, address, pid, epoch, complete_step}  once per connection (a restarted
//              coordinator rebuilds its state from these)
//   heartbeat  {world, epoch, step}                          every heartbeat period
//   lost       {world, epoch, peer, why}                     a peer's connection failed
//   ready      {world, epoch, digest, spare, why}            recovered to the plan of `epoch`
//              (`spare`: it computes nothing in it; digest 0 + why: the plan is unrecoverable)
//   vote       {world, epoch, step, digest}                  gradients of `step` are reduced
//   snapshot   {world, epoch, step}                          state after `step` is saved
//   done       {world, epoch, step, digest}                  ran every step; `digest` of its params
// Coordinator -> worker:
//   roster     {epoch, addresses, dead, complete_step}       everyone registered: start at
//              complete_step + 1 (fresh job: complete_step = -1)
//   abort      {epoch, dead, complete_step, digest}          ranks died: stop, recover to the plan
//              of `epoch` (its digest), then redo from complete_step + 1
//   resume     {epoch, step}                                 every live worker is ready: go
//   commit     {epoch, step, complete_step}                  every live worker voted alike
//   shutdown   {code, reason}                                the job ends (code 0: finished)
// Every message carries the sender's epoch; a receiver drops a message of an older epoch than
// its own (fencing) and counts it.
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>

#include "core/status.h"

namespace tessera::elaswave {

inline constexpr uint16_t kControlAmId = 0x4557;  // "EW"

enum class ControlKind {
  kRegister,
  kHeartbeat,
  kLost,
  kReady,
  kVote,
  kSnapshot,
  kDone,
  kRoster,
  kAbort,
  kResume,
  kCommit,
  kShutdown
};
std::string ControlKindName(ControlKind k);

struct ControlMessage {
  ControlKind kind = ControlKind::kHeartbeat;
  int world = -1;  // the worker it is from (worker -> coordinator)
  int64_t epoch = 0;
  int64_t step = -1;
  int64_t complete_step = -1;
  uint64_t digest = 0;
  int peer = -1;                         // lost
  int64_t pid = 0;                       // register
  std::string address;                   // register
  std::string why;                       // lost, shutdown
  int code = 0;                          // shutdown
  bool spare = false;                    // ready
  std::set<int> dead;                    // roster, abort
  std::map<int, std::string> addresses;  // roster

  bool operator==(const ControlMessage&) const = default;
};

std::string EncodeControl(const ControlMessage& m);
// The bytes of an encoded message, as the transport sends them.
inline std::span<const std::byte> WireBytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
// InvalidArgument naming what is wrong for a message that is not one of the above.
core::StatusOr<ControlMessage> DecodeControl(const std::string& bytes);

}  // namespace tessera::elaswave
