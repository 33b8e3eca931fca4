#include "option_fuzz.h"

#include <algorithm>
#include <optional>
#include <set>

namespace tessera::fuzz {
namespace {

struct Arg {
  std::string name;
  std::optional<std::string> value;
};

std::vector<Arg> ParseBase(const SubcommandSpec& spec, const std::vector<std::string>& base) {
  std::vector<Arg> args;
  for (size_t i = 0; i < base.size(); ++i) {
    Arg a{base[i], std::nullopt};
    const OptionSpec* o = spec.Find(base[i]);
    if ((o == nullptr || o->kind != ValueKind::kFlag) && i + 1 < base.size()) a.value = base[++i];
    args.push_back(a);
  }
  return args;
}

std::vector<std::string> Flatten(const SubcommandSpec& spec, const std::vector<Arg>& args) {
  std::vector<std::string> out = GroupWords(spec.group);
  out.push_back(spec.name);
  for (const Arg& a : args) {
    out.push_back(a.name);
    if (a.value) out.push_back(*a.value);
  }
  return out;
}

// Absolute output paths named by `kind` options (relative ones resolved against root).
std::vector<std::string> PathsOfKind(const SubcommandSpec& spec, const std::vector<Arg>& args,
                                     ValueKind kind, const std::string& root) {
  std::vector<std::string> out;
  for (const Arg& a : args) {
    const OptionSpec* o = spec.Find(a.name);
    if (o == nullptr || o->kind != kind || !a.value) continue;
    if (!a.value->empty() && (*a.value)[0] == '/') {
      out.push_back(*a.value);
    } else {
      out.push_back(root + "/" + *a.value);
    }
  }
  return out;
}

// The values of every option that is not an output (what the command may read).
std::vector<std::string> NonOutputValues(const SubcommandSpec& spec, const std::vector<Arg>& args) {
  std::vector<std::string> out;
  for (const Arg& a : args) {
    const OptionSpec* o = spec.Find(a.name);
    if (a.value &&
        (o == nullptr || (o->kind != ValueKind::kOutputFile && o->kind != ValueKind::kOutputDir))) {
      out.push_back(*a.value);
    }
  }
  return out;
}

void Set(std::vector<Arg>* args, const std::string& name, const std::string& value) {
  for (Arg& a : *args) {
    if (a.name == name) {
      a.value = value;
      return;
    }
  }
  args->push_back({name, value});
}

const SubcommandSpec& PickWeighted(const std::vector<SubcommandSpec>& table, core::Rng& rng) {
  int total = 0;
  for (const SubcommandSpec& s : table) total += s.weight;
  int r = static_cast<int>(rng.Below(total));
  for (const SubcommandSpec& s : table) {
    if (r < s.weight) return s;
    r -= s.weight;
  }
  return table.back();
}

std::string Misspell(const std::string& name, core::Rng& rng) {
  switch (rng.Below(4)) {
    case 0:
      return name + "s";
    case 1:
      return name.size() > 3 ? name.substr(0, name.size() - 1) : name + "x";
    case 2:
      return name.substr(1);  // one dash
    default: {
      std::string up = name;
      std::transform(up.begin(), up.end(), up.begin(), ::toupper);
      return up;
    }
  }
}

}  // namespace

FuzzCase MakeOptionCase(int index, const std::vector<SubcommandSpec>& table, const BadValues& bad,
                        const SampleFiles& s, core::Rng& rng) {
  const SubcommandSpec& spec = PickWeighted(table, rng);
  std::vector<Arg> args = ParseBase(spec, spec.bases[rng.Below(spec.bases.size())]);
  std::set<std::string> used(spec.keep.begin(), spec.keep.end());
  std::vector<std::string> what;
  std::set<std::string> touched;
  FuzzCase c;
  c.index = index;
  c.family = Family::kOption;
  c.subcommand = spec.name;

  auto set_bad = [&](const std::string& name, const BadValue& v) {
    if (name == "--option" && rng.Below(2) == 0) {
      args.push_back({name, v.text});  // one more key=value
    } else {
      Set(&args, name, v.text);
    }
    used.insert(name);
    touched.insert(name);
    what.push_back(name + "=" + v.label);
  };

  if (spec.mpi == MpiUse::kRelaunch) {
    std::vector<const OptionSpec*> anchors;
    for (const OptionSpec& o : spec.options)
      if (!o.parse_time_invalid.empty()) anchors.push_back(&o);
    const OptionSpec& a = *anchors[rng.Below(anchors.size())];
    const std::string& v = a.parse_time_invalid[rng.Below(a.parse_time_invalid.size())];
    std::string label = v;
    if (!v.empty() && v[0] == '/') label = "<" + v.substr(v.find_last_of('/') + 1) + ">";
    set_bad(a.name, {v, label});
    c.env.push_back(kNoMpiexecPath);
  }

  std::string trailing;  // an option given last without its value
  std::vector<const OptionSpec*> outputs, fuzzable;
  for (const OptionSpec& o : spec.options) {
    if (o.kind == ValueKind::kOutputFile) outputs.push_back(&o);
    if (o.kind != ValueKind::kFlag) fuzzable.push_back(&o);
  }
  const int ops = spec.mpi == MpiUse::kRelaunch ? static_cast<int>(rng.Below(3))
                                                : 1 + static_cast<int>(rng.Below(3));
  for (int op = 0; op < ops; ++op) {
    const int r = static_cast<int>(rng.Below(100));
    if (r < 8) {  // drop an option of the base
      std::vector<size_t> droppable;
      for (size_t i = 0; i < args.size(); ++i) {
        const std::vector<std::string>& nd = spec.never_drop;
        if (used.count(args[i].name) == 0 &&
            std::find(nd.begin(), nd.end(), args[i].name) == nd.end()) {
          droppable.push_back(i);
        }
      }
      if (!droppable.empty()) {
        const size_t i = droppable[rng.Below(droppable.size())];
        what.push_back("dropped " + args[i].name);
        touched.insert(args[i].name);
        used.insert(args[i].name);
        args.erase(args.begin() + static_cast<long>(i));
        continue;
      }
    } else if (r < 11) {  // a misspelt option
      const std::string name = Misspell(spec.options[rng.Below(spec.options.size())].name, rng);
      args.push_back({name, "1"});
      what.push_back("misspelt " + name);
      touched.insert("misspelt");
      continue;
    } else if (r < 13) {  // a stray positional argument
      args.push_back({rng.Below(2) == 0 ? "extra" : "--", std::nullopt});
      what.push_back("positional " + args.back().name);
      touched.insert("positional");
      continue;
    } else if (r < 15) {  // an option without its value, last
      const OptionSpec& o = *fuzzable[rng.Below(fuzzable.size())];
      trailing = o.name;
      what.push_back(o.name + " without a value");
      touched.insert("no value");
      continue;
    } else if (r < 17 && !args.empty()) {  // an option given twice
      const Arg a = args[rng.Below(args.size())];
      const OptionSpec* o = spec.Find(a.name);
      if (o != nullptr && o->kind != ValueKind::kFlag && used.count(a.name) == 0) {
        const std::vector<std::string> inputs =
            PathsOfKind(spec, args, ValueKind::kInputFile, s.root);
        const BadValue v = bad.For(o->kind, rng, inputs);
        args.push_back({a.name, v.text});
        used.insert(a.name);
        what.push_back(a.name + " twice (" + v.label + ")");
        touched.insert("twice");
        continue;
      }
    } else if (r < 25) {  // an environment variable tessera reads
      const BadValue v = bad.Environment(rng);
      c.env.push_back(v.text);
      what.push_back(v.label);
      touched.insert(v.text.substr(0, v.text.find('=')));
      continue;
    } else if (r < 35 && outputs.size() >= 2) {  // two outputs on one path
      const OptionSpec* a = outputs[rng.Below(outputs.size())];
      const OptionSpec* b = a;
      while (b == a) b = outputs[rng.Below(outputs.size())];
      const std::vector<std::string> inputs =
          PathsOfKind(spec, args, ValueKind::kInputFile, s.root);
      std::string path = s.out_dir + "/same.json";
      if (rng.Below(3) == 0 && !inputs.empty()) path = inputs[rng.Below(inputs.size())];
      for (const OptionSpec* o : {a, b}) {
        Set(&args, o->name, path);
        used.insert(o->name);
        touched.insert(o->name);
      }
      what.push_back(a->name + "=" + b->name + "=" +
                     (path == s.out_dir + "/same.json" ? "<same new file>" : "<an input>"));
      continue;
    } else if (r < 45 && !outputs.empty()) {  // an output on one of the command's inputs
      const std::vector<std::string> inputs =
          PathsOfKind(spec, args, ValueKind::kInputFile, s.root);
      if (!inputs.empty()) {
        const OptionSpec* o = outputs[rng.Below(outputs.size())];
        const std::string& in = inputs[rng.Below(inputs.size())];
        set_bad(o->name, {in, "<input " + in.substr(in.find_last_of('/') + 1) + ">"});
        continue;
      }
    }
    std::vector<const OptionSpec*> free;
    for (const OptionSpec* o : fuzzable)
      if (used.count(o->name) == 0 || o->kind == ValueKind::kKeyValue) free.push_back(o);
    if (free.empty()) continue;
    const OptionSpec* o = free[rng.Below(free.size())];
    const std::vector<std::string> inputs = PathsOfKind(spec, args, ValueKind::kInputFile, s.root);
    set_bad(o->name, bad.For(o->kind, rng, inputs));
  }

  c.args = Flatten(spec, args);
  if (!trailing.empty()) c.args.push_back(trailing);
  c.outputs = PathsOfKind(spec, args, ValueKind::kOutputFile, s.root);
  c.output_dirs = PathsOfKind(spec, args, ValueKind::kOutputDir, s.root);
  c.inputs = NonOutputValues(spec, args);
  for (const std::string& w : what) c.what += (c.what.empty() ? "" : " ") + w;
  c.signature = spec.name;
  for (const std::string& t : touched) c.signature += " " + t;
  return c;
}

std::vector<FuzzCase> BaseCases(const std::vector<SubcommandSpec>& table) {
  std::vector<FuzzCase> out;
  for (const SubcommandSpec& spec : table) {
    if (spec.mpi == MpiUse::kRelaunch) continue;  // valid ones would measure for minutes
    if (spec.needs_server) continue;              // no server here: they cannot pass
    for (const std::vector<std::string>& base : spec.bases) {
      const std::vector<Arg> args = ParseBase(spec, base);
      FuzzCase c;
      c.index = -1;
      c.subcommand = spec.name;
      c.args = Flatten(spec, args);
      for (const Arg& a : args) {
        const OptionSpec* o = spec.Find(a.name);
        if (o != nullptr && o->kind == ValueKind::kOutputFile && a.value)
          c.outputs.push_back(*a.value);  // the bases use absolute paths
        if (o != nullptr && o->kind == ValueKind::kOutputDir && a.value)
          c.output_dirs.push_back(*a.value);
      }
      c.inputs = NonOutputValues(spec, args);
      c.what = "base command";
      c.signature = spec.name + " base";
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace tessera::fuzz
