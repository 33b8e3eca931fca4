#!/usr/bin/env python3
"""Plots `bench_planner_scaling --csv` output: solve time (measured) and load over the proven
lower bound (modeled) against ranks, one line per mixture, log-log time axis with a linear
reference through the smallest rank count.

Usage: plot_planner_scaling.py SCALING.csv OUT.png [LABEL [NO_REUSE.csv]]
NO_REUSE.csv (optional, run with --option zellige.reuse_cells=off) adds the median over its
mixtures as a dotted "every cell solved" line.
"""
import csv
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def medians_by_ranks(path):
    by = defaultdict(list)
    for row in csv.DictReader(open(path)):
        by[int(row["ranks"])].append(float(row["solve_ms_median"]))
    return {n: statistics.median(v) for n, v in by.items()}


def main(path, out, label="", no_reuse=None):
    ms = defaultdict(lambda: defaultdict(list))
    over = defaultdict(lambda: defaultdict(list))
    for row in csv.DictReader(open(path)):
        n, mix = int(row["ranks"]), row["mix"]
        ms[mix][n].append(float(row["solve_ms_median"]))
        over[mix][n].append(100 * (float(row["load_s"]) / float(row["bound_s"]) - 1))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ranks = sorted({n for m in ms.values() for n in m})
    for mix in sorted(ms):
        xs = sorted(ms[mix])
        ax1.plot(xs, [statistics.median(ms[mix][n]) for n in xs], "o-", label=mix)
        ax2.plot(xs, [max(over[mix][n]) for n in xs], "o-", label=mix)
    first = statistics.median([v for m in ms.values() for v in m[ranks[0]]])
    ax1.plot(ranks, [first * n / ranks[0] for n in ranks], "k--", lw=0.8, label="linear")
    if no_reuse:
        off = medians_by_ranks(no_reuse)
        xs = sorted(off)
        ax1.plot(xs, [off[n] for n in xs], "k:", marker="x", label="every cell solved")
    ax1.set_xscale("log", base=2)
    ax1.set_yscale("log")
    ax1.set_xlabel("ranks")
    ax1.set_ylabel("solve ms, median (measured)")
    ax1.legend()
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("ranks")
    ax2.set_ylabel("load over lower bound, % (modeled, max)")
    ax2.axhline(1.0, color="r", lw=0.8, ls=":")
    ax2.set_ylim(0, 1.1)
    ax2.legend()
    fig.suptitle("zellige planner scaling " + label)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    main(*sys.argv[1:5])
