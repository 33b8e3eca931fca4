// RouteStore: the current routing-table snapshot, published atomically. Writers (the router,
// one at a time) Install a table built from the current one (version + 1); readers (each decode
// step, the metrics and admin routes) take Current() once at a token boundary and use that one
// snapshot for the whole step, so a step never sees half of an update.
//
// Install refuses a table whose version is not current + 1 (FailedPrecondition: another
// install raced it, or it was built from a stale base); publishing is a single atomic store of
// a shared_ptr, and old snapshots live on until their last reader drops them.
// Thread-safety: Current() from any thread; Install from one writer at a time (checked).
#pragma once

#include <atomic>
#include <memory>

#include "core/status.h"
#include "kernelflume/routing_table.h"

namespace tessera::kernelflume {

class RouteStore {
 public:
  // Starts at an empty version-1 table.
  explicit RouteStore(int64_t range_tokens_max);

  std::shared_ptr<const RoutingTable> Current() const {
    return current_.load(std::memory_order_acquire);
  }
  [[nodiscard]] core::Status Install(std::shared_ptr<const RoutingTable> table);

 private:
  std::atomic<std::shared_ptr<const RoutingTable>> current_;
};

}  // namespace tessera::kernelflume
