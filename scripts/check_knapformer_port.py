#!/usr/bin/env python3
"""Check the `knapformer` planner against KnapFormer's own balancer, bag for bag.

For every cluster, bag layout, mixture, gamma and seed, `tessera zellige plan --planner
knapformer` plans a generated batch (saving the batch and the plan), and KnapFormer's
SequenceBalancer.plan_routing plans the same lengths through a peer runner that stubs torch
(the runner and the original's source are given by path; nothing of the original is part of
tessera). The bag spec and gamma are passed to both explicitly: --bags halving is tessera's
default g{N/2}n1+...+g2n1+g1n2, node is g8n{N/8}, or give a spec; gamma is given, not fitted.
A batch matches when every sequence lands in the same bag. --mixes also takes batch JSON
files (then use --seeds 1). A batch the original cannot plan (its third pass raises KeyError
when a bag gets no sequence) is counted apart, not as a mismatch.

    python3 scripts/check_knapformer_port.py --tessera build/release/src/cli/tessera \\
        --peer PATH/knapformer_plan.py --original DIR_WITH_knapformer/ \\
        --clusters a800x16,a6000x32,h100x64 --mixes v20,v50,v80 --gammas 1,0.37 \\
        --bags halving,node --seeds 100 --out result.txt

Run the peer with Debian's /usr/bin/python3 (the default of --python); the original pins
Python 3.10, whose sum() adds floats left to right, as 3.11's does (3.12 compensates).
Prints one line per (cluster, bags, mixture, gamma) and a total; with --out, writes the same
text there. Exit status 0 when every batch the original planned matches, else 1.
"""
import argparse
import concurrent.futures
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile


def halving_spec(num_ranks):
    """g{N/2}n1+g{N/4}n1+...+g2n1+g1n{rest}, as tessera's DefaultBagSpec and KnapFormer's README."""
    if num_ranks == 1:
        return "g1n1"
    parts, left, g = [], num_ranks, num_ranks // 2
    while g >= 2 and left > 0:
        if g <= left:
            parts.append(f"g{g}n1")
            left -= g
        g //= 2
    if left > 0:
        parts.append(f"g1n{left}")
    return "+".join(parts)


def bag_spec(kind, num_ranks):
    """halving: g{N/2}n1+...+g1n2; node: g8n{N/8}, the node-sized bags of docs/zellige.md;
    or a spec g{G}n{N}+... given as is."""
    if kind == "halving":
        return halving_spec(num_ranks)
    if kind == "node" and num_ranks % 8 == 0:
        return f"g8n{num_ranks // 8}"
    if re.fullmatch(r"g\d+n\d+(\+g\d+n\d+)*", kind):
        return kind
    sys.exit(f"--bags: got '{kind}', must be halving, node (ranks a multiple of 8) or a spec "
             f"g{{G}}n{{N}}+... (e.g. g2n4)")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-2000:]}")
    return p.stdout


def tessera_plan(a, tmp, cluster, mix, seed, gamma, spec):
    """(lengths in batch order, bag first rank per sequence, token dim, num ranks)."""
    plan_path, batch_path, json_path = (os.path.join(tmp, n) for n in ("p.json", "b.json", "r.json"))
    cmd = [a.tessera, "zellige", "plan", "--cluster", cluster, "--workload", mix, "--load", a.load,
           "--seed", str(seed), "--planner", "knapformer", "--save-plan", plan_path,
           "--save-batch", batch_path, "--json", json_path, "--option", f"knapformer.gamma={gamma}"]
    if spec:
        cmd += ["--option", f"knapformer.bags={spec}"]
    if a.model:
        cmd += ["--model", a.model]
    run(cmd)
    with open(batch_path) as f:
        lens = [s["tokens"] for s in json.load(f)["sequences"]]
    with open(plan_path) as f:
        plan = json.load(f)
    with open(json_path) as f:
        result = json.load(f)
    first_rank = [None] * len(lens)
    for p in plan["placements"]:
        first_rank[p["seq"]] = p["ranks"][0]
    return lens, first_rank, int(result["model"]["hidden"]), int(plan["num_ranks"])


