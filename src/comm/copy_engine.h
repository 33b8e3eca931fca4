// CopyEngine: one rank's emulated DMA engine. A thread that takes Put requests (copy `bytes`
// from local memory into a peer's symmetric memory, then raise a signal there), cuts each
// into packets of PacedLinks::packet_bytes wire bytes, reserves every packet's path in the
// LinkFabric, sleeps (no spinning) until the next packet's turn to be reserved or the next
// message's last arrival, copies every packet whose arrival time has passed and, after the
// last packet, bumps the message's signal counter (futex.h) so the receiver wakes. Only a
// message's last packet gets a wake-up of its own: no one reads the bytes before the signal,
// so the packets before it are copied on whichever wake-up follows their arrival (about one
// wake-up per packet instead of two, which lets packets be small).
//
// Streams, fairness and duplex: a rank's messages to one destination form a stream, sent one
// after another in submission order (a GPU copy stream), the next one's first packet queued
// right behind the previous one's last, and delivered (signals raised) in that order, so a
// receiver may count a stream's messages. Messages to different destinations run
// concurrently.
// The engine keeps at most one packet per message reserved ahead of the one on the wire: it
// reserves packet k+1 once packet k has started on its route's last resource, i.e. has passed
// every queue of its path (a real link's credit-based flow control lets a sender run only a
// few packets ahead of the bottleneck, wherever on the path it is). So concurrent flows
// interleave packet by packet on a shared resource (two flows get half each, even when one
// of them reaches it through a faster private link and started earlier), while flows on
// disjoint resources (the two directions of a link) proceed at full rate at once. Arrival
// times follow the fabric's virtual timeline, and a packet reserved late (the thread woke up
// after its turn) starts where it would have had the thread woken on time, so this machine's
// scheduler delays move copies, never the timeline.
//
// The first packet of a message may start on the wire as early as the message was submitted
// (if its resources were free then), not when the engine thread woke up to reserve it: a DMA
// starts when it is issued. With Put::ready_ns it may start as early as its data were ready
// on the timeline, even if the sender's thread submitted it later: on the device a forward
// is issued within a microsecond of the data's arrival, while a thread here may wake tens of
// microseconds late, and those delays would otherwise add up hop after hop.
//
// Wake-up lead: a timed sleep on this machine wakes some tens of microseconds late (timer
// slack is set to 1 ns, the rest is the kernel's and the hypervisor's). The engine measures
// the median overshoot of a few short sleeps and half the median round trip of a futex
// signal (the receiver's wake-up) when it starts, and delivers that much early (at most
// 300 us), so that a receiver sees the data at its arrival time on average instead of
// always late (wake_lead_ns(), reported).
//
// Wire bytes vs bytes: a message moves `bytes` real bytes but is paced as `wire_bytes` (the
// training dtype's width: fp32 math, bf16 on the wire), so comm:compute ratios match the
// emulated machine.
//
// Ownership and lifetime: the source must stay unchanged and the destination reserved until
// the message is done (WaitAllDone, or the receiver's signal). The destructor finishes every
// submitted message, then stops the thread. Thread-safety: Submit/WaitAllDone/stats may be
// called from any thread; one engine per rank.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/link_fabric.h"

namespace tessera::comm {

class CopyEngine {
 public:
  struct Put {
    int dst_endpoint = 0;                     // the fabric endpoint (rank) receiving the bytes
    std::byte* dst = nullptr;                 // in the receiver's symmetric memory
    const std::byte* src = nullptr;           // local, stable until done
    int64_t bytes = 0;                        // real bytes copied (>= 0)
    int64_t wire_bytes = 0;                   // bytes paced on the wire (>= 0)
    std::atomic<uint32_t>* signal = nullptr;  // bumped by 1 when done (may be null)
    // Bumped by 1 right after `signal` (may be null): a receiver that expects messages on
    // several signals waits on this one for whichever comes first.
    std::atomic<uint32_t>* wake = nullptr;
    // The first packet starts on the wire no earlier than this (NowNs clock): a transfer
    // scheduled ahead is reserved on the timeline at once, so the engine's wake-up jitter
    // does not delay its start. 0: as soon as submitted.
    int64_t not_before_ns = 0;
    // The data were ready at this time of the fabric's timeline (NowNs clock; may be in the
    // past): the first packet may start then rather than when Submit was called, so a sender
    // that woke up late to forward data (this machine's scheduler, not the emulated device)
    // does not delay the timeline. Give the arrival time of the data it forwards (see
    // arrival_stamp) and the time its own inputs were complete. 0: as soon as submitted.
    int64_t ready_ns = 0;
    // When done, raised to at least the message's arrival time on the timeline (its last
    // packet's) before the signal is bumped, so the receiver knows when its data arrived.
    // May be null.
    std::atomic<int64_t>* arrival_stamp = nullptr;
    int64_t submitted_ns = 0;  // set by Submit
  };
  struct Stats {
    int64_t messages = 0;
    int64_t packets = 0;
    int64_t wire_bytes = 0;
    int64_t cpu_ns = 0;        // CPU time of the engine thread so far
    int64_t late_wake_ns = 0;  // total lateness of packet copies past their arrival time
    int64_t wakeups = 0;       // passes of the engine thread's loop (each follows a wake-up)
  };

  // `self_endpoint` is this rank's endpoint in the fabric. The fabric must outlive the engine.
  CopyEngine(LinkFabric* fabric, int self_endpoint);
  ~CopyEngine();
  CopyEngine(const CopyEngine&) = delete;
  CopyEngine& operator=(const CopyEngine&) = delete;

  int self_endpoint() const { return self_; }
  LinkFabric& fabric() const { return *fabric_; }
  // Queues a message (dst_endpoint != self). Returns at once.
  void Submit(const Put& put);
  // Waits until every message submitted so far is done; false at the deadline (NowNs clock).
  bool WaitAllDone(int64_t deadline_ns);
  Stats stats() const;
  // How early the engine wakes for a packet (the measured median sleep overshoot).
  int64_t wake_lead_ns() const { return wake_lead_ns_.load(std::memory_order_relaxed); }
  // Replaces the lead (e.g. with one calibrated on this machine under load; clamped to
  // [0, 1 ms]).
  void set_wake_lead_ns(int64_t lead_ns);

 private:
  struct Active;
  // The engine thread: per wake-up, take the submitted puts, reserve, deliver, retire, sleep.
  void Loop();
  // Loop's phases, over the engine thread's own state.
  struct LoopState;
  // Moves the submitted puts to the active messages; false once stopped with none left.
  bool TakeSubmitted(LoopState& s);
  // Gives every stream head whose turn has come (at `now`) its next packet on the timeline.
  void ReservePackets(LoopState& s, int64_t now);
  // Copies every packet due by now + lead; returns the messages that finished.
  int64_t DeliverDue(LoopState& s, int64_t lead);
  // The next wake-up: a finished-reserving message's arrival (less the lead) or a stream
  // head's reservation turn; kNoDeadline when nothing waits.
  int64_t NextWakeNs(LoopState& s, int64_t lead);

  LinkFabric* fabric_;
  int self_;
  std::atomic<int64_t> wake_lead_ns_{0};
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // new work or stop
  std::condition_variable done_cv_;  // a message finished
  std::deque<Put> queue_;
  uint64_t submitted_ = 0, finished_ = 0;
  bool stop_ = false;
  Stats stats_;
  std::thread thread_;
};

}  // namespace tessera::comm
