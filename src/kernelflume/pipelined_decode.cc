#include "kernelflume/pipelined_decode.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>

namespace tessera::kernelflume {

using core::Status;

namespace {

// Better when the larger sum is smaller, then when the counts are closer.
bool BetterSplit(int64_t larger, int64_t count_gap, int64_t best_larger, int64_t best_gap) {
  return larger < best_larger || (larger == best_larger && count_gap < best_gap);
}

MicroBatchSplit SplitFromMask(std::span<const int64_t> tokens, uint64_t b_mask) {
  MicroBatchSplit s;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if ((b_mask >> i) & 1) {
      s.b.push_back(static_cast<int64_t>(i));
      s.tokens_b += tokens[i];
    } else {
      s.a.push_back(static_cast<int64_t>(i));
      s.tokens_a += tokens[i];
    }
  }
  return s;
}

// Every split with request 0 in A and B non-empty, in Gray-code order.
MicroBatchSplit ExactSplit(std::span<const int64_t> tokens) {
  const int n = static_cast<int>(tokens.size());
  const int64_t total = std::accumulate(tokens.begin(), tokens.end(), int64_t{0});
  uint64_t gray = 0, best_mask = 0;
  int64_t sum_b = 0, count_b = 0;
  int64_t best_larger = INT64_MAX, best_gap = INT64_MAX;
  const uint64_t count = uint64_t{1} << (n - 1);
  for (uint64_t i = 1; i < count; ++i) {
    const int bit = std::countr_zero(i) + 1;  // flips request `bit` (request 0 stays in A)
    gray ^= uint64_t{1} << bit;
    const bool in_b = (gray >> bit) & 1;
    sum_b += in_b ? tokens[bit] : -tokens[bit];
    count_b += in_b ? 1 : -1;
    const int64_t larger = std::max(sum_b, total - sum_b);
    const int64_t gap = std::abs(n - 2 * count_b);
    if (BetterSplit(larger, gap, best_larger, best_gap)) {
      best_larger = larger;
      best_gap = gap;
      best_mask = gray;
    }
  }
  return SplitFromMask(tokens, best_mask);
}

// Longest first to the lighter side, then single moves and swaps while they help.
MicroBatchSplit GreedySplit(std::span<const int64_t> tokens) {
  const size_t n = tokens.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return tokens[x] > tokens[y]; });
  std::vector<char> in_b(n, 0);
  int64_t sum[2] = {0, 0}, cnt[2] = {0, 0};
  for (size_t i : order) {
    const int side = sum[1] < sum[0] || (sum[1] == sum[0] && cnt[1] < cnt[0]) ? 1 : 0;
    in_b[i] = static_cast<char>(side);
    sum[side] += tokens[i];
    ++cnt[side];
  }
  for (bool improved = true; improved;) {
    improved = false;
    const int heavy = sum[1] > sum[0] ? 1 : 0, light = 1 - heavy;
    const int64_t larger = sum[heavy];
    for (size_t i = 0; i < n && !improved; ++i) {
      if (in_b[i] != heavy || cnt[heavy] < 2) continue;
      if (std::max(sum[heavy] - tokens[i], sum[light] + tokens[i]) < larger) {
        in_b[i] = static_cast<char>(light);
        sum[heavy] -= tokens[i], sum[light] += tokens[i];
        --cnt[heavy], ++cnt[light];
        improved = true;
      }
    }
    for (size_t i = 0; i < n && !improved; ++i) {
      if (in_b[i] != heavy) continue;
      for (size_t j = 0; j < n && !improved; ++j) {
        if (in_b[j] != light) continue;
        const int64_t delta = tokens[i] - tokens[j];
        if (delta > 0 && std::max(sum[heavy] - delta, sum[light] + delta) < larger) {
          std::swap(in_b[i], in_b[j]);
          sum[heavy] -= delta, sum[light] += delta;
          improved = true;
        }
      }
    }
  }
  MicroBatchSplit s;
  for (size_t i = 0; i < n; ++i) {
    (in_b[i] ? s.b : s.a).push_back(static_cast<int64_t>(i));
    (in_b[i] ? s.tokens_b : s.tokens_a) += tokens[i];
  }
  return s;
}

}  // namespace

core::StatusOr<MicroBatchSplit> SplitByAttentionTokens(std::span<const int64_t> context_tokens) {
  for (size_t i = 0; i < context_tokens.size(); ++i) {
    if (context_tokens[i] < 0) {
      return core::InvalidArgument(
          fmt::format("context_tokens[{}]: got {}, must be >= 0 (the tokens request {} attends)", i,
                      context_tokens[i], i));
    }
  }
  if (context_tokens.size() < 2) return SplitFromMask(context_tokens, 0);
  if (context_tokens.size() <= kExactSplitMaxRequests) return ExactSplit(context_tokens);
  return GreedySplit(context_tokens);
}