def one_case(a, cluster, mix, seed, gamma, spec):
    with tempfile.TemporaryDirectory(prefix="knapcheck-") as tmp:
        lens, first_rank, dim, ranks = tessera_plan(a, tmp, cluster, mix, seed, gamma, spec)
        lens_path = os.path.join(tmp, "lens.json")
        with open(lens_path, "w") as f:
            json.dump({"gpu_seq_lens": [lens] + [[] for _ in range(ranks - 1)]}, f)
        p = subprocess.run([a.python, a.peer, a.original, spec, str(dim), gamma, lens_path],
                           capture_output=True, text=True)
        if p.returncode != 0:  # e.g. KeyError in its third pass when a bag got no sequence
            lines = p.stderr.strip().splitlines()
            return {"seed": seed, "seqs": len(lens), "error": lines[-1] if lines else "failed"}
        peer = json.loads(p.stdout)
    bag_of_first = {ids[0]: int(b) for b, ids in peer["bag_gpu_ids"].items()}
    ours = [bag_of_first.get(r, -1) for r in first_rank]
    theirs = [peer["seq_bag"][str(s)] for s in range(len(lens))]
    if [peer["seq_len"][str(s)] for s in range(len(lens))] != lens:
        raise RuntimeError(f"{cluster} {mix} seed {seed}: the peer read other lengths")
    moved = [s for s in range(len(lens)) if ours[s] != theirs[s]]
    bags_differ = len({ours[s] for s in moved} | {theirs[s] for s in moved})
    moved_lens = sorted({lens[s] for s in moved}, reverse=True)
    return {"seed": seed, "seqs": len(lens), "moved": len(moved), "bags_differ": bags_differ,
            "bags": len(bag_of_first), "moved_lens": moved_lens[:4]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tessera", required=True, help="the tessera binary")
    ap.add_argument("--peer", required=True, help="the peer runner knapformer_plan.py")
    ap.add_argument("--original", required=True, help="directory holding KnapFormer's knapformer/")
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter for the peer")
    ap.add_argument("--clusters", default="a800x16,a6000x32,h100x64")
    ap.add_argument("--mixes", default="v20,v50,v80",
                    help="mixtures vNN (video token share) or batch JSON files (use --seeds 1)")
    ap.add_argument("--gammas", default="1", help="gamma values, comma-separated")
    ap.add_argument("--bags", default="halving",
                    help="bag layouts: halving, node (g8n{N/8}) or a spec such as g2n4")
    ap.add_argument("--seeds", type=int, default=100, help="seeds 1..N per cluster and mixture")
    ap.add_argument("--load", default="high", help="tokens per rank: high, low or a number")
    ap.add_argument("--model", default="", help="DiT preset (default: tessera's)")
    ap.add_argument("--jobs", type=int, default=1, help="cases run at once")
    ap.add_argument("--out", default="", help="also write the summary here")
    a = ap.parse_args()

    lines = [f"knapformer port vs KnapFormer's SequenceBalancer.plan_routing, bag for bag; "
             f"load {a.load}, seeds 1..{a.seeds}"]
    print(lines[0], flush=True)
    total_match = total = total_failed = 0
    for cluster in a.clusters.split(","):
        with tempfile.TemporaryDirectory(prefix="knapcheck-") as tmp:
            ranks = tessera_plan(a, tmp, cluster, "v50", 1, "1", "")[3]
        specs = [bag_spec(k, ranks) for k in a.bags.split(",")]
        for spec, mix, gamma in itertools.product(specs, a.mixes.split(","), a.gammas.split(",")):
            with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
                cases = list(ex.map(lambda s: one_case(a, cluster, mix, s, gamma, spec),
                                    range(1, a.seeds + 1)))
            failed = [c for c in cases if "error" in c]
            planned = [c for c in cases if "error" not in c]
            match = sum(c["moved"] == 0 for c in planned)
            total_match += match
            total += len(planned)
            total_failed += len(failed)
            seqs = [c["seqs"] for c in cases]
            line = (f"{cluster:9s} {spec:32s} {mix:4s} gamma {gamma:6s} sequences "
                    f"{min(seqs)}-{max(seqs)}: {match}/{len(planned)} batches match")
            if failed:
                line += (f"; the original failed on {len(failed)} (seed {failed[0]['seed']}: "
                         f"{failed[0]['error']})")
            bad = [c for c in planned if c["moved"]]
            if bad:
                worst = max(bad, key=lambda c: c["moved"])
                line += (f"; worst seed {worst['seed']}: {worst['moved']} sequences in "
                         f"{worst['bags_differ']} of {worst['bags']} bags differ "
                         f"(lengths {worst['moved_lens']})")
            print(line, flush=True)
            lines.append(line)
    lines.append(f"total: {total_match}/{total} batches match"
                 + (f" ({total_failed} more the original could not plan)" if total_failed else ""))
    print(lines[-1])
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0 if total_match == total else 1


if __name__ == "__main__":
    sys.exit(main())
