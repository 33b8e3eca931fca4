"""Zellige as a drop-in for KnapFormer's sequence balancer: same input, per-GPU sequence lengths.

KnapFormer's SequenceBalancer is called inside the training loop with the sequence lengths each
GPU's data loader drew (it gathers them from every rank) and returns where every sequence, or
chunk of one, runs. `balance()` below takes the same input, a list per GPU of that GPU's token
counts, and returns the same kind of answer for any tessera planner: per GPU, the (gpu, index)
of each sequence it works on and the token range it holds. The script draws per-GPU lengths,
balances them with the KnapFormer port (`knapformer`, bags g8n1+g4n1+g2n1+g1n2 on 16 GPUs as
in KnapFormer's README) and with Zellige, and prints both side by side (modeled step time,
balance, attention communication, peak memory) with the measured planning time.

    PYTHONPATH=build/release/python python3 examples/python/knapformer_dropin.py
"""

import argparse
import random
import sys

from tessera import zellige


def balance(gpu_seq_lens, cluster, planner="zellige", options=None):
    """Per-GPU sequence lengths -> (plan, routes); routes[g] = [((src_gpu, i), begin, end), ...]."""
    if len(gpu_seq_lens) != cluster.num_ranks:
        raise ValueError(f"gpu_seq_lens: got {len(gpu_seq_lens)} GPUs, the cluster has "
                         f"{cluster.num_ranks}")
    origin = [(g, i) for g, lens in enumerate(gpu_seq_lens) for i in range(len(lens))]
    flat = [n for lens in gpu_seq_lens for n in lens]
    plan = zellige.plan(flat, cluster, planner=planner, options=options or {})
    routes = [[(origin[s.seq], s.token_begin, s.token_end) for s in shards]
              for shards in plan.shards]
    return plan, routes


def draw_per_gpu(rng, gpus, tokens_per_gpu, video_share):
    """What each GPU's loader drew: images and some videos, ~tokens_per_gpu tokens each."""
    images = [zellige.tokens("image", r) for r in ("512x512", "720p", "1024x1024")]
    videos = [zellige.tokens("video", r, s) for r in ("480p", "720p") for s in (2.0, 5.0)]
    out = []
    for _ in range(gpus):
        lens, total = [], 0
        while total < tokens_per_gpu:
            n = rng.choice(videos if rng.random() < video_share else images)
            lens.append(n)
            total += n
        out.append(lens)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cluster", default="a800x16")
    ap.add_argument("--tokens-per-gpu", type=int, default=125000)
    ap.add_argument("--video-share", type=float, default=0.3,
                    help="chance that a drawn sequence is a video")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bags", default="g8n1+g4n1+g2n1+g1n2", help="knapformer.bags")
    a = ap.parse_args()
    cluster = zellige.Cluster.preset(a.cluster)
    rng = random.Random(a.seed)
    print(f"{cluster}; per-GPU loaders draw ~{a.tokens_per_gpu:,} tokens each (modeled)")
    print(f"{'step':>4} {'planner':>10} {'step s':>8} {'max/mean':>8} {'attn GB':>8} "
          f"{'peak GiB':>8} {'split':>5} {'plan ms':>8}")
    for step in range(a.steps):
        gpu_lens = draw_per_gpu(rng, cluster.num_ranks, a.tokens_per_gpu, a.video_share)
        rows = {}
        for planner, opts in (("knapformer", {"knapformer.bags": a.bags}), ("zellige", {})):
            plan, routes = balance(gpu_lens, cluster, planner, opts)
            assert sum(e - b for r in routes for _, b, e in r) == sum(map(sum, gpu_lens))
            sim = plan.simulate()
            rows[planner] = sim
            print(f"{step:>4} {planner:>10} {sim.makespan_s:>8.2f} {sim.max_over_mean:>8.3f} "
                  f"{sim.attn_comm_bytes / 1e9:>8.1f} {sim.peak_mem_bytes / 2**30:>8.1f} "
                  f"{sim.split_sequences:>5} {plan.solve_ms:>8.2f}"
                  + ("" if sim.feasible else "  OOM"))
        k, z = rows["knapformer"], rows["zellige"]
        print(f"{'':>4} zellige over knapformer: {k.makespan_s / z.makespan_s:.2f}x (modeled)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
