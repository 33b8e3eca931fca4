#include "cli/plot.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "cli/plot_scripts.h"
#include "core/input_file.h"
#include "core/output_file.h"
#include "core/subprocess.h"

namespace tessera::cli {

namespace {

// A directory made with mkdtemp, removed with its contents when this goes out of scope.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/tessera-plot-XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

std::string PlotPython() {
  const char* env = std::getenv("TESSERA_PYTHON");
  if (env != nullptr && *env != '\0') return env;
  if (access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

core::Status RenderPlot(const std::string& script, const core::Json& data,
                        const std::string& png_path, const std::string& option) {
  std::string_view text;
  for (const EmbeddedFile& f : EmbeddedPlotScripts())
    if (script == f.path) text = f.text;
  if (text.empty()) return core::NotFound("plot script '" + script + "' is not in this build");
  TempDir dir;
  if (dir.path().empty()) return core::Internal(option + ": cannot create a temporary directory");
  const std::string script_path = dir.path() + "/" + script;
  const std::string data_path = dir.path() + "/data.json";
  const std::string figure_path = dir.path() + "/figure.png";
  // Every script goes beside it: they share scripts/plot_common.py.
  for (const EmbeddedFile& f : EmbeddedPlotScripts()) {
    RETURN_IF_ERROR(core::WriteFileAtomically(dir.path() + "/" + f.path, f.text));
  }
  RETURN_IF_ERROR(core::WriteFileAtomically(data_path, data.dump()));
  const std::string python = PlotPython();
  auto run = core::RunProcess({python, script_path, data_path, figure_path});
  if (!run.ok()) {
    return core::InvalidArgument(option + ": " + run.status().message() +
                                 " (set TESSERA_PYTHON to a python3 with matplotlib)");
  }
  if (run->exit_code != 0) {
    std::string why = run->LastStderrLine();
    return core::InvalidArgument(option + ": drawing with " + python + " failed: " +
                                 (why.empty() ? "exit " + std::to_string(run->exit_code) : why));
  }
  auto figure = core::ReadInputFile(figure_path);
  if (!figure.ok() || figure->empty()) {
    return core::Internal(option + ": the plot script wrote no figure");
  }
  return core::WriteFileAtomically(png_path, *figure);
}

}  // namespace tessera::cli
