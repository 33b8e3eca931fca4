#include "kernelflume/route_store.h"

#include <fmt/format.h>

namespace tessera::kernelflume {

RouteStore::RouteStore(int64_t range_tokens_max)
    : current_(std::make_shared<const RoutingTable>(1, range_tokens_max)) {}

core::Status RouteStore::Install(std::shared_ptr<const RoutingTable> table) {
  if (table == nullptr) return core::InvalidArgument("route install: got no table");
  std::shared_ptr<const RoutingTable> expected = current_.load(std::memory_order_acquire);
  if (table->version() != expected->version() + 1) {
    return core::FailedPrecondition(
        fmt::format("route install: version {} does not follow the current version {} (rebuild "
                    "the delta from the current table)",
                    table->version(), expected->version()));
  }
  if (!current_.compare_exchange_strong(expected, std::move(table), std::memory_order_acq_rel)) {
    return core::FailedPrecondition(fmt::format(
        "route install: another install published version {} first", expected->version()));
  }
  return core::Status::Ok();
}

}  // namespace tessera::kernelflume
