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

LinkFabric::~LinkFabric() = default;

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

LinkFabric::Reservation LinkFabric::Reserve(int src, int dst, int64_t wire_bytes,
                                            int64_t earliest_ns) {
  const PacedRoute& route = links_.route(src, dst);
  double longest_ns = 0;
  for (int r : route.resources) {
    longest_ns = std::max(longest_ns, static_cast<double>(wire_bytes) * ns_per_byte_[r]);
  }
  Reservation out;
  pthread_mutex_lock(&table_->mutex);
  int64_t start = earliest_ns;
  for (int r : route.resources) start = std::max(start, table_->next_free_ns[r]);
  for (int r : route.resources) {
    table_->next_free_ns[r] =
        start + std::llround(static_cast<double>(wire_bytes) * ns_per_byte_[r]);
  }
  pthread_mutex_unlock(&table_->mutex);
  out.start_ns = start;
  out.arrival_ns = start + std::llround(longest_ns) + route.latency_ns;
  return out;
}

void LinkFabric::Reset() {
  pthread_mutex_lock(&table_->mutex);
  std::fill(std::begin(table_->next_free_ns), std::end(table_->next_free_ns), 0);
  pthread_mutex_unlock(&table_->mutex);
}

}  // namespace tessera::comm
