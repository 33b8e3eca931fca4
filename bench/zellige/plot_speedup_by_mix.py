#!/usr/bin/env python3
"""Modeled speedup over USP by mixture, one panel per cluster (`make bench` draws it).

Reads the JSON files of `bench_zellige_sweep --json F` (one per cluster) and draws, per
mixture, each planner's mean-makespan speedup over usp as grouped bars; a planner whose plans
ran out of memory on some batches is hatched and its OOM count written above the bar. All
figures are modeled (analytic cost model on datasheet presets).

    python3 bench/zellige/plot_speedup_by_mix.py a800x16.json a6000x32.json --out speedup.png
"""
import argparse
import json
import sys

PLANNERS = ["zellige", "knapformer", "dynamic-cp", "dp", "adaptiveload"]
COLORS = {"zellige": "#3b75af", "knapformer": "#ef8636", "dynamic-cp": "#519e3e",
          "dp": "#c53a32", "adaptiveload": "#8d69b8"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sweeps", nargs="+", help="bench_zellige_sweep --json files")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = []
    for path in a.sweeps:
        try:
            with open(path) as f:
                data.append(json.load(f))
        except (OSError, ValueError) as e:
            sys.exit(f"{path}: {e}")
    fig, axes = plt.subplots(1, len(data), figsize=(5.2 * len(data), 3.6), squeeze=False)
    for ax, d in zip(axes[0], data):
        mixes, p = d["mixes"], d["planners"]
        usp = p["usp"]["mean_makespan_s"]
        names = [n for n in PLANNERS if n in p]
        width = 0.8 / len(names)
        for i, n in enumerate(names):
            xs = [m + (i - (len(names) - 1) / 2) * width for m in range(len(mixes))]
            ys = [u / v for u, v in zip(usp, p[n]["mean_makespan_s"])]
            ooms = p[n]["oom_batches"]
            bars = ax.bar(xs, ys, width * 0.95, color=COLORS.get(n, "grey"), label=n)
            for bar, oom in zip(bars, ooms):
                if oom:
                    bar.set_hatch("///")
                    bar.set_alpha(0.55)
                    ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height() + 0.02,
                            f"{oom}", ha="center", fontsize=6, color="#b00020")
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_xticks(range(len(mixes)))
        ax.set_xticklabels(mixes, fontsize=8)
        ax.set_ylabel("speedup over usp (mean makespan)", fontsize=8)
        ax.set_title(f"{d['cluster']}, {d['load_tokens_per_gpu'] // 1000}K tokens/GPU, "
                     f"{d['video_seconds']:g} s videos, {d['seeds']} batches", fontsize=9)
        ax.tick_params(labelsize=7)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, ncol=len(labels), loc="lower center", frameon=False)
    fig.suptitle("Modeled speedup over USP by mixture (hatched: OOM on the red count of "
                 "batches)", fontsize=9)
    fig.tight_layout(rect=(0, 0.06, 1, 0.94))
    fig.savefig(a.out, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
