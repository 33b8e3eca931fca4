// Workloads: a global batch of image and video sequences for one training step.
//
// A Sequence is one sample: its kind, resolution label, clip length and token count.
// The generator draws a batch for a mixture "vNN" (NN% of the batch's tokens come from
// videos) at a load of `tokens_per_gpu` tokens per rank, over the buckets of zellige.md:
// images at 256p/360p/480p/720p/1080p, videos at 480p/720p/1080p of `video_seconds`.
// It is deterministic in its seed. Batches read and write a JSON format a user can write
// by hand (see BatchFromJson). Plain values; thread-safe to read.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/json_util.h"
#include "core/status.h"
#include "models/token_calculus.h"

namespace tessera::workload {

// Limits every batch honours, whether generated or loaded (BatchFromJson refuses more, naming
// the field; plans are bounded the same way), so a file that asks for a billion-token
// sequence is an error at load time, not an allocation failure in a planner or `run`.
// The longest sequence: 2^27 = 134,217,728 tokens (a 10-minute 4K clip at 16 fps is 77.8M).
inline constexpr int64_t kMaxSequenceTokens = int64_t{1} << 27;
// Sequences in one batch: 2^22 = 4,194,304 (a generated batch of kMaxGeneratedTokens holds
// about 3M, so whatever the generator makes reloads).
inline constexpr int64_t kMaxBatchSequences = int64_t{1} << 22;
// Tokens in one batch: 2^36 = 68,719,476,736 (about 1M tokens on each of 65,536 ranks).
inline constexpr int64_t kMaxBatchTokens = int64_t{1} << 36;
// Frames per second a video's tokens are counted at unless the batch says otherwise.
inline constexpr int kDefaultFps = 16;

struct Sequence {
  int id = 0;  // its index in the batch
  models::MediaKind kind = models::MediaKind::kImage;
  std::string res;     // "1080p", "1280x720" or "" when given only by token count
  double seconds = 0;  // clip length; 0 for images
  int64_t tokens = 0;
  int fps = kDefaultFps;  // frame rate the video's tokens were counted at (videos with a res)
  // Bucket label used to group identical sequences, e.g. "video-1080p-15s", "image-720p".
  std::string Bucket() const;
};

struct Batch {
  std::string name;  // e.g. "v50-high-15s-seed1"
  std::vector<Sequence> sequences;
  int64_t total_tokens() const;
  double video_token_share() const;
};

struct WorkloadSpec {
  int video_percent = 50;  // share of tokens from video, 0..100 (mixture vNN)
  int64_t tokens_per_gpu = 350000;
  double video_seconds = 15;
  int num_ranks = 16;
  uint64_t seed = 1;
};

// Parses "v35".."v60" (any vNN with 0 <= NN <= 100) into a percentage.
core::StatusOr<int> ParseMixture(const std::string& name);
// Tokens per GPU of a load name: "high" = 350K, "low" = 125K, or a positive integer.
core::StatusOr<int64_t> ParseLoad(const std::string& load);

// Bounds of a generated batch: 2^33 tokens (about 1.5M sequences, 24x the paper's largest
// batch of 1024 ranks x 350K tokens), at most 2^20 ranks.
inline constexpr int64_t kMaxGeneratedTokens = int64_t{1} << 33;
inline constexpr int64_t kMaxGeneratedRanks = int64_t{1} << 20;
core::Status Validate(const WorkloadSpec& spec);
core::StatusOr<Batch> GenerateBatch(const WorkloadSpec& spec);

// {"name", "sequences": [{"id", "tokens", "kind", "res", "seconds", "fps"}]}: "res" (with
// "seconds" for videos) when kind/res/seconds/fps give the sequence's token count (a batch
// whose tokens were scaled, batch_source.h, keeps kind and tokens only); "kind" for every
// video and every sequence saved with its res; "fps" for videos counted at another rate than
// kDefaultFps. BatchFromJson reads it back to an equal batch.
core::Json ToJson(const Batch& b);
// Accepts {"name": "...", "sequences": [ {"tokens": 12345, "kind": "video" (optional)} |
//   {"kind": "image"|"video", "res": "720p", "seconds": 15 (videos), "fps": 16 (optional),
//    "tokens": N (optional, must match)} ]}; "id" is ignored (sequences are numbered by
// position). At most kMaxBatchSequences sequences of at most kMaxSequenceTokens tokens each
// and kMaxBatchTokens in all. A key the format lacks, or one that does not apply ("seconds" or
// "fps" on an image, or on a sequence without "res"), is refused naming it: never ignored.
core::StatusOr<Batch> BatchFromJson(const core::Json& j, const std::string& source);

// A batch of sequences given by token count alone (kind image, no res: what BatchFromJson
// makes of {"tokens": N} entries), named `name`. InvalidArgument naming `field`: empty, more
// than kMaxBatchSequences entries, an entry outside [1, kMaxSequenceTokens] ("seq_lens[3]: got
// -5 tokens, must be in [1, 134217728]"), or more than kMaxBatchTokens in all. Used by front
// ends that take a list of lengths (the Python binding).
core::StatusOr<Batch> BatchFromTokenCounts(std::span<const int64_t> tokens,
                                           const std::string& field,
                                           const std::string& name = "batch");

}  // namespace tessera::workload
