#!/usr/bin/env python3
"""A light background process for the validate protocol's loaded run: one thread that keeps a
core busy for --duty of every --period-ms (default 25% of 100 ms), until killed or --seconds
pass. On the 2-core VM that is an eighth of the machine, arriving in 25 ms bursts, the kind
of load an editor, a shell or a monitoring agent puts beside a job.

    python3 bench/zellige/light_load.py --duty 0.25 &   # then run tessera zellige validate
"""
import argparse
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duty", type=float, default=0.25, help="busy fraction of each period")
    ap.add_argument("--period-ms", type=float, default=100.0)
    ap.add_argument("--seconds", type=float, default=3600.0, help="stop after this long")
    a = ap.parse_args()
    if not 0 < a.duty < 1 or a.period_ms <= 0:
        ap.error("--duty must be in (0, 1) and --period-ms > 0")
    busy, idle = a.duty * a.period_ms / 1e3, (1 - a.duty) * a.period_ms / 1e3
    end = time.monotonic() + a.seconds
    x = 0
    while time.monotonic() < end:
        stop = time.monotonic() + busy
        while time.monotonic() < stop:
            x = (x * 1103515245 + 12345) % 2147483648
        time.sleep(idle)


if __name__ == "__main__":
    main()
