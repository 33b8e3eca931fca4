#include "workload/batch.h"

#include <algorithm>
#include <cmath>

#include "core/rng.h"

namespace tessera::workload {

using core::Json;
using core::Status;
using core::StatusOr;

std::string Sequence::Bucket() const {
  if (res.empty()) return "tokens-" + std::to_string(tokens);
  if (kind == models::MediaKind::kImage) return "image-" + res;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%gs", seconds);
  return "video-" + res + "-" + buf;
}

int64_t Batch::total_tokens() const {
  int64_t t = 0;
  for (const auto& s : sequences) t += s.tokens;
  return t;
}

double Batch::video_token_share() const {
  int64_t v = 0;
  for (const auto& s : sequences)
    if (s.kind == models::MediaKind::kVideo) v += s.tokens;
  int64_t t = total_tokens();
  return t > 0 ? static_cast<double>(v) / t : 0.0;
}

StatusOr<int> ParseMixture(const std::string& name) {
  auto bad = core::InvalidArgument("workload: got '" + name +
                                   "', must be a mixture v0..v100 (e.g. v35, v50) or a JSON file");
  if (name.size() < 2 || name.size() > 4 || (name[0] != 'v' && name[0] != 'V')) return bad;
  if (name.find_first_not_of("0123456789", 1) != std::string::npos) return bad;
  int p = std::atoi(name.c_str() + 1);
  if (p < 0 || p > 100) return bad;
  return p;
}

StatusOr<int64_t> ParseLoad(const std::string& load) {
  if (load == "high") return int64_t{350000};
  if (load == "low") return int64_t{125000};
  if (!load.empty() && load.size() < 12 &&
      load.find_first_not_of("0123456789") == std::string::npos) {
    int64_t v = std::atoll(load.c_str());
    if (v > 0) return v;
  }
  return core::InvalidArgument(
      "load: got '" + load + "', must be high (350K tokens/GPU), low (125K) or a positive integer");
}

Status Validate(const WorkloadSpec& s) {
  if (s.video_percent < 0 || s.video_percent > 100) {
    return core::InvalidArgument("video_percent: got " + std::to_string(s.video_percent) +
                                 ", must be in [0, 100]");
  }
  if (s.tokens_per_gpu <= 0 || s.tokens_per_gpu > int64_t{1} << 34) {
    return core::InvalidArgument("tokens_per_gpu: got " + std::to_string(s.tokens_per_gpu) +
                                 ", must be in [1, 2^34]");
  }
  if (!(s.video_seconds >= 1 && s.video_seconds <= 600)) {
    return core::InvalidArgument("video_seconds: got " + std::to_string(s.video_seconds) +
                                 ", must be in [1, 600]");
  }
  if (s.num_ranks < 1 || s.num_ranks > kMaxGeneratedRanks) {
    return core::InvalidArgument("num_ranks: got " + std::to_string(s.num_ranks) +
                                 ", must be in [1, " + std::to_string(kMaxGeneratedRanks) + "]");
  }
  if (s.tokens_per_gpu * s.num_ranks > kMaxGeneratedTokens) {
    return core::InvalidArgument(
        "load: " + std::to_string(s.tokens_per_gpu) + " tokens per rank x " +
        std::to_string(s.num_ranks) + " ranks is over the " + std::to_string(kMaxGeneratedTokens) +
        " tokens a generated batch may hold (its sequences would not fit in memory); use a "
        "smaller load");
  }
  return Status::Ok();
}

namespace {

struct BucketDef {
  models::MediaKind kind;
  const char* res;
};

constexpr BucketDef kImageBuckets[] = {{models::MediaKind::kImage, "256p"},
                                       {models::MediaKind::kImage, "360p"},
                                       {models::MediaKind::kImage, "480p"},
                                       {models::MediaKind::kImage, "720p"},
                                       {models::MediaKind::kImage, "1080p"}};
constexpr BucketDef kVideoBuckets[] = {{models::MediaKind::kVideo, "480p"},
                                       {models::MediaKind::kVideo, "720p"},
                                       {models::MediaKind::kVideo, "1080p"}};

Sequence MakeSeq(const BucketDef& b, double seconds) {
  Sequence s;
  s.kind = b.kind;
  s.res = b.res;
  s.seconds = b.kind == models::MediaKind::kVideo ? seconds : 0;
  s.tokens = *models::CountTokens(b.kind, *models::ParseResolution(b.res), s.seconds);
  return s;
}

// Draws sequences from `buckets` until `budget` tokens are used: each draw is uniform over
// the buckets no larger than 1.25x the remaining budget (the smallest bucket if none).
// InvalidArgument once the batch would hold more than kMaxBatchSequences sequences.
Status Fill(const std::vector<Sequence>& buckets, int64_t budget, core::Rng& rng,
            std::vector<Sequence>& out) {
  int64_t smallest = buckets.front().tokens;
  for (const auto& b : buckets) smallest = std::min(smallest, b.tokens);
  int64_t remaining = budget;
  while (remaining * 2 >= smallest) {
    if (static_cast<int64_t>(out.size()) >= kMaxBatchSequences) {
      return core::InvalidArgument("workload: the batch would hold more than " +
                                   std::to_string(kMaxBatchSequences) +
                                   " sequences (2^22), must hold fewer (lower the load or ranks)");
    }
    std::vector<const Sequence*> cand;
    for (const auto& b : buckets)
      if (b.tokens * 4 <= remaining * 5) cand.push_back(&b);
    if (cand.empty()) {
      for (const auto& b : buckets)
        if (b.tokens == smallest) cand.push_back(&b);
    }
    const Sequence& pick = *cand[rng.Below(cand.size())];
    out.push_back(pick);
    remaining -= pick.tokens;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Batch> GenerateBatch(const WorkloadSpec& spec) {
  RETURN_IF_ERROR(Validate(spec));
  core::Rng rng(spec.seed);
  const int64_t budget = spec.tokens_per_gpu * spec.num_ranks;
  const int64_t video_budget =
      static_cast<int64_t>(std::llround(budget * spec.video_percent / 100.0));
  std::vector<Sequence> videos, images, out;
  for (const auto& b : kVideoBuckets) videos.push_back(MakeSeq(b, spec.video_seconds));
  for (const auto& b : kImageBuckets) images.push_back(MakeSeq(b, 0));
  if (video_budget > 0) RETURN_IF_ERROR(Fill(videos, video_budget, rng, out));
  int64_t used = 0;
  for (const auto& s : out) used += s.tokens;
  if (budget - used > 0) RETURN_IF_ERROR(Fill(images, budget - used, rng, out));
  Batch batch;
  char name[96];
  std::snprintf(name, sizeof(name), "v%d-%lldtok-%gs-seed%llu", spec.video_percent,
                static_cast<long long>(spec.tokens_per_gpu), spec.video_seconds,
                static_cast<unsigned long long>(spec.seed));
  batch.name = name;
  for (size_t i = 0; i < out.size(); ++i) out[i].id = static_cast<int>(i);
  batch.sequences = std::move(out);
  return batch;
}

namespace {

const char* KindName(models::MediaKind kind) {
  return kind == models::MediaKind::kVideo ? "video" : "image";
}

// Whether kind/res/seconds/fps of `s` give exactly its token count (false after scaling).
bool ResGivesTokens(const Sequence& s) {
  auto r = models::ParseResolution(s.res);
  if (!r.ok()) return false;
  auto t = models::CountTokens(s.kind, *r, s.seconds, s.fps);
  return t.ok() && *t == s.tokens;
}

}  // namespace

Json ToJson(const Batch& b) {
  Json seqs = Json::array();
  for (const auto& s : b.sequences) {
    Json j = {{"id", s.id}, {"tokens", s.tokens}};
    const bool video = s.kind == models::MediaKind::kVideo;
    const bool with_res = !s.res.empty() && ResGivesTokens(s);
    if (video || with_res) j["kind"] = KindName(s.kind);
    if (with_res) {
      j["res"] = s.res;
      if (video) j["seconds"] = s.seconds;
      if (video && s.fps != kDefaultFps) j["fps"] = s.fps;
    }
    seqs.push_back(j);
  }
  return {{"name", b.name}, {"sequences", seqs}};
}

namespace {

// "seconds" and "fps" of a sequence entry (an object) only where they count its tokens (a
// video given by res); elsewhere they would be silently ignored.
Status CheckLengthKeys(const Json& e, const std::string& path, models::MediaKind kind) {
  const bool video = kind == models::MediaKind::kVideo;
  for (const char* key : {"seconds", "fps"}) {
    if (!e.contains(key)) continue;
    if (!video) {
      return core::InvalidArgument(path + "." + key +
                                   ": does not apply to an image (only a video has a length "
                                   "and a frame rate); remove it");
    }
    if (!e.contains("res")) {
      return core::InvalidArgument(path + "." + key +
                                   ": does not apply without res (a sequence given by tokens "
                                   "alone is counted already); remove it or give res");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Batch> BatchFromJson(const Json& j, const std::string& source) {
  auto parse = [&]() -> StatusOr<Batch> {
    Batch b;
    // A key this format does not have is a typo or a field of another file: refused, not
    // ignored.
    RETURN_IF_ERROR(core::CheckKnownKeys(j, "", {"name", "sequences"}));
    b.name = "batch";
    if (j.contains("name")) {
      ASSIGN_OR_RETURN(b.name, core::GetString(j, "", "name"));
    }
    ASSIGN_OR_RETURN(const Json* seqs, core::Member(j, "", "sequences"));
    if (!seqs->is_array() || seqs->empty()) {
      return core::InvalidArgument("sequences: must be a non-empty array");
    }
    if (static_cast<int64_t>(seqs->size()) > kMaxBatchSequences) {
      return core::InvalidArgument("sequences: got " + std::to_string(seqs->size()) +
                                   " sequences, must be <= " + std::to_string(kMaxBatchSequences) +
                                   " (2^22)");
    }
    const std::string max_tokens =
        "must be <= " + std::to_string(kMaxSequenceTokens) + " (2^27, the longest sequence)";
    int64_t total = 0;
    for (size_t i = 0; i < seqs->size(); ++i) {
      const Json& e = (*seqs)[i];
      const std::string path = "sequences[" + std::to_string(i) + "]";
      Sequence s;
      s.id = static_cast<int>(i);
      RETURN_IF_ERROR(
          core::CheckKnownKeys(e, path, {"id", "tokens", "kind", "res", "seconds", "fps"}));
      if (e.is_object() && e.contains("kind")) {
        ASSIGN_OR_RETURN(std::string kind, core::GetString(e, path, "kind"));
        if (kind != "image" && kind != "video") {
          return core::InvalidArgument(path + ".kind: got '" + kind + "', must be image or video");
        }
        s.kind = kind == "video" ? models::MediaKind::kVideo : models::MediaKind::kImage;
      }
      RETURN_IF_ERROR(CheckLengthKeys(e, path, s.kind));
      if (e.is_object() && e.contains("res")) {
        if (!e.contains("kind"))
          return core::InvalidArgument(path + ".kind: missing required field");
        ASSIGN_OR_RETURN(s.res, core::GetString(e, path, "res"));
        auto r = models::ParseResolution(s.res);
        if (!r.ok()) return r.status().WithPrefix(path);
        int fps = kDefaultFps;
        if (e.contains("fps")) {
          ASSIGN_OR_RETURN(int64_t f, core::GetIntInRange(e, path, "fps", 1, 1000));
          fps = static_cast<int>(f);
        }
        if (s.kind == models::MediaKind::kVideo) {
          ASSIGN_OR_RETURN(s.seconds, core::GetPositiveDouble(e, path, "seconds"));
          s.fps = fps;
        }
        auto t = models::CountTokens(s.kind, *r, s.seconds, s.fps);
        if (!t.ok()) return t.status().WithPrefix(path);
        s.tokens = *t;
        if (s.tokens > kMaxSequenceTokens) {
          return core::InvalidArgument(path + ": kind/res/seconds/fps give " +
                                       std::to_string(s.tokens) + " tokens, " + max_tokens);
        }
        if (e.contains("tokens")) {
          ASSIGN_OR_RETURN(int64_t given, core::GetPositiveInt(e, path, "tokens"));
          if (given != s.tokens) {
            return core::InvalidArgument(path + ".tokens: got " + std::to_string(given) +
                                         ", but kind/res/seconds give " + std::to_string(s.tokens));
          }
        }
      } else {
        // Given by token count alone; kind defaults to image.
        ASSIGN_OR_RETURN(s.tokens, core::GetPositiveInt(e, path, "tokens"));
        if (s.tokens > kMaxSequenceTokens) {
          return core::InvalidArgument(path + ".tokens: got " + std::to_string(s.tokens) + ", " +
                                       max_tokens);
        }
      }
      total += s.tokens;  // at most 2^22 sequences of 2^27 tokens: no overflow
      if (total > kMaxBatchTokens) {
        return core::InvalidArgument("sequences: got " + std::to_string(total) + " tokens by " +
                                     path + ", must be <= " + std::to_string(kMaxBatchTokens) +
                                     " in all (2^36, the largest batch)");
      }
      b.sequences.push_back(s);
    }
    return b;
  };
  auto r = parse();
  if (!r.ok()) return r.status().WithPrefix(source);
  return r;
}

StatusOr<Batch> BatchFromTokenCounts(std::span<const int64_t> tokens, const std::string& field,
                                     const std::string& name) {
  if (tokens.empty()) return core::InvalidArgument(field + ": empty batch, give >= 1 sequence");
  if (static_cast<int64_t>(tokens.size()) > kMaxBatchSequences) {
    return core::InvalidArgument(field + ": got " + std::to_string(tokens.size()) +
                                 " sequences, must be <= " + std::to_string(kMaxBatchSequences) +
                                 " (2^22)");
  }
  Batch b;
  b.name = name;
  b.sequences.reserve(tokens.size());
  int64_t total = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string path = field + "[" + std::to_string(i) + "]";
    if (tokens[i] < 1 || tokens[i] > kMaxSequenceTokens) {
      return core::InvalidArgument(path + ": got " + std::to_string(tokens[i]) +
                                   " tokens, must be in [1, " + std::to_string(kMaxSequenceTokens) +
                                   "]");
    }
    total += tokens[i];  // at most 2^22 entries of 2^27 tokens: no overflow
    if (total > kMaxBatchTokens) {
      return core::InvalidArgument(field + ": got " + std::to_string(total) + " tokens by " + path +
                                   ", must be <= " + std::to_string(kMaxBatchTokens) +
                                   " in all (2^36, the largest batch)");
    }
    Sequence s;
    s.id = static_cast<int>(i);
    s.tokens = tokens[i];
    b.sequences.push_back(std::move(s));
  }
  return b;
}

}  // namespace tessera::workload
