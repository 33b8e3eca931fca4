#!/usr/bin/env python3
"""Plot the paper-scale grid written by `tessera compass grid --json F` (modeled).

One panel per topology file: for each strategy, the speed-up over `none` of every forward TP
operator of the grid (models x TP x token counts) as a box, medians marked, so the strategies
can be compared at a glance. The figures are modeled, and the title says so.

    python3 scripts/plot_compass_grid.py a6000x8.json h100x8.json --out grid.png
"""
import argparse
import json
import sys

STRATEGIES = ["auto", "fused-ring2", "fused-ring1", "fused-direct", "decomp:d*", "te"]


def read_grid(path):
    try:
        with open(path) as f:
            grid = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"{path}: {e}")
    if grid.get("kind") != "compass-paper-grid":
        sys.exit(f"{path}: kind: got {grid.get('kind')!r}, must be compass-paper-grid "
                 "(write it with tessera compass grid --json)")
    return grid


def speedups(grid, strategy):
    out = []
    for p in grid["points"]:
        t = p["predicted_s"]
        if strategy in t and "none" in t and t[strategy] > 0:
            out.append(t["none"] / t[strategy])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grids", nargs="+", help="JSON files from tessera compass grid --json")
    ap.add_argument("--out", required=True, help="image file to write (PNG, SVG, PDF)")
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grids = [read_grid(p) for p in args.grids]
    fig, axes = plt.subplots(1, len(grids), figsize=(5.5 * len(grids), 4.2), squeeze=False)
    for ax, grid in zip(axes[0], grids):
        data = [speedups(grid, s) for s in STRATEGIES]
        ax.boxplot(data, labels=STRATEGIES, showfliers=False)
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        ax.set_title(f"{grid['topology']}: {len(grid['points'])} operators (modeled)")
        ax.set_ylabel("speed-up over none")
        ax.tick_params(axis="x", labelrotation=30)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
