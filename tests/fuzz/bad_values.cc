#include "bad_values.h"

#include <filesystem>

namespace tessera::fuzz {
namespace {

template <class T>
const T& Pick(const std::vector<T>& v, core::Rng& rng) {
  return v[rng.Below(v.size())];
}

std::string Base(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

const std::vector<std::string>& NumberTexts() {
  static const std::vector<std::string> v = {"-1",
                                             "0",
                                             "-0",
                                             "nan",
                                             "NaN",
                                             "-nan",
                                             "inf",
                                             "-inf",
                                             "+inf",
                                             "1e400",
                                             "-1e400",
                                             "1e-300",
                                             "-1e-300",
                                             "4.6e18",
                                             "1e19",
                                             "1.8e308",
                                             "2147483648",
                                             "4294967296",
                                             "9223372036854775807",
                                             "9223372036854775808",
                                             "-9223372036854775809",
                                             "18446744073709551615",
                                             "18446744073709551616",
                                             "99999999999999999999",
                                             "0.5",
                                             "1.5",
                                             "-0.5",
                                             "0x10",
                                             "1e",
                                             "1e3",
                                             "1,5",
                                             ".",
                                             "+",
                                             "--1",
                                             " 1",
                                             "1 ",
                                             "1_000",
                                             "١٢",
                                             "0b101",
                                             "1/2",
                                             "3.4028235e39"};
  return v;
}

const std::vector<std::string>& TextTexts() {
  static const std::vector<std::string> v = {"",
                                             " ",
                                             "garbage",
                                             "v50x",
                                             "v",
                                             "v-1",
                                             "v999",
                                             "V50",
                                             "high\n",
                                             "a\nb",
                                             "x\ty",
                                             "\r",
                                             "%s%n%x",
                                             "'\"`",
                                             "-",
                                             "--",
                                             "=",
                                             "\\",
                                             "null",
                                             "{}",
                                             "[]",
                                             "ünïcödé",
                                             "ｖ５０",
                                             "🙂",
                                             "\xff\xfe\xfd",
                                             "\xc3",
                                             "\x01\x02",
                                             "\x1b[31mred",
                                             "1080p720p",
                                             "0x0",
                                             "99999999999999999999x1",
                                             "-5x720",
                                             "1920x",
                                             "x1080"};
  return v;
}

// Very long text: a prefix and a long run of one character (printable in a reproducer).
BadValue LongText(core::Rng& rng) {
  const size_t n = rng.Below(2) == 0 ? 5000 : 70000;
  const char c = "xa9"[rng.Below(3)];
  return {std::string(n, c), "long text (" + std::to_string(n) + " '" + c + "')"};
}

}  // namespace

BadValue BadValues::Number(core::Rng& rng) const {
  const std::string& t = Pick(NumberTexts(), rng);
  return {t, t.empty() ? "''" : t};
}

BadValue BadValues::Text(core::Rng& rng) const {
  if (rng.Below(12) == 0) return LongText(rng);
  const std::string& t = Pick(TextTexts(), rng);
  return {t, t};
}

BadValue BadValues::InputPath(core::Rng& rng) const {
  switch (rng.Below(15)) {
    case 0:
      return {s_.dir, "<folder>"};
    case 1:
      return {"/dev/null", "/dev/null"};
    case 2:
      return {"/dev/full", "/dev/full"};
    case 3:
      return {"/dev/zero", "/dev/zero"};
    case 4:
      return {s_.loop, "<symlink loop>"};
    case 5:
      return {s_.in_dir + "/" + std::string(300, 'n') + ".json", "<300-char name>"};
    case 6:
      return {s_.missing, "<missing file>"};
    case 7:
      return {s_.dangling, "<dangling symlink>"};
    case 8:
      return {s_.empty_file, "<empty file>"};
    case 9:
    case 10: {
      const std::string other = Pick(s_.AllInputs(), rng);
      std::string label = "<";
      label += Base(other);
      return {other, label + ">"};
    }
    case 11:
      return {s_.missing_dir_file, "<file in missing folder>"};
    case 12:
      return {"", "''"};
    case 13:
      return {s_.root + "/" + std::string(5000, 'd'), "<5000-char path>"};
    default:
      return {s_.in_dir + "/", "<folder/>"};
  }
}

BadValue BadValues::OutputPath(core::Rng& rng, const std::vector<std::string>& inputs) const {
  switch (rng.Below(14)) {
    case 0:
      return {s_.dir, "<folder>"};
    case 1:
      return {"/dev/null", "/dev/null"};
    case 2:
    case 3:
      return {"/dev/full", "/dev/full"};
    case 4:
      return {s_.loop, "<symlink loop>"};
    case 5:
      return {s_.long_name, "<300-char name>"};
    case 6:
      return {s_.missing_dir_file, "<file in missing folder>"};
    case 7:
      return {s_.link_to_cluster, "<symlink to cluster.json>"};
    case 8:
    case 9:
    case 10: {
      const std::string& in = inputs.empty() ? s_.cluster : Pick(inputs, rng);
      // The same file by another spelling now and then (./x, x/../x).
      std::filesystem::path p(in);
      switch (rng.Below(3)) {
        case 0:
          return {(p.parent_path() / "." / p.filename()).string(), "<input " + Base(in) + ">"};
        case 1: {
          std::filesystem::path dir = p.parent_path();
          return {(dir / ".." / dir.filename() / p.filename()).string(),
                  "<input " + Base(in) + ">"};
        }
        default:
          return {in, "<input " + Base(in) + ">"};
      }
    }
    case 11:
      return {"", "''"};
    case 12:
      return {s_.dangling, "<dangling symlink>"};
    default:
      return {s_.out_dir + "/", "<out folder/>"};
  }
}

BadValue BadValues::KeyValue(core::Rng& rng) const {
  static const std::vector<std::string> v = {"zellige.gapp=1",
                                             "knapformer.bag=g8n1",
                                             "ZELLIGE.GAP=1",
                                             "=1",
                                             "noequals",
                                             "a=b=c",
                                             ".=1",
                                             "zellige.=1",
                                             "usp.split=1",
                                             "knapformer.bags=",
                                             "knapformer.bags=g0n0",
                                             "knapformer.bags=g3",
                                             "knapformer.bags=g99999999999999999999n1",
                                             "knapformer.bags=g8n99999999999999999999",
                                             "knapformer.bags=g-8n1",
                                             "knapformer.bags=g8n1+g8n1",
                                             "knapformer.bags=gxny",
                                             "knapformer.gamma=0",
                                             "knapformer.gamma=-1",
                                             "knapformer.gamma=nan",
                                             "knapformer.gamma=1e400",
                                             "knapformer.gamma=",
                                             "zellige.time_limit_s=nan",
                                             "zellige.time_limit_s=-1",
                                             "zellige.time_limit_s=1e400",
                                             "zellige.time_limit_s=",
                                             "zellige.gap=inf",
                                             "zellige.gap=-0.5",
                                             "zellige.split_tolerance=1e-300",
                                             "zellige.split_bytes_weight=-inf",
                                             "zellige.split_time_limit_s=garbage",
                                             "joint.time_limit_s=-inf",
                                             "joint.gap=nan",
                                             "ünï=1",
                                             "zellige.gap=1\n2"};
  const std::string& t = Pick(v, rng);
  return {t, t};
}

BadValue BadValues::List(core::Rng& rng, bool integers) const {
  static const std::vector<std::string> ints = {
      "0", "8,0", "8,-1", "8,,16", ",", "8,x", "1e400", "99999999999999999999", "8,nan", "", "-8"};
  static const std::vector<std::string> names = {
      "v50,", ",", "v50,v99", "v50,,v60", "nope", "", "zellige,nope", "v50,v50", "v-5", "v1000"};
  const std::string& t = Pick(integers ? ints : names, rng);
  return {t, t.empty() ? "''" : t};
}

BadValue BadValues::Environment(core::Rng& rng) const {
  switch (rng.Below(3)) {
    case 0: {
      static const std::vector<std::string> mb = {
          "0", "-1", "abc", "1e400", "99999999999999999999", "0.5", " 5", "1", "1048577", "5x"};
      const std::string& v = Pick(mb, rng);
      return {"TESSERA_MAX_INPUT_MB=" + v, "TESSERA_MAX_INPUT_MB=" + v};
    }
    case 1: {
      const std::vector<std::pair<std::string, std::string>> dirs = {
          {s_.dir, "<empty folder>"},      {s_.missing, "<missing>"}, {s_.cluster, "<a file>"},
          {s_.loop, "<symlink loop>"},     {s_.in_dir, "<in/>"},      {"/dev/null", "/dev/null"},
          {"relative/dir", "relative/dir"}};
      const auto& [v, label] = Pick(dirs, rng);
      return {"TESSERA_DATA_DIR=" + v, "TESSERA_DATA_DIR=" + label};
    }
    default: {
      static const std::vector<std::string> levels = {"garbage", "5",   "-1",
                                                      "DEBUG\n", "ünï", "warn,info"};
      const std::string& v = Pick(levels, rng);
      return {"TESSERA_LOG=" + v, "TESSERA_LOG=" + v};
    }
  }
}

BadValue BadValues::For(ValueKind kind, core::Rng& rng,
                        const std::vector<std::string>& inputs) const {
  if (rng.Below(6) == 0) {  // a value meant for another kind
    switch (rng.Below(4)) {
      case 0:
        return Number(rng);
      case 1:
        return Text(rng);
      case 2:
        return InputPath(rng);
      default:
        return List(rng, true);
    }
  }
  switch (kind) {
    case ValueKind::kInt:
    case ValueKind::kUint:
    case ValueKind::kFloat:
      return rng.Below(5) == 0 ? Text(rng) : Number(rng);
    case ValueKind::kText:
      return rng.Below(2) == 0 ? Text(rng) : Number(rng);
    case ValueKind::kInputFile:
      return rng.Below(5) == 0 ? Text(rng) : InputPath(rng);
    case ValueKind::kOutputFile:
    case ValueKind::kOutputDir:
      return OutputPath(rng, inputs);
    case ValueKind::kKeyValue:
      return KeyValue(rng);
    case ValueKind::kIntList:
      return rng.Below(4) == 0 ? Number(rng) : List(rng, true);
    case ValueKind::kTextList:
      return rng.Below(4) == 0 ? Text(rng) : List(rng, false);
    case ValueKind::kFlag:
      break;
  }
  return Text(rng);
}

}  // namespace tessera::fuzz
