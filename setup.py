"""Builds the `tessera` Python package: python/tessera plus the pybind11 extension
tessera._zellige, which CMake builds (target tessera_py_zellige) into <build>/python/tessera.

In a checkout, the extension is built in $TESSERA_BUILD_DIR (default build/release, the
directory `make build` uses; configured here first if it is not yet). Outside a checkout (a
copy holding only setup.py, pyproject.toml and python/), $TESSERA_BUILD_DIR must name a build
directory that already holds the extension. Nothing is downloaded: run pip with
--no-build-isolation so that Debian's setuptools is used.
"""

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def build_dir() -> Path:
    return Path(os.environ.get("TESSERA_BUILD_DIR", ROOT / "build" / "release")).resolve()


class CMakeExtension(Extension):
    def __init__(self, name: str):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        out = build_dir()
        if (ROOT / "CMakeLists.txt").exists():
            if not (out / "CMakeCache.txt").exists():
                subprocess.check_call(
                    ["cmake", "-S", str(ROOT), "-B", str(out), "-G", "Ninja",
                     "-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={sys.executable}"])
            subprocess.check_call(["cmake", "--build", str(out), "--target", "tessera_py"])
        built = sorted(glob.glob(str(out / "python" / "tessera" / "_zellige*.so")))
        if not built:
            raise RuntimeError(
                f"TESSERA_BUILD_DIR: no python/tessera/_zellige*.so under {out}; "
                "run `make build` in a tessera checkout first")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[-1], target)


setup(
    packages=["tessera"],
    package_dir={"tessera": "python/tessera"},
    package_data={"tessera": ["*.pyi", "py.typed"]},
    ext_modules=[CMakeExtension("tessera._zellige")],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
