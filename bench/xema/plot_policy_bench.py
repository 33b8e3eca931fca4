#!/usr/bin/env python3
"""Plot a `tessera xema bench --json` sweep: SLO attainment against the budget, one line
per policy, one panel per (rate, SLO scale).

    python3 bench/xema/plot_policy_bench.py bench.json --out attainment.png
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="the sweep, written by tessera xema bench --json")
    ap.add_argument("--out", required=True, help="the image to write (.png or .svg)")
    a = ap.parse_args()
    try:
        with open(a.json) as f:
            sweep = json.load(f)
        points = sweep["points"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"{a.json}: cannot read a tessera xema bench sweep: {e}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("matplotlib is missing: scripts/install-deps.sh installs python3-matplotlib "
                 "(run with /usr/bin/python3)")
    rates = sorted({p["rate_rps"] for p in points})
    scales = sorted({p["slo_scale"] for p in points})
    policies = list(dict.fromkeys(p["policy"] for p in points))
    fig, axes = plt.subplots(len(rates), len(scales), figsize=(4 * len(scales), 3 * len(rates)),
                             squeeze=False, sharey=True)
    for i, rate in enumerate(rates):
        for j, scale in enumerate(scales):
            ax = axes[i][j]
            for policy in policies:
                sel = sorted((p["budget_bytes"] / 2**20, 100 * p["attainment"]) for p in points
                             if p["policy"] == policy and p["rate_rps"] == rate
                             and p["slo_scale"] == scale)
                if sel:
                    style = {"linewidth": 2.5} if policy == "xema" else {"linewidth": 1.2}
                    ax.plot([b for b, _ in sel], [v for _, v in sel], marker="o", label=policy,
                            **style)
            ax.set_title(f"{rate:g} req/s, SLO {scale:g}x isolated")
            ax.set_xlabel("budget per device (MiB)")
            if j == 0:
                ax.set_ylabel("SLO attainment (%)")
            ax.set_ylim(-5, 105)
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("tessera xema bench (measured)")
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
