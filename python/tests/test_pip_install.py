"""`pip install --no-build-isolation .` into a venv made with --system-site-packages (Debian's
setuptools only, no index), then `import tessera` from that venv outside the checkout."""

import os
import shutil
import subprocess
import sys
from pathlib import Path


def test_pip_install_into_a_venv(tmp_path, source_dir):
    build_dir = os.environ.get("TESSERA_BUILD_DIR")
    assert build_dir, "TESSERA_BUILD_DIR must name the build directory (ctest sets it)"
    # A copy of what pip packages (no CMakeLists.txt: setup.py takes the built extension).
    src = tmp_path / "src"
    src.mkdir()
    for f in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(source_dir / f, src / f)
    shutil.copytree(source_dir / "python" / "tessera", src / "python" / "tessera")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(venv)], check=True)
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(TESSERA_BUILD_DIR=build_dir, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    r = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", str(src)],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
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
