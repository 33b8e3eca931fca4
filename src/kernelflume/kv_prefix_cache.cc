#include "kernelflume/kv_prefix_cache.h"

#include <algorithm>

#include "workload/request_trace.h"

namespace tessera::kernelflume {

int64_t KvPrefixCache::Insert(const std::vector<int64_t>& hash_ids, int64_t input_length,
                              int64_t tokens, double now_s) {
  const int64_t id = next_id_++;
  Entry e;
  e.blocks = std::min<int64_t>(input_length / workload::kTraceBlockTokens,
                               static_cast<int64_t>(hash_ids.size()));
  e.tokens = tokens;
  e.inserted_s = now_s;
  if (e.blocks > 0) {
    e.last_id = hash_ids[e.blocks - 1];
    by_last_id_[e.last_id] = id;
  }
  entries_.emplace(id, e);
  tokens_ += tokens;
  return id;
}

KvPrefixCache::Hit KvPrefixCache::Lookup(const std::vector<int64_t>& hash_ids,
                                         int64_t input_length) const {
  Hit hit;
  for (int64_t i = static_cast<int64_t>(hash_ids.size()) - 1; i >= 0; --i) {
    auto it = by_last_id_.find(hash_ids[i]);
    if (it == by_last_id_.end()) continue;
    const Entry& e = entries_.at(it->second);
    if (e.blocks != i + 1) continue;
    hit.entry = it->second;
    hit.tokens = std::min({(i + 1) * workload::kTraceBlockTokens, input_length - 1, e.tokens});
    return hit;
  }
  return hit;
}

int64_t KvPrefixCache::Take(int64_t entry) {
  auto it = entries_.find(entry);
  if (it == entries_.end()) return 0;
  const Entry e = it->second;
  entries_.erase(it);
  auto idx = by_last_id_.find(e.last_id);
  if (idx != by_last_id_.end() && idx->second == entry) by_last_id_.erase(idx);
  tokens_ -= e.tokens;
  return e.tokens;
}

int64_t KvPrefixCache::Evict(int64_t tokens) {
  int64_t freed = 0;
  while (freed < tokens && !entries_.empty()) freed += Take(entries_.begin()->first);
  return freed;
}

int64_t KvPrefixCache::EvictInsertedBefore(double time_s) {
  int64_t freed = 0;
  while (!entries_.empty() && entries_.begin()->second.inserted_s < time_s) {
    freed += Take(entries_.begin()->first);
  }
  return freed;
}

void KvPrefixCache::Clear() {
  entries_.clear();
  by_last_id_.clear();
  tokens_ = 0;
}

}  // namespace tessera::kernelflume
