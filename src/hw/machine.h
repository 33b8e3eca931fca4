// The machine a measurement ran on: host name, CPU model, logical cores, memory, OS and the
// date/time of the description (ISO-8601 UTC). Profiles and measured tables carry one so that
// a figure says where it was measured (design.md, "Provenance on every figure").
//
// DescribeThisMachine() reads gethostname(2), /proc/cpuinfo ("model name"), sysconf
// (_SC_NPROCESSORS_ONLN), /proc/meminfo ("MemTotal"), /etc/os-release ("PRETTY_NAME") and
// uname(2); a field it cannot read is "unknown" (strings), 1 (cores) or 0 (memory_bytes), never
// an error.
// Plain value; free functions are thread-safe.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>

#include "core/json_util.h"
#include "core/status.h"

namespace tessera::hw {

struct Machine {
  std::string hostname;      // e.g. "devbox"
  std::string cpu_model;     // e.g. "AMD EPYC 7B13"; "unknown CPU" when /proc/cpuinfo has none
  int cores = 0;             // online logical CPUs
  int64_t memory_bytes = 0;  // physical memory (MemTotal); 0 = unknown
  std::string os;            // distribution and kernel, e.g. "Debian GNU/Linux 12 (bookworm), Linux
                             // 6.1.0-18-amd64 x86_64"
  std::string date;          // when described, ISO-8601 UTC: "2025-03-01T12:34:56Z"

  bool operator==(const Machine&) const = default;
};

// Current schema version of Machine JSON.
inline constexpr int kMachineVersion = 1;

// Describes the machine this process runs on, dated now.
Machine DescribeThisMachine();

// "<hostname> (<cpu_model>, <cores> cores)": the one-line form profiles print.
std::string Summary(const Machine& m);

// `t` as ISO-8601 UTC with seconds, "YYYY-MM-DDTHH:MM:SSZ".
std::string IsoUtc(std::time_t t);

// {"kind": "machine", "version": 1, hostname, cpu_model, cores, memory_bytes, os, date}.
core::Json ToJson(const Machine& m);
// Parses and validates (non-empty strings, cores >= 1, memory_bytes >= 0, date in the IsoUtc
// form); "kind"/"version" optional but checked when present. `source` prefixes messages.
core::StatusOr<Machine> MachineFromJson(const core::Json& j, const std::string& source);

}  // namespace tessera::hw
