"""`pip install --no-build-isolation .` into a fresh venv, then `import tessera` from that venv
outside the checkout: with Debian's interpreter (the one ctest runs, venv with
--system-site-packages) and with the first `python3` on PATH when it is another interpreter (a
pyenv or a hand-built Python: plain venv, pip from ensurepip, no setuptools or wheel needed).
The project's build backend takes the extension from TESSERA_BUILD_DIR; an interpreter the
extension was not built for gets one error line that says what to run."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def _interpreter_info(python: str):
    code = ("import sys, sysconfig; print(sys.executable); "
            "print(sysconfig.get_config_var('EXT_SUFFIX')); print(sys.version_info >= (3, 9))")
    r = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return None
    exe, suffix, recent = r.stdout.split()
    return exe, suffix, recent == "True"


def _interpreters():
    out = [pytest.param(sys.executable, True, id="debian")]
    other = shutil.which("python3")
    if other:
        info = _interpreter_info(other)
        if info and info[2] and os.path.realpath(info[0]) != os.path.realpath(sys.executable):
            out.append(pytest.param(info[0], False, id="path-python3"))
    return out


def _copy_package_sources(source_dir: Path, dst: Path) -> None:
    """What pip packages, without CMakeLists.txt: the backend then takes the built extension."""
    dst.mkdir()
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(source_dir / f, dst / f)
    for d in ("tessera", "build_backend"):
        shutil.copytree(source_dir / "python" / d, dst / "python" / d,
                        ignore=shutil.ignore_patterns("__pycache__"))


@pytest.mark.parametrize("python,system_site", _interpreters())
def test_pip_install_into_a_venv(tmp_path, source_dir, python, system_site):
    build_dir = os.environ.get("TESSERA_BUILD_DIR")
    assert build_dir, "TESSERA_BUILD_DIR must name the build directory (ctest sets it)"
    src = tmp_path / "src"
    _copy_package_sources(source_dir, src)
    venv = tmp_path / "venv"
    venv_args = [python, "-m", "venv"]
    venv_args += ["--system-site-packages", "--without-pip"] if system_site else []
    subprocess.run(venv_args + [str(venv)], check=True, timeout=300)
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(TESSERA_BUILD_DIR=build_dir, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    # The venv has no setuptools or wheel unless its base interpreter's site provides them.
    r = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", str(src)],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    suffix = _interpreter_info(py)[1]
    built = Path(build_dir) / "python" / "tessera" / ("_zellige" + suffix)
    if not built.exists():
        # Not built for this interpreter: refused, naming the directory and the command to run.
        assert r.returncode != 0
        assert f"TESSERA_BUILD_DIR={Path(build_dir).resolve()} holds no python/tessera/_zellige" \
            in r.stdout + r.stderr, r.stdout + r.stderr
        assert f"-DPython_EXECUTABLE={py}" in r.stdout + r.stderr
        return
    assert r.returncode == 0, r.stdout + r.stderr
    code = ("import tessera, tessera.zellige as z; "
            "p = z.plan([75600, 3600, 3600, 20000], 'a800x16'); "
            "print(tessera.__file__); print(p.planner, len(p.placements))")
    r = subprocess.run([py, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    installed, line = r.stdout.strip().splitlines()
    assert Path(installed).is_relative_to(venv), installed
    assert line == "zellige 4"
    assert (Path(installed).parent / "_zellige.pyi").exists()
