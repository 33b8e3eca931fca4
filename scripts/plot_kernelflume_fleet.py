#!/usr/bin/env python3
"""Draw GPUs in use and p99 TPOT over time for each simulated system (modeled).

Reads the JSON that `tessera kernelflume simulate --plot OUT.png` hands it (the command runs
this script itself; kernelflume::FleetPlotJson): {"title", "runs": [{"system", "usd_per_mtok",
"start_s": [...], "gpus_mean": [...], "tpot_p99_ms": [... or null]}]} and draws two panels on
one time axis: mean GPUs per window (top) and the window's p99 TPOT (bottom, log scale).

    python3 scripts/plot_kernelflume_fleet.py fleet.json fleet.png
"""
import sys

from plot_common import load_figure_data


def main(argv):
    plt, data, runs = load_figure_data(argv, "usage: plot_kernelflume_fleet.py FLEET.json OUT.png",
                                       "runs")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 5.2), sharex=True)
    colors = {"kernelflume": "#3b75af", "serverlessllm": "#ef8636"}
    longest = max((r["start_s"][-1] if r["start_s"] else 0) for r in runs)
    scale, unit = (3600.0, "h") if longest > 3 * 3600 else (60.0, "min")
    for r in runs:
        t = [s / scale for s in r["start_s"]]
        label = f"{r['system']} ({r['usd_per_mtok']:.2f} USD / M output tokens)"
        color = colors.get(r["system"])
        top.step(t, r["gpus_mean"], where="post", color=color, label=label, lw=1.2)
        pts = [(x, y) for x, y in zip(t, r["tpot_p99_ms"]) if y is not None]
        if pts:
            bottom.plot([p[0] for p in pts], [p[1] for p in pts], ".", ms=3, color=color,
                        label=r["system"])
    top.set_ylabel("GPUs (window mean)")
    top.legend(fontsize=8, loc="upper right")
    top.grid(alpha=0.3)
    bottom.set_ylabel("p99 TPOT per window (ms)")
    bottom.set_yscale("log")
    bottom.set_xlabel(f"time ({unit})")
    bottom.grid(alpha=0.3, which="both")
    fig.suptitle(data.get("title", "") + " (modeled)", fontsize=10)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=120)


if __name__ == "__main__":
    main(sys.argv)
