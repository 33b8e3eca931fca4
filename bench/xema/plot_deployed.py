#!/usr/bin/env python3
"""Plot a `tessera xema deployed --json` sweep: SLO attainment against the load, one line per
policy (Xema and each deployed configuration), one panel per (device, GPU count), one row of
panels per model. An infeasible policy has no line in its panel.

    python3 bench/xema/plot_deployed.py deployed.json --out attainment.png
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="the sweep, written by tessera xema deployed --json")
    ap.add_argument("--out", required=True, help="the image to write (.png or .svg)")
    a = ap.parse_args()
    try:
        with open(a.json) as f:
            points = json.load(f)["points"]
        panels = sorted({(p["device"], p["gpus"]) for p in points},
                        key=lambda k: (k[1], [p["device"] for p in points].index(k[0])))
        models = list(dict.fromkeys(p["model"] for p in points))
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"{a.json}: cannot read a tessera xema deployed sweep: {e}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("matplotlib is missing: scripts/install-deps.sh installs python3-matplotlib "
                 "(run with /usr/bin/python3)")
    fig, axes = plt.subplots(len(models), len(panels), squeeze=False, sharey=True,
                             figsize=(2.6 * len(panels), 2.4 * len(models)))
    styles = {}
    # One colour and dash per policy across every panel.
    look = {"xema": ("black", "-"), "xema+shed": ("black", "--"),
            "diffusers-model-offload": ("tab:orange", "-"),
            "diffusers-sequential-offload": ("tab:red", "-"),
            "vae-slicing-tiling": ("tab:blue", "-"), "xdit-fixed-sp": ("tab:green", "-"),
            "fsdp-sharded-weights": ("tab:purple", "-")}
    for r, model in enumerate(models):
        for c, (device, gpus) in enumerate(panels):
            ax = axes[r][c]
            mine = sorted((p for p in points if p["model"] == model and p["device"] == device
                           and p["gpus"] == gpus), key=lambda p: p["load"])
            policies = [row["policy"] for row in mine[0]["rows"]] if mine else []
            for i, policy in enumerate(policies):
                xs, ys = [], []
                for p in mine:
                    row = p["rows"][i]
                    if not row["infeasible"]:
                        xs.append(100 * p["load"])
                        ys.append(100 * row["attainment"])
                if not xs:
                    continue
                key = policy.split(":")[0]
                color, dash = look.get(key, ("tab:gray", ":"))
                line, = ax.plot(xs, ys, marker="o", markersize=3, color=color, linestyle=dash,
                                linewidth=2.0 if key.startswith("xema") else 1.1,
                                label=key if key not in styles else None)
                styles.setdefault(key, line)
            ax.set_ylim(-3, 103)
            ax.grid(alpha=0.3)
            if r == 0:
                ax.set_title(f"{device} x{gpus}", fontsize=9)
            if c == 0:
                ax.set_ylabel(f"{model}\nSLO attainment %", fontsize=8)
            if r == len(models) - 1:
                ax.set_xlabel("load % of capacity", fontsize=8)
            ax.tick_params(labelsize=7)
    fig.legend(list(styles.values()), list(styles.keys()), loc="lower center",
               ncol=len(styles), fontsize=8)
    fig.suptitle("Xema against deployed configurations (modeled)", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
