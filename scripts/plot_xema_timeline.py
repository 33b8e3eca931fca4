#!/usr/bin/env python3
"""Plot a memory timeline written by `tessera xema trace --timeline t.csv`.

Draws the live bytes op by op (weights and activations stacked), shades the text encoder,
denoising and VAE phases, and draws the budget as a horizontal line, so the pressure
intervals (where live bytes cross the budget) are visible at a glance.

    python3 scripts/plot_xema_timeline.py t.csv --budget 512MiB --out timeline.png
"""
import argparse
import csv
import re
import sys

UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
         "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def parse_bytes(text):
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in UNITS:
        raise argparse.ArgumentTypeError(
            f"--budget: got '{text}', must be a size like 512MiB, 40GB or 1073741824")
    return float(m.group(1)) * UNITS[m.group(2).upper()]


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    need = {"op", "phase", "live_bytes", "weight_bytes", "activation_bytes"}
    if not rows or not need.issubset(rows[0].keys()):
        sys.exit(f"{path}: not a timeline CSV (needs columns {', '.join(sorted(need))})")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="timeline CSV from `tessera xema trace --timeline`")
    ap.add_argument("--budget", type=parse_bytes, help="memory budget, e.g. 512MiB")
    ap.add_argument("--out", default="timeline.png", help="image to write (default %(default)s)")
    ap.add_argument("--title", default=None)
    args = ap.parse_args()

    try:
        import matplotlib
    except ImportError:
        sys.exit("plot_xema_timeline.py needs matplotlib: scripts/install-deps.sh installs "
                 "python3-matplotlib for Debian's /usr/bin/python3")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_rows(args.csv)
    ops = [int(r["op"]) for r in rows]
    weights = [int(r["weight_bytes"]) for r in rows]
    acts = [int(r["activation_bytes"]) for r in rows]
    peak = max(int(r["live_bytes"]) for r in rows)
    top = max(peak, args.budget or 0)
    scale, unit = next((s, u) for s, u in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"),
                                            (1, "B")) if top >= s or s == 1)

    fig, ax = plt.subplots(figsize=(10, 4))
    ax.stackplot(ops, [w / scale for w in weights], [a / scale for a in acts],
                 labels=["weights", "activations + workspaces"], step="mid",
                 colors=["#9ecae1", "#fd8d3c"])
    colors = {"text": "#e5f5e0", "denoise": "#f7f7f7", "vae": "#fee0d2"}
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or rows[i]["phase"] != rows[start]["phase"]:
            ax.axvspan(start - 0.5, i - 0.5, color=colors.get(rows[start]["phase"], "white"),
                       zorder=0)
            start = i
    peak_op = max(range(len(rows)), key=lambda i: int(rows[i]["live_bytes"]))
    ax.plot([ops[peak_op]], [peak / scale], marker="v", color="black", linestyle="none",
            label=f"peak at {rows[peak_op].get('name', peak_op)}")
    if args.budget:
        ax.axhline(args.budget / scale, color="#cb181d", linestyle="--",
                   label=f"budget {args.budget / scale:.4g} {unit}")
    ax.set_xlabel("op (prologue, steps, epilogue)")
    ax.set_ylabel(f"live memory ({unit})")
    ax.set_xlim(-0.5, len(rows) - 0.5)
    ax.set_title(args.title or f"{args.csv}: peak {peak / scale:.4g} {unit}")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
