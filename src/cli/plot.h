// RenderPlot: draws a figure for a command's --plot option with one of tessera's plot scripts
// (cli/plot_scripts.h) and Python's matplotlib. The command computes the figure's data in the
// library (a JSON object); this writes it and the script to a private temporary directory,
// runs `<python> SCRIPT DATA.json FIGURE.png` there and moves the figure to `png_path` with
// core::WriteFileAtomically (so a failed plot never leaves a partial file or touches an
// existing one).
//
// <python> is $TESSERA_PYTHON when set, else /usr/bin/python3 when it exists (Debian's, where
// python3-matplotlib installs), else python3 on PATH.
// Errors: InvalidArgument "<option>: ..." with the script's one-line reason (matplotlib
// missing, bad data) or the interpreter that cannot be run; NotFound for a script that is not
// embedded (a build error). Not thread-safe (reads the environment; one plot at a time).
#pragma once

#include <string>

#include "core/json_util.h"
#include "core/status.h"

namespace tessera::cli {

// The interpreter RenderPlot runs (see above).
std::string PlotPython();

core::Status RenderPlot(const std::string& script, const core::Json& data,
                        const std::string& png_path, const std::string& option = "--plot");

}  // namespace tessera::cli
