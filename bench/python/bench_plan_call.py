"""Cost of planning from Python: tessera.zellige.plan on a 1,000-sequence batch against the same
library calls made from C++ (bench_zellige_plan_call), interleaved rounds (C++ then Python, so
drift hits both alike), median per round, then min / median / max over rounds of the ratio.
Measured on this machine; the figure is the median ratio (target: <= 1.05).

    PYTHONPATH=build/release/python python3 bench/python/bench_plan_call.py \\
        --bench build/release/bench/bench_zellige_plan_call [--rounds 7] [--repeats 21]
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

from tessera import zellige


def lens_1000(seed: int) -> list[int]:
    """1,000 sequences: images and 2% short videos (4.7M tokens)."""
    rng = random.Random(seed)
    images = [zellige.tokens("image", r) for r in ("512x512", "720p", "1024x1024", "1080p")]
    videos = [zellige.tokens("video", r, s) for r in ("480p", "720p") for s in (2.0, 5.0)]
    return [rng.choice(videos) if rng.random() < 0.02 else rng.choice(images) for _ in range(1000)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="path of bench_zellige_plan_call")
    ap.add_argument("--cluster", default="a800x16")
    ap.add_argument("--planner", default="zellige")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--repeats", type=int, default=21)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    lens = lens_1000(a.seed)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(lens, f)
        path = f.name
    try:
        zellige.plan(lens, a.cluster, planner=a.planner)  # warm-up
        ratios, cpp_ms, py_ms = [], [], []
        for r in range(a.rounds):
            out = subprocess.run([a.bench, "--lens", path, "--cluster", a.cluster, "--planner",
                                  a.planner, "--repeats", str(a.repeats)],
                                 capture_output=True, text=True, check=True).stdout.split()
            c = float(out[out.index("median_ms") + 1])
            times = []
            for _ in range(a.repeats):
                t0 = time.perf_counter()
                zellige.plan(lens, a.cluster, planner=a.planner)
                times.append(1e3 * (time.perf_counter() - t0))
            p = statistics.median(times)
            cpp_ms.append(c)
            py_ms.append(p)
            ratios.append(p / c)
            print(f"round {r}: C++ {c:.3f} ms, Python {p:.3f} ms, ratio {p / c:.4f}",
                  file=sys.stderr)
    finally:
        os.unlink(path)
    print(f"planner {a.planner} on {a.cluster}, {len(lens)} sequences, {sum(lens):,} tokens "
          f"(measured, {a.rounds} rounds x {a.repeats} calls)")
    print(f"C++ median per round: {min(cpp_ms):.3f} / {statistics.median(cpp_ms):.3f} / "
          f"{max(cpp_ms):.3f} ms (min / median / max)")
    print(f"Python median per round: {min(py_ms):.3f} / {statistics.median(py_ms):.3f} / "
          f"{max(py_ms):.3f} ms")
    print(f"Python / C++: {min(ratios):.4f} / {statistics.median(ratios):.4f} / "
          f"{max(ratios):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