double PipelineBound(double t_w_s, double t_a_s) {
  const double m = std::max(t_w_s, t_a_s);
  if (!(t_w_s >= 0) || !(t_a_s >= 0) || !(m > 0)) return 1.0;
  return (t_w_s + t_a_s) / m;
}

Status PipelinedDecode::FlushBatch() { return batch_ ? batch_->Flush() : Status::Ok(); }

Status PipelinedDecode::Issue(models::LlamaBatchDecode& mb, int64_t layer) {
  RETURN_IF_ERROR(mb.DispatchQueries(layer));
  RETURN_IF_ERROR(FlushBatch());
  return mb.DispatchKeyValues(layer);
}

Status PipelinedDecode::StepOne(std::span<const int32_t> tokens, std::span<const int64_t> positions,
                                std::span<models::CoreAttention* const> attns, float* logits) {
  RETURN_IF_ERROR(a_.Start(tokens, positions, attns));
  for (int64_t l = 0; l < model_.config().num_layers; ++l) {
    RETURN_IF_ERROR(Issue(a_, l));
    RETURN_IF_ERROR(a_.Complete(l));
  }
  RETURN_IF_ERROR(a_.Logits(logits));
  return FlushBatch();  // the last layer's appends
}

Status PipelinedDecode::StepTwo(std::span<const int32_t> tokens, std::span<const int64_t> positions,
                                std::span<models::CoreAttention* const> attns,
                                const MicroBatchSplit& split, float* logits) {
  const size_t n = tokens.size();
  if (positions.size() != n || attns.size() != n) {
    return core::InvalidArgument(fmt::format(
        "positions, attns: got {} and {} entries for {} tokens, must give one of each per token",
        positions.size(), attns.size(), n));
  }
  std::vector<char> seen(n, 0);
  bool partition = !split.a.empty() && !split.b.empty() && split.a.size() + split.b.size() == n;
  for (const auto* side : {&split.a, &split.b}) {
    for (int64_t i : *side) {
      if (i < 0 || static_cast<size_t>(i) >= n || seen[i]) {
        partition = false;
        break;
      }
      seen[i] = 1;
    }
  }
  if (!partition) {
    return core::InvalidArgument(
        fmt::format("split: micro-batches of {} and {} requests do not partition the {} requests "
                    "into two non-empty sets",
                    split.a.size(), split.b.size(), n));
  }
  auto gather = [&](const std::vector<int64_t>& idx, std::vector<int32_t>& tok,
                    std::vector<int64_t>& pos, std::vector<models::CoreAttention*>& at) {
    tok.clear(), pos.clear(), at.clear();
    for (int64_t i : idx) {
      tok.push_back(tokens[i]);
      pos.push_back(positions[i]);
      at.push_back(attns[i]);
    }
  };
  gather(split.a, tok_a_, pos_a_, attn_a_);
  gather(split.b, tok_b_, pos_b_, attn_b_);
  const int64_t vocab = model_.config().vocab, layers = model_.config().num_layers;
  logits_a_.resize(split.a.size() * vocab);
  logits_b_.resize(split.b.size() * vocab);
  RETURN_IF_ERROR(a_.Start(tok_a_, pos_a_, attn_a_));
  RETURN_IF_ERROR(b_.Start(tok_b_, pos_b_, attn_b_));
  RETURN_IF_ERROR(Issue(a_, 0));
  RETURN_IF_ERROR(Issue(b_, 0));
  for (int64_t l = 0; l < layers; ++l) {
    RETURN_IF_ERROR(a_.Complete(l));
    if (l + 1 < layers) {
      RETURN_IF_ERROR(Issue(a_, l + 1));
    } else {
      RETURN_IF_ERROR(a_.Logits(logits_a_.data()));
    }
    RETURN_IF_ERROR(b_.Complete(l));
    if (l + 1 < layers) {
      RETURN_IF_ERROR(Issue(b_, l + 1));
    } else {
      RETURN_IF_ERROR(b_.Logits(logits_b_.data()));
    }
  }
  RETURN_IF_ERROR(FlushBatch());  // the last layer's appends
  for (size_t j = 0; j < split.a.size(); ++j) {
    std::memcpy(logits + split.a[j] * vocab, logits_a_.data() + j * vocab, vocab * sizeof(float));
  }
  for (size_t j = 0; j < split.b.size(); ++j) {
    std::memcpy(logits + split.b[j] * vocab, logits_b_.data() + j * vocab, vocab * sizeof(float));
  }
  return Status::Ok();
}

}  // namespace tessera::kernelflume
