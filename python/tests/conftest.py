"""Shared fixtures: the tessera binary the CLI-equality tests compare with, and a runner."""

import os
import subprocess
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tessera_bin() -> str:
    path = os.environ.get("TESSERA_BIN")
    if not path or not Path(path).exists():
        pytest.fail("TESSERA_BIN must name the built tessera binary (ctest sets it)")
    return path


@pytest.fixture(scope="session")
def source_dir() -> Path:
    return Path(os.environ.get("TESSERA_SOURCE_DIR", Path(__file__).resolve().parents[2]))


def run_cli(binary: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([binary, *args], capture_output=True, text=True, timeout=300)
    if check and r.returncode != 0:
        raise AssertionError(f"tessera {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return r
