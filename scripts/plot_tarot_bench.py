#!/usr/bin/env python3
"""Draw a Tarot-SAM3 benchmark: gIoU per system and tier, and the reasoner error sweep (measured).

Reads the JSON that `tessera tarot bench --plot OUT.png` hands it (the command runs this script
itself; tarot::BenchPlotJson): {"title", "tiers": [...], "systems": [{"system", "giou": [points
or null per tier]}], "sweep": {"skill", "rates", "full", "coupling"} or null}. Left: a table of
gIoU points, systems by tiers, shaded by value. Right (when swept): gIoU of full and naive
coupling against the noisy reasoner's error rate.

    python3 scripts/plot_tarot_bench.py bench.json bench.png
"""
import sys

from plot_common import load_figure_data


def main(argv):
    plt, data, systems = load_figure_data(argv, "usage: plot_tarot_bench.py BENCH.json OUT.png",
                                          "systems")
    tiers = data["tiers"]
    sweep = data.get("sweep")
    if sweep:
        fig, (grid, curve) = plt.subplots(1, 2, figsize=(11, 0.42 * len(systems) + 2.2),
                                          gridspec_kw={"width_ratios": [1.6, 1]})
    else:
        fig, grid = plt.subplots(figsize=(7, 0.42 * len(systems) + 2.2))
    values = [[v if v is not None else float("nan") for v in s["giou"]] for s in systems]
    grid.imshow(values, cmap="Blues", vmin=0, vmax=100, aspect="auto")
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            text = "-" if v != v else f"{v:.1f}"
            grid.text(j, i, text, ha="center", va="center", fontsize=7,
                      color="white" if v == v and v > 60 else "black")
    grid.set_xticks(range(len(tiers)))
    grid.set_xticklabels(tiers)
    grid.set_yticks(range(len(systems)))
    grid.set_yticklabels([s["system"] for s in systems], fontsize=8)
    grid.set_title("gIoU (points) per tier", fontsize=9)
    if sweep:
        curve.plot(sweep["rates"], sweep["full"], "o-", label="full")
        curve.plot(sweep["rates"], sweep["coupling"], "s--", label="naive coupling")
        what = "every skill" if sweep["skill"] == "all" else sweep["skill"] + " errors only"
        curve.set_xlabel(f"noisy reasoner error rate (%), {what}")
        curve.set_ylabel("gIoU (points)")
        curve.set_ylim(0, 102)
        curve.grid(alpha=0.3)
        curve.legend(fontsize=8)
        curve.set_title("dependence on the reasoner", fontsize=9)
    fig.suptitle(data.get("title", "") + " (measured)", fontsize=10)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=120)


if __name__ == "__main__":
    main(sys.argv)
