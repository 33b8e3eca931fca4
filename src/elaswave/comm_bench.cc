#include "elaswave/comm_bench.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "core/child_process.h"
#include "elaswave/comm_bench_peer.h"
#include "elaswave/gloo_rebuild.h"
#include "elaswave/job_config.h"

namespace tessera::elaswave {
namespace {

constexpr CommChangeMode kCommBenchAllModes[] = {CommChangeMode::kInPlace, CommChangeMode::kPartial,
                                                 CommChangeMode::kFull, CommChangeMode::kGloo};

std::string CommBenchModeList(const std::vector<CommChangeMode>& modes) {
  std::string out;
  for (CommChangeMode m : modes) {
    if (!out.empty()) out += ',';
    out += CommChangeModeName(m);
  }
  return out;
}

// A survivor's result file, once it is there: nullopt while it is not.
struct CommBenchPeerResult {
  bool ok = false;
  std::string error;
  double detect_at_s = -1;
  double steady_s = -1;
  std::map<CommChangeMode, double> seconds, call_seconds;
};

std::optional<CommBenchPeerResult> CommBenchReadResult(const std::string& dir, int id) {
  const std::string path = CommBenchResultPath(dir, id);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  auto j = core::ReadJsonFile(path);
  CommBenchPeerResult r;
  if (!j.ok()) {
    r.error = j.status().ToString();
    return r;
  }
  r.ok = j->value("ok", false);
  r.error = j->value("error", std::string());
  r.detect_at_s = j->value("detect_at_s", -1.0);
  r.steady_s = j->value("steady_s", -1.0);
  const auto read = [&](const char* key, std::map<CommChangeMode, double>& out) {
    if (!j->contains(key) || !(*j)[key].is_object()) return;
    for (CommChangeMode m : kCommBenchAllModes) {
      const auto it = (*j)[key].find(CommChangeModeName(m));
      if (it != (*j)[key].end() && it->is_number()) out[m] = it->get<double>();
    }
  };
  read("seconds", r.seconds);
  read("call_seconds", r.call_seconds);
  return r;
}

// One repetition at N processes (see the header comment).
core::StatusOr<CommBenchRepetition> CommBenchRunOnce(const CommBenchOptions& o, int n,
                                                     int repetition,
                                                     const std::vector<CommChangeMode>& modes) {
  const std::string dir = fmt::format("{}/n{}-r{}", o.run_dir, n, repetition);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  if (ec) return core::Internal(fmt::format("cannot create '{}': {}", dir, ec.message()));
  CommBenchRepetition rep;
  rep.ranks = n;
  rep.repetition = repetition;
  rep.victim = (n / 2 + repetition) % n;
  const std::string where = fmt::format("{} processes, repetition {}", n, repetition + 1);

  std::vector<std::unique_ptr<core::ChildProcess>> peers;
  for (int id = 0; id < n; ++id) {
    ASSIGN_OR_RETURN(
        auto child,
        core::ChildProcess::Spawn({o.self_exe, "elaswave", "comm-bench-peer", "--dir", dir, "--id",
                                   std::to_string(id), "--ranks", std::to_string(n), "--victim",
                                   std::to_string(rep.victim), "--modes", CommBenchModeList(modes),
                                   "--gloo-prefix", fmt::format("n{}-r{}", n, repetition),
                                   "--timeout", fmt::format("{}", o.timeout_s)}));
    peers.push_back(std::move(child));
  }
  // A peer that ended (it must park until stopped): the error its result file or stderr gives.
  const auto ended = [&](int id) -> core::Status {
    const std::optional<int> code = peers[id]->Poll();
    if (!code.has_value()) return core::Status::Ok();
    const auto result = CommBenchReadResult(dir, id);
    const std::string why =
        result.has_value() && !result->error.empty() ? result->error : peers[id]->LastStderrLine();
    return core::FailedPrecondition(
        fmt::format("{}: world rank {} ended with exit code {}: {}", where, id, *code, why));
  };
  const auto give_up = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(o.timeout_s));
  const auto waiting = [&](const std::vector<int>& ids, const char* what) {
    std::string list;
    for (int id : ids) list += (list.empty() ? "" : ", ") + std::to_string(id);
    return core::DeadlineExceeded(fmt::format("{}: world ranks {} {} within {} s (last line: {})",
                                              where, list, what, o.timeout_s,
                                              peers[ids.front()]->LastStderrLine()));
  };

