#include "elaswave/coordinator_protocol.h"

#include <fmt/format.h>

#include <array>
#include <vector>

#include "core/json_util.h"

namespace tessera::elaswave {
namespace {

constexpr std::array<std::pair<ControlKind, const char*>, 12> kKinds = {{
    {ControlKind::kRegister, "register"},
    {ControlKind::kHeartbeat, "heartbeat"},
    {ControlKind::kLost, "lost"},
    {ControlKind::kReady, "ready"},
    {ControlKind::kVote, "vote"},
    {ControlKind::kSnapshot, "snapshot"},
    {ControlKind::kDone, "done"},
    {ControlKind::kRoster, "roster"},
    {ControlKind::kAbort, "abort"},
    {ControlKind::kResume, "resume"},
    {ControlKind::kCommit, "commit"},
    {ControlKind::kShutdown, "shutdown"},
}};

}  // namespace

std::string ControlKindName(ControlKind k) {
  for (const auto& [kind, name] : kKinds) {
    if (kind == k) return name;
  }
  return "?";
}

std::string EncodeControl(const ControlMessage& m) {
  core::Json j;
  j["kind"] = ControlKindName(m.kind);
  j["world"] = m.world;
  j["epoch"] = m.epoch;
  j["step"] = m.step;
  j["complete_step"] = m.complete_step;
  j["digest"] = fmt::format("{:016x}", m.digest);
  j["peer"] = m.peer;
  j["pid"] = m.pid;
  j["address"] = m.address;
  j["why"] = m.why;
  j["code"] = m.code;
  j["spare"] = m.spare;
  j["dead"] = std::vector<int>(m.dead.begin(), m.dead.end());
  core::Json addresses = core::Json::object();
  for (const auto& [w, a] : m.addresses) addresses[std::to_string(w)] = a;
  j["addresses"] = addresses;
  return j.dump();
}

core::StatusOr<ControlMessage> DecodeControl(const std::string& bytes) {
  const auto j = core::Json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return core::InvalidArgument("control message: not a JSON object");
  }
  ControlMessage m;
  try {
    const std::string kind = j.at("kind").get<std::string>();
    bool found = false;
    for (const auto& [k, name] : kKinds) {
      if (kind == name) {
        m.kind = k;
        found = true;
      }
    }
    if (!found) {
      return core::InvalidArgument(
          fmt::format("control message: unknown kind '{}'", core::Utf8Prefix(kind, 40)));
    }
    m.world = j.at("world").get<int>();
    m.epoch = j.at("epoch").get<int64_t>();
    m.step = j.at("step").get<int64_t>();
    m.complete_step = j.at("complete_step").get<int64_t>();
    m.digest = std::stoull(j.at("digest").get<std::string>(), nullptr, 16);
    m.peer = j.at("peer").get<int>();
    m.pid = j.at("pid").get<int64_t>();
    m.address = j.at("address").get<std::string>();
    m.why = j.at("why").get<std::string>();
    m.code = j.at("code").get<int>();
    m.spare = j.at("spare").get<bool>();
    for (int w : j.at("dead")) m.dead.insert(w);
    for (const auto& [w, a] : j.at("addresses").items()) m.addresses[std::stoi(w)] = a;
  } catch (const std::exception& e) {
    return core::InvalidArgument(fmt::format("control message: {}", e.what()));
  }
  return m;
}

}  // namespace tessera::elaswave
