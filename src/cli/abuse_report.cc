#include "cli/abuse_report.h"

#include <cstdio>

#include "core/byte_size.h"
#include "core/json_util.h"
#include "core/table.h"

namespace tessera::cli {
namespace {

std::string AbuseStatusText(int status) {
  if (status == serve::kNoReply) return "closed";
  if (status == serve::kTransportError) return "no reply";
  return std::to_string(status);
}

core::Status Verdict(const std::string& what, bool pass, const std::vector<std::string>& failures) {
  if (!pass) {
    std::string why;
    for (const std::string& f : failures) why += (why.empty() ? "" : "; ") + f;
    return core::FailedPrecondition(what + " check failed: " + why);
  }
  std::printf("%s check passed (measured)\n", what.c_str());
  return core::Status::Ok();
}

}  // namespace

core::Status ReportHostile(const serve::HostileOptions& options, const serve::HostileReport& r,
                           const std::string& json_path) {
  core::Table t({"case", "pass", "RSS before", "RSS after", "fds before", "fds after",
                 "what the server did"});
  auto bytes = [](int64_t b) { return b < 0 ? std::string("-") : core::FormatBytes(b); };
  for (const serve::HostileCase& c : r.cases) {
    t.AddRow({c.name, c.pass ? "yes" : "NO", bytes(c.rss_before), bytes(c.rss_after),
              std::to_string(c.fds_before), std::to_string(c.fds_after), c.outcome});
  }
  std::printf("%s", t.Render().c_str());
  std::printf("idle: valid request %.3f s, /healthz %.4f s; server RSS start %s, peak %s, end %s\n",
              r.idle_valid_s, r.idle_healthz_s, bytes(r.rss_start).c_str(),
              bytes(r.rss_peak).c_str(), bytes(r.rss_end).c_str());
  if (!json_path.empty())
    RETURN_IF_ERROR(core::WriteJsonFile(json_path, serve::ToJson(r, options)));
  return Verdict("hostile", r.pass, r.failures);
}

core::Status ReportAbuse(const serve::AbuseReport& r, const core::Json& json,
                         const std::string& json_path) {
  core::Table t({"kind", "group", "expected", "sent", "got", "mismatches"});
  for (const serve::AbuseKindReport& k : r.kinds) {
    std::string got;
    for (const auto& [status, n] : k.got) {
      got += (got.empty() ? "" : ", ") + AbuseStatusText(status) + ": " + std::to_string(n);
    }
    t.AddRow({k.name, k.group, AbuseStatusText(k.expected_status), std::to_string(k.sent), got,
              std::to_string(k.mismatches)});
  }
  std::printf("%s", t.Render().c_str());
  for (const serve::AbuseKindReport& k : r.kinds) {
    for (const std::string& e : k.examples) std::printf("%s: %s\n", k.name.c_str(), e.c_str());
  }
  if (!r.kinds_left_out.empty()) {
    std::string left;
    for (const std::string& k : r.kinds_left_out) left += (left.empty() ? "" : ", ") + k;
    std::printf("left out: %s (the server's budget is unknown or would run them)\n", left.c_str());
  }
  std::printf(
      "sent %lld, mismatches %lld; valid answered %lld of %lld (429 retries %lld); connections "
      "open at once %d (required %d); healthy at the end: %s; %.1f s\n",
      static_cast<long long>(r.sent), static_cast<long long>(r.mismatches),
      static_cast<long long>(r.valid_answered), static_cast<long long>(r.valid_sent),
      static_cast<long long>(r.retried_429), r.max_open_connections, r.connections_required,
      r.healthy_at_end ? "yes" : ("no, " + r.health_detail).c_str(), r.wall_s);
  if (r.rss_sampled) {
    std::string samples;
    for (const serve::RssSample& s : r.rss) {
      samples += (samples.empty() ? "" : ", ") + std::to_string(s.completed) + ":" +
                 core::FormatBytes(s.rss_bytes) + (s.phase == "main" ? "" : " (" + s.phase + ")");
    }
    std::printf("server RSS (cases done: RSS): %s\n", samples.c_str());
    std::printf("RSS end - warm = %lld bytes (bound %s)\n",
                static_cast<long long>(r.rss_end_bytes - r.rss_warm_bytes),
                core::FormatBytes(r.rss_bound_bytes).c_str());
  } else {
    std::printf("server RSS not sampled (give --server-pid)\n");
  }
  if (!json_path.empty()) RETURN_IF_ERROR(core::WriteJsonFile(json_path, json));
  return Verdict("abuse", r.pass, r.failures);
}

}  // namespace tessera::cli
