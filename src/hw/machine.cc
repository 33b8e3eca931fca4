#include "hw/machine.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "hw/data_files.h"

namespace tessera::hw {

using core::Json;
using core::Status;
using core::StatusOr;

namespace {

constexpr const char* kUnknown = "unknown";

std::string Trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\""));
  s.erase(s.find_last_not_of(" \t\"\r\n") + 1);
  return s;
}

// The value after `sep` on the first line of `path` that starts with `key`, or "".
std::string FirstValue(const std::string& path, const std::string& key, char sep) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t at = line.find(sep);
    if (at == std::string::npos) continue;
    return Trim(line.substr(at + 1));
  }
  return "";
}

// True if `s` has the IsoUtc shape "YYYY-MM-DDTHH:MM:SSZ".
bool IsIsoUtc(const std::string& s) {
  const std::string shape = "dddd-dd-ddTdd:dd:ddZ";
  if (s.size() != shape.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool ok =
        shape[i] == 'd' ? std::isdigit(static_cast<unsigned char>(s[i])) != 0 : s[i] == shape[i];
    if (!ok) return false;
  }
  return true;
}

StatusOr<std::string> NonEmptyString(const Json& j, const std::string& key) {
  ASSIGN_OR_RETURN(std::string v, core::GetString(j, "", key));
  if (v.empty()) return core::InvalidArgument(key + ": must be a non-empty string");
  return v;
}

}  // namespace

std::string IsoUtc(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Machine DescribeThisMachine() {
  Machine m;
  char host[256] = {0};
  m.hostname = gethostname(host, sizeof(host) - 1) == 0 && host[0] != '\0' ? host : kUnknown;
  m.cpu_model = FirstValue("/proc/cpuinfo", "model name", ':');
  if (m.cpu_model.empty()) m.cpu_model = "unknown CPU";
  m.cores = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));  // at least this one
  const std::string mem = FirstValue("/proc/meminfo", "MemTotal", ':');     // "24576000 kB"
  if (!mem.empty() && std::isdigit(static_cast<unsigned char>(mem[0]))) {
    m.memory_bytes = std::stoll(mem) * 1024;
  } else {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) m.memory_bytes = static_cast<int64_t>(pages) * page;
  }
  std::string distro = FirstValue("/etc/os-release", "PRETTY_NAME", '=');
  struct utsname u {};
  std::string kernel;
  if (uname(&u) == 0) kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  m.os = distro.empty() ? kernel : kernel.empty() ? distro : distro + ", " + kernel;
  if (m.os.empty()) m.os = kUnknown;
  m.date = IsoUtc(std::time(nullptr));
  return m;
}

std::string Summary(const Machine& m) {
  return m.hostname + " (" + m.cpu_model + ", " + std::to_string(m.cores) + " cores)";
}

Json ToJson(const Machine& m) {
  return {{"kind", "machine"},
          {"version", kMachineVersion},
          {"hostname", m.hostname},
          {"cpu_model", m.cpu_model},
          {"cores", m.cores},
          {"memory_bytes", m.memory_bytes},
          {"os", m.os},
          {"date", m.date}};
}

StatusOr<Machine> MachineFromJson(const Json& j, const std::string& source) {
  auto parse = [&]() -> StatusOr<Machine> {
    RETURN_IF_ERROR(CheckDataFileHeader(j, "machine", kMachineVersion, /*required=*/false));
    Machine m;
    ASSIGN_OR_RETURN(m.hostname, NonEmptyString(j, "hostname"));
    ASSIGN_OR_RETURN(m.cpu_model, NonEmptyString(j, "cpu_model"));
    ASSIGN_OR_RETURN(int64_t cores, core::GetPositiveInt(j, "", "cores"));
    if (cores > 1 << 20) {
      return core::InvalidArgument("cores: got " + std::to_string(cores) + ", must be <= 1048576");
    }
    m.cores = static_cast<int>(cores);
    ASSIGN_OR_RETURN(m.memory_bytes, core::GetNonNegativeInt(j, "", "memory_bytes"));
    ASSIGN_OR_RETURN(m.os, NonEmptyString(j, "os"));
    ASSIGN_OR_RETURN(m.date, core::GetString(j, "", "date"));
    if (!IsIsoUtc(m.date)) {
      return core::InvalidArgument("date: got '" + m.date +
                                   "', must be ISO-8601 UTC like 2025-03-01T12:34:56Z");
    }
    return m;
  };
  auto r = parse();
  if (!r.ok()) return r.status().WithPrefix(source);
  return r;
}

}  // namespace tessera::hw
