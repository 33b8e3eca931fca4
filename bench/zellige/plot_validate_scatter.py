#!/usr/bin/env python3
"""Predicted against measured step makespan of `tessera zellige validate --json V.json`.

One point per plan of the 21-plan protocol: calibrated prediction (the cost model with the drift
probe's rank factors; the headline) and uncalibrated (the profile as measured) against the
measured makespan, with the y = x line and a +-3.4% band (the paper's MAPE); a second panel
does the same for peak allocated memory. Predictions are modeled, measurements measured on the
machine that ran validate.

    python3 bench/zellige/plot_validate_scatter.py validate.json --out scatter.png
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("validate_json")
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    try:
        with open(a.validate_json) as f:
            v = json.load(f)
        plans = v["plans"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"{a.validate_json}: {e}")
    ms = [p["measured_makespan_s"] for p in plans]
    cal = [p["drift_corrected_makespan_s"] for p in plans]
    raw = [p["predicted_makespan_s"] for p in plans]
    mm = [p["measured_peak_bytes"] / 2**20 for p in plans]
    pm = [p["predicted_peak_bytes"] / 2**20 for p in plans]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9.0, 4.0))
    lo, hi = 0.95 * min(ms + cal + raw), 1.05 * max(ms + cal + raw)
    ax.fill_between([lo, hi], [lo * 0.966, hi * 0.966], [lo * 1.034, hi * 1.034],
                    color="#dddddd", label="y = x +- 3.4%")
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
    ec, er = v["makespan_drift_corrected"], v["makespan"]
    ax.scatter(ms, raw, s=14, marker="x", color="#ef8636",
               label=f"uncalibrated: MAPE {er['mape_percent']:.2f}%")
    ax.scatter(ms, cal, s=16, color="#3b75af",
               label=f"calibrated: MAPE {ec['mape_percent']:.2f}% "
                     f"({ec['mape_p5_percent']:.1f}-{ec['mape_p95_percent']:.1f}%)")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured step makespan, s", fontsize=8)
    ax.set_ylabel("predicted, s (modeled)", fontsize=8)
    ax.legend(fontsize=7, loc="upper left")
    ax.tick_params(labelsize=7)
    lo, hi = 0.95 * min(mm + pm), 1.05 * max(mm + pm)
    bx.plot([lo, hi], [lo, hi], color="black", lw=0.8)
    bx.scatter(mm, pm, s=16, color="#519e3e",
               label=f"MAPE {v['memory']['mape_percent']:.2f}%")
    bx.set_xlabel("measured peak allocated memory, MiB", fontsize=8)
    bx.set_ylabel("predicted, MiB (modeled)", fontsize=8)
    bx.legend(fontsize=7, loc="upper left")
    bx.tick_params(labelsize=7)
    title = a.title or (f"zellige validate: {len(plans)} plans, {v['ranks']} ranks, "
                        f"median of {v['repeats']} steps")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(a.out, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
