// A discrete-event simulation of serving a request stream under a serving plan
// (xema/serve/serving_plan.h), on the shared event engine sim::EventQueue: what the planner
// scores configurations with, instead of serving each for real (Vidur's idea for LLM serving).
//
// Model (the server's rules, xema/serve/server.h):
//   - one FIFO queue of at most queue_capacity waiting requests; an arrival that finds it
//     full is rejected (the server's 429);
//   - strict FCFS admission by PlanAdmission (the server's own code): the head starts on the
//     least busy device that admits it (concurrency per entry, arena placed first fit in the
//     device's region; a fallback request alone), else everything waits;
//   - a device is one core shared by its requests in flight (processor sharing): with a set S
//     of n >= 2 in flight each progresses at f(S) / n seconds of its solo work per second,
//     where f(S) is the mean over the pairs {a, b} of S of pair_speedup[class a][class b], the
//     measured aggregate throughput of two such requests on one core relative to one (two
//     heavy requests thrash the caches more than a heavy and a light one); alone, at 1. An
//     empty pair_speedup means 1 for every pair (ideal sharing);
//   - a request of an entry with SP degree d > 1 holds one slot on each of the d devices of
//     its replica group (PlanAdmission) and advances at the slowest of their shares (its
//     members synchronise at every all-to-all); its work_s is its time on d devices;
//   - an entry of batch b > 1: an admitted head takes up to b - 1 more queued requests of its
//     entry into its run (BatchMates, the server's rule); the run holds one slot, its work is
//     batch_work_s[entry][k - 1] for a batch of k, and every request of it finishes at its end;
//   - latency = finish - arrival + overhead_s (the server's HTTP and parsing time).
// Errors: InvalidArgument for bad options, an entry whose SP degree does not divide the devices
// or whose batch > 1 has no batch_work_s, an arrival routed outside the plan. Deterministic.
// Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "xema/serve/serving_plan.h"

namespace tessera::xema {

struct ServingSimOptions {
  int devices = 1;
  int64_t region_bytes = 0;  // per device: the budget less the plan's weights
  int queue_capacity = 64;
  // Symmetric, one row per request class (SimArrival::template_index); or empty.
  std::vector<std::vector<double>> pair_speedup;
  double overhead_s = 0;
  // Per plan entry (needed for entries of batch > 1): [k - 1] = solo seconds of a run of a
  // batch of k requests of it (a batch of 1 takes its arrival's work_s).
  std::vector<std::vector<double>> batch_work_s;
};

struct SimArrival {
  double at_s = 0;
  Route route;
  int template_index = 0;  // its class in pair_speedup, and for the caller's statistics
  double work_s = 0;       // the request's solo seconds (its template and mitigations)
};

struct SimRequest {
  bool rejected = false;  // the queue was full
  bool served = false;    // finished (false also for a request no device can ever admit)
  int device = -1;        // the first device (of an SP gang)
  double start_s = 0, finish_s = 0, latency_s = 0;
};

// One SimRequest per arrival, in arrival order.
core::StatusOr<std::vector<SimRequest>> SimulateServing(const ServingPlan& plan,
                                                        const ServingSimOptions& options,
                                                        const std::vector<SimArrival>& arrivals);

}  // namespace tessera::xema
