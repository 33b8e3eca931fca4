"""The Python examples run to completion (examples/python/)."""

import os
import subprocess
import sys


def run_example(source_dir, name, *args):
    env = dict(os.environ)
    r = subprocess.run([sys.executable, str(source_dir / "examples" / "python" / name), *args],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_train_loop_runs_and_its_shards_add_up(source_dir):
    out = run_example(source_dir, "train_loop.py", "--steps", "2", "--token-scale", "0.0005")
    assert out.count("per-rank gradients summed vs whole batch") == 2
    assert "planned in" in out


def test_knapformer_dropin_compares_both(source_dir):
    out = run_example(source_dir, "knapformer_dropin.py", "--steps", "1")
    assert "knapformer" in out and "zellige over knapformer" in out
