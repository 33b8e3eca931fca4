// KvPrefixCache: the KV of finished requests, kept where it was computed so that a later prompt
// starting with the same blocks skips their prefill (vLLM's automatic prefix caching, at the
// granularity of a whole request). Used by the fleet simulator: one cache per KV domain (the
// KernelFlume attention pool, each ServerlessLLM instance).
//
// Keys are the Mooncake trace's hash ids (workload/request_trace.h): one id per 512-token block
// of a prompt, two prompts sharing their leading ids share that prefix. An entry remembers the
// ids of its prompt's full blocks and holds `tokens` KV tokens (prompt and output). A prompt's
// hit is the entry whose full blocks are the longest prefix of the prompt's ids; the reusable
// tokens are that many blocks x 512, at most input_length - 1 (the last prompt token is always
// computed, as in vLLM). Only an entry's whole block list matches (an entry is found through its
// last full block's id), which is how an agentic session grows: each turn's prompt starts with
// the previous turn's. A partial overlap (a shared system prompt only) is not a hit.
// Eviction is least recently inserted first (entries are never touched after insertion: a hit
// takes the entry out), on demand (Evict) or by age (EvictInsertedBefore: a time-to-live).
// Deterministic: ties by insertion order.
// Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

namespace tessera::kernelflume {

class KvPrefixCache {
 public:
  struct Hit {
    int64_t entry = -1;  // -1: none
    int64_t tokens = 0;  // reusable prompt tokens
  };

  // Keeps the KV of a finished request (`tokens` > 0) from `now_s` (times do not decrease from
  // one insertion to the next); returns the entry's id.
  int64_t Insert(const std::vector<int64_t>& hash_ids, int64_t input_length, int64_t tokens,
                 double now_s = 0);
  // The longest cached prefix of a prompt.
  Hit Lookup(const std::vector<int64_t>& hash_ids, int64_t input_length) const;
  // Removes an entry (a request takes its KV over); returns the tokens it held (0: no such entry).
  int64_t Take(int64_t entry);
  // Evicts the oldest entries until at least `tokens` tokens are freed or the cache is empty;
  // returns the tokens freed.
  int64_t Evict(int64_t tokens);
  // Evicts the entries inserted before `time_s`; returns the tokens freed.
  int64_t EvictInsertedBefore(double time_s);
  void Clear();
  int64_t tokens() const { return tokens_; }
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    int64_t blocks = 0;  // full prompt blocks
    int64_t last_id = -1;
    int64_t tokens = 0;
    double inserted_s = 0;
  };
  int64_t next_id_ = 0;
  int64_t tokens_ = 0;
  std::map<int64_t, Entry> entries_;                 // by id = insertion order
  std::unordered_map<int64_t, int64_t> by_last_id_;  // last full block's hash id -> entry
};

}  // namespace tessera::kernelflume
