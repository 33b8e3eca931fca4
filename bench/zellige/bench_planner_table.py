#!/usr/bin/env python3
"""Summarises `tessera zellige bench-planner --json` files as markdown tables.

Usage: bench_planner_table.py FILE.json [FILE.json ...]
Per mixture: zellige's excess over joint (mean, max), joint's remaining gap, zellige's solve
time (measured), its speedups over knapformer and usp and its attention communication
relative to usp (modeled), max/mean, and on how many batches it was slower than a feasible
baseline.
"""
import json
import sys
from collections import OrderedDict


def main(paths):
    rows = OrderedDict()
    solve_all = []
    excess_all = []
    for path in paths:
        data = json.load(open(path))
        for b in data["batches"]:
            p = b["planners"]
            z = p.get("zellige", {})
            if "makespan_s" not in z:
                continue
            r = rows.setdefault(b["mix"], {"n": 0, "excess": [], "gap": [], "ms": [], "knap": [],
                                           "usp": [], "comm": [], "mm": [], "slower": 0,
                                           "joint_missing": 0})
            r["n"] += 1
            r["ms"].append(z["solve_ms"])
            solve_all.append(z["solve_ms"])
            r["mm"].append(z["max_over_mean"])
            j = p.get("joint", {})
            if "makespan_s" in j:
                ex = 100 * (z["makespan_s"] - j["makespan_s"]) / j["makespan_s"]
                r["excess"].append(ex)
                excess_all.append(ex)
                r["gap"].append(100 * j["gap"])
            else:
                r["joint_missing"] += 1
            if "makespan_s" in p.get("knapformer", {}):
                r["knap"].append(p["knapformer"]["makespan_s"] / z["makespan_s"])
            if "makespan_s" in p.get("usp", {}):
                r["usp"].append(p["usp"]["makespan_s"] / z["makespan_s"])
                r["comm"].append(z["attn_comm_bytes"] / p["usp"]["attn_comm_bytes"])
            best = min((v["makespan_s"] for k, v in p.items()
                        if k not in ("zellige", "joint") and v.get("feasible")), default=None)
            if best is not None and z["makespan_s"] > best * (1 + 1e-9):
                r["slower"] += 1

    def mean(x):
        return sum(x) / len(x) if x else float("nan")

    print("| mix | batches | excess over joint % (mean / max) | joint gap % max | zellige ms "
          "(mean / max) | vs knapformer | vs usp | attn comm vs usp | max/mean | slower than "
          "a feasible baseline |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for mix, r in rows.items():
        ex = (f"{mean(r['excess']):.3f} / {max(r['excess']):.3f}" if r["excess"] else "-")
        if r["joint_missing"]:
            ex += f" ({r['joint_missing']} without joint)"
        print(f"| {mix} | {r['n']} | {ex} | "
              f"{max(r['gap']):.3f} | " if r["gap"] else f"| {mix} | {r['n']} | {ex} | - | ",
              end="")
        print(f"{mean(r['ms']):.1f} / {max(r['ms']):.1f} | {mean(r['knap']):.3f}x | "
              f"{mean(r['usp']):.3f}x | {mean(r['comm']):.2f} | {mean(r['mm']):.4f} | "
              f"{r['slower']}/{r['n']} |")
    if solve_all:
        print(f"\nOverall: zellige solve time mean {mean(solve_all):.1f} ms, max "
              f"{max(solve_all):.1f} ms over {len(solve_all)} batches; excess over joint mean "
              f"{mean(excess_all):.3f}%, max {max(excess_all):.3f}% over {len(excess_all)} batches.")


if __name__ == "__main__":
    main(sys.argv[1:])
