#include "help_check.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "process_runner.h"

namespace tessera::fuzz {
namespace {

core::StatusOr<std::string> Help(const std::string& bin, const std::vector<std::string>& args,
                                 const std::string& cwd) {
  ProcessSpec spec;
  spec.argv = {bin};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.argv.push_back("--help");
  spec.env = EnvironmentWith({});
  spec.cwd = cwd;
  spec.timeout_s = 60;
  spec.stdout_to_stderr = true;
  ProcessResult r = RunProcess(spec);
  if (!r.started || r.timed_out || r.exit_code != 0) {
    std::string msg = "`" + spec.argv[0];
    for (size_t i = 1; i < spec.argv.size(); ++i) msg += " " + spec.argv[i];
    msg += "` failed: ";
    msg += r.start_error;
    return core::Internal(msg + r.stderr_text);
  }
  return r.stderr_text;
}

std::string Diff(const std::string& what, const std::set<std::string>& binary,
                 const std::set<std::string>& table) {
  std::string out;
  for (const std::string& n : binary)
    if (table.count(n) == 0) out += " " + what + " " + n + " is not in the table;";
  for (const std::string& n : table)
    if (binary.count(n) == 0) out += " " + what + " " + n + " is not in --help;";
  return out;
}

}  // namespace

std::vector<std::string> NamesInHelp(const std::string& help, bool subcommands) {
  std::vector<std::string> names;
  std::istringstream in(help);
  std::string line, section;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != ' ') {
      section = line;
      continue;
    }
    const size_t start = line.find_first_not_of(' ');
    if (start != 2) continue;  // entries are indented by two; wrapped text by more
    const size_t end = line.find_first_of(" ,", start);
    const std::string name = line.substr(start, end - start);
    if (subcommands && section.rfind("Subcommands:", 0) == 0) names.push_back(name);
    if (!subcommands && section.rfind("Options:", 0) == 0 && name.rfind("--", 0) == 0) {
      names.push_back(name);
    }
  }
  return names;
}

core::Status CheckTableAgainstHelp(const std::string& bin, const std::vector<SubcommandSpec>& table,
                                   const std::string& cwd) {
  std::set<std::string> groups;
  for (const SubcommandSpec& s : table) groups.insert(s.group);
  std::string diff;
  for (const std::string& group : groups) {
    const std::vector<std::string> words = GroupWords(group);
    ASSIGN_OR_RETURN(std::string top, Help(bin, words, cwd));
    std::set<std::string> subs_binary, subs_table;
    for (const std::string& n : NamesInHelp(top, true)) subs_binary.insert(n);
    for (const SubcommandSpec& s : table)
      if (s.group == group) subs_table.insert(s.name);
    // A nested group ("kernelflume bench") is a subcommand of its parent group.
    for (const std::string& g : groups)
      if (g.rfind(group + " ", 0) == 0 && g.find(' ', group.size() + 1) == std::string::npos)
        subs_table.insert(g.substr(group.size() + 1));
    diff += Diff(group + " subcommand", subs_binary, subs_table);
    for (const SubcommandSpec& s : table) {
      if (s.group != group || subs_binary.count(s.name) == 0) continue;
      std::vector<std::string> args = words;
      args.push_back(s.name);
      ASSIGN_OR_RETURN(std::string help, Help(bin, args, cwd));
      std::set<std::string> binary, listed;
      for (const std::string& n : NamesInHelp(help, false))
        if (n != "--help") binary.insert(n);
      for (const OptionSpec& o : s.options) listed.insert(o.name);
      diff += Diff(group + " " + s.name + " option", binary, listed);
    }
  }
  if (diff.empty()) return core::Status::Ok();
  diff.pop_back();
  return core::FailedPrecondition(
      "the command table (tests/fuzz/command_table.cc) is out of step with the binary:" + diff);
}

}  // namespace tessera::fuzz
