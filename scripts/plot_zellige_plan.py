#!/usr/bin/env python3
"""Draw each planner's per-rank step time (modeled): compute, exposed communication, idle.

Reads the JSON that `tessera zellige plan --plot OUT.png` hands it (the command runs this
script itself; zellige::RankTimeBreakdownJson): {"title", "label", "planners": [{"planner",
"makespan_s", "feasible", "compute_s": [...], "comm_s": [...], "idle_s": [...]}]} and draws one
panel per planner, side by side on one time axis: a stacked bar per rank.

    python3 scripts/plot_zellige_plan.py breakdown.json plan.png
"""
import sys

from plot_common import load_figure_data


def main(argv):
    plt, data, planners = load_figure_data(
        argv, "usage: plot_zellige_plan.py BREAKDOWN.json OUT.png", "planners")
    n = len(planners)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols + 0.8, 2.6 * rows + 0.9),
                             sharey=True, squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    top = max(p["makespan_s"] for p in planners)
    colors = {"compute": "#3b75af", "exposed comm": "#ef8636", "idle": "#c9c9c9"}
    for ax, p in zip(axes.flat, planners):
        ranks = range(len(p["compute_s"]))
        bottom = [0.0] * len(p["compute_s"])
        for key, label in (("compute_s", "compute"), ("comm_s", "exposed comm"),
                           ("idle_s", "idle")):
            ax.bar(ranks, p[key], bottom=bottom, width=0.85, color=colors[label], label=label)
            bottom = [b + v for b, v in zip(bottom, p[key])]
        status = "" if p["feasible"] else "  OOM"
        ax.set_title(f"{p['planner']}: {p['makespan_s']:.1f} s{status}", fontsize=9,
                     color="black" if p["feasible"] else "#b00020")
        ax.set_xlabel("rank", fontsize=8)
        ax.set_ylim(0, top * 1.05)
        ax.tick_params(labelsize=7)
        step = max(1, len(p["compute_s"]) // 8)
        ax.set_xticks(list(ranks)[::step])
    for r in range(rows):
        axes[r][0].set_ylabel("seconds per step", fontsize=8)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.suptitle(f"{data.get('title', '')} ({data.get('label', 'modeled')})", fontsize=9)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
