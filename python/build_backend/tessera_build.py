"""PEP 517 build backend for the `tessera` Python package, written for this project so that
`pip install --no-build-isolation .` works with any python3 >= 3.9: it needs neither
setuptools nor the `wheel` package, nothing is downloaded.

The package is python/tessera (pure Python) plus the pybind11 extension tessera._zellige, which
CMake builds (target tessera_py). The extension must match the interpreter that runs pip (its
EXT_SUFFIX, e.g. .cpython-311-x86_64-linux-gnu.so):
  - $TESSERA_BUILD_DIR, when set, names a build directory that already holds it;
  - otherwise, in a checkout, build/release is used when its extension matches, else
    build/python-<SOABI> is configured for this interpreter (-DPython_EXECUTABLE) and built.
A mismatch that cannot be built is one error line saying what to run.

The wheel is written here: the files, a dist-info (METADATA, WHEEL, RECORD) and the tag of
the running interpreter (cpXY-cpXY-<platform>).
"""

import base64
import hashlib
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
NAME = "tessera"
PY_FILES = ("__init__.py", "zellige.py", "_zellige.pyi", "py.typed")


def _version() -> str:
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        if line.startswith("version"):
            return line.split("=", 1)[1].strip().strip('"')
    raise RuntimeError("pyproject.toml: no version line")


def _ext_suffix() -> str:
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def _tag() -> str:
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{py}-{py}-{platform}"


def _in_checkout() -> bool:
    return (ROOT / "CMakeLists.txt").exists() and (ROOT / "src").is_dir()


def _built(build_dir: Path):
    ext = build_dir / "python" / NAME / ("_zellige" + _ext_suffix())
    return ext if ext.exists() else None


def _extension() -> Path:
    """The extension for this interpreter, built first where the checkout allows."""
    want = "_zellige" + _ext_suffix()
    env_dir = os.environ.get("TESSERA_BUILD_DIR")
    if env_dir:
        out = Path(env_dir).resolve()
        if _in_checkout() and (out / "CMakeCache.txt").exists():
            subprocess.check_call(["cmake", "--build", str(out), "--target", "tessera_py"])
        ext = _built(out)
        if ext is None:
            raise RuntimeError(
                f"TESSERA_BUILD_DIR={out} holds no python/{NAME}/{want} for "
                f"{sys.executable} (Python {sys.version_info.major}.{sys.version_info.minor}); "
                f"build it there with `cmake -S <checkout> -B {out} "
                f"-DPython_EXECUTABLE={sys.executable} && cmake --build {out} --target tessera_py`")
        return ext
    if not _in_checkout():
        raise RuntimeError("not a tessera checkout: set TESSERA_BUILD_DIR to a build directory "
                           f"that holds python/{NAME}/{want}")
    default = ROOT / "build" / "release"
    if (default / "CMakeCache.txt").exists():
        subprocess.check_call(["cmake", "--build", str(default), "--target", "tessera_py"])
        ext = _built(default)
        if ext is not None:
            return ext
    soabi = sysconfig.get_config_var("SOABI") or f"py{sys.version_info.major}{sys.version_info.minor}"
    out = ROOT / "build" / f"python-{soabi}"
    if not (out / "CMakeCache.txt").exists():
        print(f"tessera: configuring {out} for {sys.executable}", file=sys.stderr)
        subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(out), "-G", "Ninja",
                               "-DCMAKE_BUILD_TYPE=Release",
                               f"-DPython_EXECUTABLE={sys.executable}"])
    subprocess.check_call(["cmake", "--build", str(out), "--target", "tessera_py"])
    ext = _built(out)
    if ext is None:
        raise RuntimeError(f"{out}: the build made no python/{NAME}/{want}; is pybind11 "
                           "(python3-pybind11) found and are this interpreter's headers present?")
    return ext


def _metadata() -> str:
    readme = (ROOT / "README.md").read_text() if (ROOT / "README.md").exists() else ""
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {_version()}\n"
            "Summary: Plans, models and runs distributed deep-learning training and serving\n"
            "Requires-Python: >=3.9\nDescription-Content-Type: text/markdown\n\n" + readme)


def _dist_info() -> str:
    return f"{NAME}-{_version()}.dist-info"


def _wheel_file() -> str:
    return f"Wheel-Version: 1.0\nGenerator: tessera_build\nRoot-Is-Purelib: false\nTag: {_tag()}\n"


def _write_dist_info(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "METADATA").write_text(_metadata())
    (directory / "WHEEL").write_text(_wheel_file())


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


# --- PEP 517 hooks ----------------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    _write_dist_info(Path(metadata_directory) / _dist_info())
    return _dist_info()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {f"{NAME}/{f}": (ROOT / "python" / NAME / f).read_bytes() for f in PY_FILES}
    ext = _extension()
    files[f"{NAME}/{ext.name}"] = ext.read_bytes()
    info = _dist_info()
    files[f"{info}/METADATA"] = _metadata().encode()
    files[f"{info}/WHEEL"] = _wheel_file().encode()
    record = [_record_line(name, data) for name, data in files.items()]
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel_name = f"{NAME}-{_version()}-{_tag()}.whl"
    Path(wheel_directory).mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(Path(wheel_directory) / wheel_name, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            info_entry = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info_entry.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            info_entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info_entry, data)
    return wheel_name
