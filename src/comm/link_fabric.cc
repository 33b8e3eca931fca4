#include "comm/link_fabric.h"

#include <pthread.h>

#include <algorithm>
#include <cmath>

#include "comm/futex.h"

namespace tessera::comm {

struct LinkFabric::Table {
  pthread_mutex_t mutex;
  int64_t next_free_ns[PacedLinks::kMaxResources];
};

LinkFabric::LinkFabric(PacedLinks links, std::unique_ptr<SymmetricMemory> memory)
    : links_(std::move(links)), memory_(std::move(memory)) {
  table_ = reinterpret_cast<Table*>(memory_->segment(0));
  for (const PacedResource& r : links_.resources) ns_per_byte_.push_back(1e9 / r.bytes_per_s);
}

LinkFabric::LinkFabric(PacedLinks links, std::unique_ptr<Table> local)
    : links_(std::move(links)), local_(std::move(local)) {
  table_ = local_.get();
  for (const PacedResource& r : links_.resources) ns_per_byte_.push_back(1e9 / r.bytes_per_s);
}

LinkFabric::~LinkFabric() {
  if (local_ != nullptr) pthread_mutex_destroy(&local_->mutex);
}

StatusOr<std::unique_ptr<LinkFabric>> LinkFabric::Create(Communicator& comm, PacedLinks links) {
  RETURN_IF_ERROR(Validate(links));
  if (links.num_endpoints != comm.size()) {
    return core::InvalidArgument(
        "link fabric: the links describe " + std::to_string(links.num_endpoints) +
        " endpoints but the communicator has " + std::to_string(comm.size()) + " ranks");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<SymmetricMemory> memory,
                   SymmetricMemory::Create(comm, sizeof(Table)));
  std::unique_ptr<LinkFabric> fabric(new LinkFabric(std::move(links), std::move(memory)));
  if (comm.rank() == 0) {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&fabric->table_->mutex, &attr);
    pthread_mutexattr_destroy(&attr);
  }
  RETURN_IF_ERROR(comm.Barrier());  // the mutex exists before anyone reserves
  return fabric;
}

StatusOr<std::unique_ptr<LinkFabric>> LinkFabric::CreateLocal(PacedLinks links) {
  RETURN_IF_ERROR(Validate(links));
  auto table = std::make_unique<Table>();
  pthread_mutex_init(&table->mutex, nullptr);
  std::fill(std::begin(table->next_free_ns), std::end(table->next_free_ns), 0);
  return std::unique_ptr<LinkFabric>(new LinkFabric(std::move(links), std::move(table)));
}

LinkFabric::Reservation LinkFabric::Reserve(int src, int dst, int64_t wire_bytes,
                                            int64_t earliest_ns) {
  const PacedRoute& route = links_.route(src, dst);
  Reservation out;
  pthread_mutex_lock(&table_->mutex);
  // Cut-through along the path: each resource carries the packet as soon as it is free and
  // the packet has reached it, never finishing before the previous resource did.
  double prev_start = static_cast<double>(earliest_ns), prev_end = prev_start;
  for (size_t i = 0; i < route.resources.size(); ++i) {
    const int r = route.resources[i];
    const double busy = static_cast<double>(wire_bytes) * ns_per_byte_[r];
    const double start =
        std::max({prev_start, static_cast<double>(table_->next_free_ns[r]), prev_end - busy});
    const double end = start + busy;
    table_->next_free_ns[r] = std::llround(end);
    if (i == 0) out.start_ns = std::llround(start);
    prev_start = start;
    prev_end = end;
  }
  pthread_mutex_unlock(&table_->mutex);
  if (route.resources.empty()) out.start_ns = earliest_ns;
  out.last_start_ns = std::llround(prev_start);
  out.arrival_ns = std::llround(prev_end) + route.latency_ns;
  return out;
}

void LinkFabric::Reset() {
  pthread_mutex_lock(&table_->mutex);
  std::fill(std::begin(table_->next_free_ns), std::end(table_->next_free_ns), 0);
  pthread_mutex_unlock(&table_->mutex);
}

}  // namespace tessera::comm