  // Everybody connected and warmed up.
  for (;;) {
    std::vector<int> missing;
    for (int id = 0; id < n; ++id) {
      RETURN_IF_ERROR(ended(id));
      if (!std::filesystem::exists(CommBenchReadyPath(dir, id), ec)) missing.push_back(id);
    }
    if (missing.empty()) break;
    if (std::chrono::steady_clock::now() > give_up) return waiting(missing, "were not ready");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Let the survivors block in their pending collective (not a bound: one started after the
  // death fails the same way).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double kill_at = MonotonicSeconds();
  peers[rep.victim]->Signal(SIGKILL);
  peers[rep.victim]->Wait();

  std::map<int, CommBenchPeerResult> results;
  for (;;) {
    std::vector<int> missing;
    for (int id = 0; id < n; ++id) {
      if (id == rep.victim || results.count(id)) continue;
      auto r = CommBenchReadResult(dir, id);
      if (r.has_value() && !r->ok) {
        return core::FailedPrecondition(fmt::format("{}: world rank {}: {}", where, id, r->error));
      }
      if (r.has_value()) {
        results[id] = *r;
        continue;
      }
      RETURN_IF_ERROR(ended(id));
      missing.push_back(id);
    }
    if (missing.empty()) break;
    if (std::chrono::steady_clock::now() > give_up) return waiting(missing, "did not report");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (auto& peer : peers) peer->Signal(SIGKILL);
  for (auto& peer : peers) peer->Wait();

  for (const auto& [id, r] : results) {
    if (r.detect_at_s < 0 || r.steady_s < 0) {
      return core::FailedPrecondition(
          fmt::format("{}: world rank {} reported no detection or steady figure", where, id));
    }
    rep.detect_s = std::max(rep.detect_s, r.detect_at_s - kill_at);
    rep.steady_s = std::max(rep.steady_s, r.steady_s);
    for (CommChangeMode m : modes) {
      const auto it = r.seconds.find(m);
      const auto call = r.call_seconds.find(m);
      if (it == r.seconds.end() || call == r.call_seconds.end()) {
        return core::FailedPrecondition(fmt::format("{}: world rank {} reported no {} figure",
                                                    where, id, CommChangeModeName(m)));
      }
      rep.per_survivor[m].push_back(it->second);
      rep.call_seconds[m] =
          std::max(rep.call_seconds.count(m) ? rep.call_seconds[m] : 0.0, call->second);
    }
  }
  for (CommChangeMode m : modes) {
    const std::vector<double>& v = rep.per_survivor[m];
    rep.seconds[m] = *std::max_element(v.begin(), v.end());
  }
  return rep;
}

std::string CommBenchMs(double s) { return fmt::format("{:.3f} ms", s * 1e3); }

}  // namespace

const char* CommChangeModeName(CommChangeMode mode) {
  switch (mode) {
    case CommChangeMode::kInPlace:
      return "inplace";
    case CommChangeMode::kPartial:
      return "partial";
    case CommChangeMode::kFull:
      return "full";
    case CommChangeMode::kGloo:
      return "gloo";
  }
  return "?";
}

core::StatusOr<CommChangeMode> ParseCommChangeMode(const std::string& name) {
  for (CommChangeMode m : kCommBenchAllModes) {
    if (name == CommChangeModeName(m)) return m;
  }
  return core::InvalidArgument(
      fmt::format("--mode: got '{}', must be one of inplace, partial, full, gloo", name));
}

std::vector<CommChangeMode> OrderedCommChangeModes(std::vector<CommChangeMode> modes) {
  std::sort(modes.begin(), modes.end());
  modes.erase(std::unique(modes.begin(), modes.end()), modes.end());
  return modes;
}

bool CommBenchHasGloo() { return GlooRebuildAvailable(); }

std::string CommBenchNoGlooMessage() {
  return "--mode gloo: this tessera was built without Gloo; install libgloo-dev "
         "(scripts/install-deps.sh does), then configure and build again";
}

std::vector<CommBenchRow> SummarizeCommBench(const std::vector<CommBenchRepetition>& repetitions,
                                             const std::vector<CommChangeMode>& modes) {
  std::vector<int> order;
  for (const CommBenchRepetition& r : repetitions) {
    if (std::find(order.begin(), order.end(), r.ranks) == order.end()) order.push_back(r.ranks);
  }
  std::vector<CommBenchRow> rows;
  for (int n : order) {
    std::vector<double> detect, steady;
    std::map<CommChangeMode, std::vector<double>> by_mode, calls;
    for (const CommBenchRepetition& r : repetitions) {
      if (r.ranks != n) continue;
      detect.push_back(r.detect_s);
      steady.push_back(r.steady_s);
      for (const auto& [m, s] : r.seconds) by_mode[m].push_back(s);
      for (const auto& [m, s] : r.call_seconds) calls[m].push_back(s);
    }
    for (CommBenchRowKind kind : {CommBenchRowKind::kDetect, CommBenchRowKind::kSteady}) {
      CommBenchRow row;
      row.ranks = n;
      row.kind = kind;
      row.stats = Stats(kind == CommBenchRowKind::kDetect ? detect : steady);
      rows.push_back(row);
    }
    const PhaseStats inplace = Stats(by_mode[CommChangeMode::kInPlace]);
    for (CommChangeMode m : modes) {
      CommBenchRow row;
      row.ranks = n;
      row.mode = m;
      row.stats = Stats(by_mode[m]);
      row.call = Stats(calls[m]);
      if (inplace.p50_s > 0 && row.stats.p50_s >= 0) {
        row.ratio_to_inplace = row.stats.p50_s / inplace.p50_s;
      }
      rows.push_back(row);
    }
  }
  return rows;
}

core::Json CommBenchResult::ToJson() const {
  core::Json reps = core::Json::array();
  for (const CommBenchRepetition& r : repetitions) {
    core::Json seconds = core::Json::object();
    core::Json calls = core::Json::object();
    core::Json per = core::Json::object();
    for (const auto& [m, s] : r.seconds) seconds[CommChangeModeName(m)] = s;
    for (const auto& [m, s] : r.call_seconds) calls[CommChangeModeName(m)] = s;
    for (const auto& [m, v] : r.per_survivor) per[CommChangeModeName(m)] = v;
    reps.push_back({{"ranks", r.ranks},
                    {"repetition", r.repetition},
                    {"victim", r.victim},
                    {"detect_s", r.detect_s},
                    {"steady_s", r.steady_s},
                    {"seconds", seconds},
                    {"call_seconds", calls},
                    {"per_survivor_seconds", per}});
  }
  core::Json summary = core::Json::array();
  for (const CommBenchRow& row : rows) {
    const char* name = row.kind == CommBenchRowKind::kDetect   ? "detect"
                       : row.kind == CommBenchRowKind::kSteady ? "steady"
                                                               : CommChangeModeName(row.mode);
    summary.push_back(
        {{"ranks", row.ranks},
         {"mode", name},
         {"repetitions", row.stats.count},
         {"p50_s", row.stats.p50_s},
         {"max_s", row.stats.max_s},
         {"call_p50_s",
          row.kind == CommBenchRowKind::kMode ? core::Json(row.call.p50_s) : core::Json(nullptr)},
         {"call_max_s",
          row.kind == CommBenchRowKind::kMode ? core::Json(row.call.max_s) : core::Json(nullptr)},
         {"ratio_to_inplace",
          row.ratio_to_inplace < 0 ? core::Json(nullptr) : core::Json(row.ratio_to_inplace)}});
  }
  return {
      {"kind", "measured"},
      {"machine", fmt::format("this machine: {} online cores, every process on 127.0.0.1", cores)},
      {"cores", cores},
      {"figure",
       "per repetition the slowest survivor, from the start of the change to the end of "
       "the first checked AllReduceSum after it; call: the change's call alone; steady: a "
       "checked AllReduceSum of the survivors on connections already up (detect: from the "
       "SIGKILL to the last survivor's failed pending collective)"},
      {"summary", summary},
      {"repetitions", reps}};
}

core::Status CheckCommBenchOptions(const CommBenchOptions& o) {
  if (o.ranks.empty()) return core::InvalidArgument("--ranks: no process count given");
  for (int n : o.ranks) {
    if (n < 3 || n > 64) {
      return core::InvalidArgument(
          fmt::format("--ranks: got {}, must be in [3, 64] (one peer is killed, two survive)", n));
    }
  }
  if (o.modes.empty()) return core::InvalidArgument("--mode: no mode given");
  for (CommChangeMode m : o.modes) {
    if (m == CommChangeMode::kGloo && !CommBenchHasGloo()) {
      return core::InvalidArgument(CommBenchNoGlooMessage());
    }
  }
  if (o.repeats < 1) {
    return core::InvalidArgument(fmt::format("--repeats: got {}, must be >= 1", o.repeats));
  }
  if (!(o.timeout_s > 0)) {
    return core::InvalidArgument(fmt::format("--timeout: got {}, must be > 0", o.timeout_s));
  }
  if (o.run_dir.empty()) return core::InvalidArgument("comm-bench: no run directory");
  if (o.self_exe.empty()) return core::InvalidArgument("comm-bench: no tessera binary");
  return core::Status::Ok();
}

core::StatusOr<CommBenchResult> RunCommBench(const CommBenchOptions& o) {
  RETURN_IF_ERROR(CheckCommBenchOptions(o));
  const std::vector<CommChangeMode> modes = OrderedCommChangeModes(o.modes);
  std::error_code ec;
  std::filesystem::create_directories(o.run_dir, ec);
  if (ec) {
    return core::InvalidArgument(fmt::format("run directory '{}': {}", o.run_dir, ec.message()));
  }
  // An earlier command's Gloo keys under the same prefixes would read as this one's.
  const std::string store = CommBenchGlooStorePath(o.run_dir);
  std::filesystem::remove_all(store, ec);
  std::filesystem::create_directories(store, ec);
  if (ec) return core::Internal(fmt::format("cannot create '{}': {}", store, ec.message()));

  CommBenchResult result;
  result.cores = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  for (int n : o.ranks) {
    for (int rep = 0; rep < o.repeats; ++rep) {
      ASSIGN_OR_RETURN(CommBenchRepetition r, CommBenchRunOnce(o, n, rep, modes));
      if (o.progress) {
        std::string line = fmt::format(
            "comm-bench: {} processes, repetition {}/{}: killed world rank {}, "
            "detect {}, steady collective {}",
            n, rep + 1, o.repeats, r.victim, CommBenchMs(r.detect_s), CommBenchMs(r.steady_s));
        for (const auto& [m, s] : r.seconds) {
          line += fmt::format(", {} {} (call {})", CommChangeModeName(m), CommBenchMs(s),
                              CommBenchMs(r.call_seconds.at(m)));
        }
        o.progress(line);
      }
      result.repetitions.push_back(std::move(r));
    }
  }
  result.rows = SummarizeCommBench(result.repetitions, modes);
  return result;
}

}  // namespace tessera::elaswave
