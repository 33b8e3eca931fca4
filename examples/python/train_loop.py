"""A PyTorch training loop that asks Zellige where each sequence goes, every step.

Each step draws a mixed image/video batch (token counts from tessera.zellige.tokens), plans it
on a cluster preset with tessera.zellige.plan, prints each rank's work (tokens, modeled busy
time and peak memory) and the measured planning time, then runs the step: every rank takes
its token ranges (plan.shards) of the batch's latents and computes the loss and gradients of
a small token-wise denoiser on them. The ranks run one after another in this process (on a
cluster each would be a torch.distributed rank running only its own shards), and the example
checks that their gradients sum to the whole batch's: the plan's token ranges partition the
batch, nothing lost or counted twice.

Only the token-wise parts of a DiT (norms, MLPs, projections) shard this simply; attention over
a sequence split across ranks needs a sequence-parallel attention (Ulysses / ring), which
`tessera zellige run` executes on MPI ranks. Latents are scaled down by --token-scale so the
loop runs on a laptop CPU; the plan is made for the full-size token counts.

    PYTHONPATH=build/release/python python3 examples/python/train_loop.py --steps 3
"""

import argparse
import random
import sys
import time

import torch

import tessera
from tessera import zellige


def draw_batch(rng: random.Random, tokens_per_rank: int, ranks: int, video_share: float):
    """Sequences (kind, res, seconds, tokens) until ~tokens_per_rank * ranks tokens."""
    images = [("image", r, 0.0) for r in ("512x512", "720p", "1024x1024", "1080p")]
    videos = [("video", r, s) for r in ("480p", "720p") for s in (2.0, 5.0)] + [
        ("video", "1080p", 5.0)]
    seqs, total, video_tokens = [], 0, 0
    while total < tokens_per_rank * ranks:
        want_video = video_tokens < video_share * max(total, 1)
        kind, res, seconds = rng.choice(videos if want_video else images)
        n = zellige.tokens(kind, res, seconds)
        seqs.append((kind, res, seconds, n))
        total += n
        video_tokens += n if kind == "video" else 0
    return seqs


class Denoiser(torch.nn.Module):
    """Token-wise part of a DiT block: LayerNorm + MLP, predicting the noise of a latent."""

    def __init__(self, dim: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(),
                                       torch.nn.Linear(4 * dim, dim))

    def forward(self, x):
        return self.mlp(self.norm(x))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--cluster", default="a800x16", help="preset name or cluster JSON path")
    ap.add_argument("--planner", default="zellige", choices=zellige.planners())
    ap.add_argument("--tokens-per-rank", type=int, default=125000)
    ap.add_argument("--video-share", type=float, default=0.5)
    ap.add_argument("--token-scale", type=float, default=1 / 512,
                    help="latent rows per token actually computed (CPU-sized)")
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.steps < 1 or not 0 < a.token_scale <= 1:
        ap.error("--steps must be >= 1 and --token-scale in (0, 1]")

    torch.manual_seed(a.seed)
    rng = random.Random(a.seed)
    cluster = zellige.Cluster.preset(a.cluster) if a.cluster in zellige.Cluster.presets() \
        else zellige.Cluster.from_json(a.cluster)
    model = Denoiser(a.dim)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    print(f"tessera {tessera.__version__}: {cluster}")
    for step in range(a.steps):
        seqs = draw_batch(rng, a.tokens_per_rank, cluster.num_ranks, a.video_share)
        lens = [s[3] for s in seqs]
        t0 = time.perf_counter()
        plan = zellige.plan(lens, cluster, planner=a.planner)
        call_ms = 1e3 * (time.perf_counter() - t0)
        sim = plan.simulate()
        n_video = sum(s[0] == "video" for s in seqs)
        print(f"\nstep {step}: {len(seqs)} sequences ({n_video} videos), {sum(lens):,} tokens; "
              f"{a.planner} planned in {plan.solve_ms:.1f} ms (call {call_ms:.1f} ms), "
              f"{sim.split_sequences} split; modeled step {sim.makespan_s:.2f} s, "
              f"max/mean busy {sim.max_over_mean:.3f}"
              + ("" if sim.feasible else f", {sim.infeasible_reason}"))
        print(f"{'rank':>4} {'shards':>6} {'tokens':>9} {'busy s':>8} {'peak GiB':>8}")
        for r, shards in enumerate(plan.shards):
            print(f"{r:>4} {len(shards):>6} {plan.rank_tokens[r]:>9,} {sim.busy_s[r]:>8.2f} "
                  f"{sim.mem_bytes[r] / 2**30:>8.1f}")

        # The step: latents of every sequence (scaled down), each rank its own token ranges.
        rows = [max(1, round(n * a.token_scale)) for n in lens]
        latents = [torch.randn(r, a.dim) for r in rows]
        noise = [torch.randn(r, a.dim) for r in rows]
        total_rows = sum(rows)
        opt.zero_grad()
        per_rank_loss = []
        for shards in plan.shards:
            loss = torch.zeros(())
            for s in shards:
                lo = s.token_begin * rows[s.seq] // lens[s.seq]
                hi = s.token_end * rows[s.seq] // lens[s.seq]
                if hi > lo:
                    x, eps = latents[s.seq][lo:hi], noise[s.seq][lo:hi]
                    loss = loss + ((model(x + eps) - eps) ** 2).sum() / (total_rows * a.dim)
            loss.backward()  # gradients accumulate over ranks, as an all-reduce would sum them
            per_rank_loss.append(loss.item())
        ranked = [p.grad.clone() for p in model.parameters()]

        # Reference: the whole batch in one piece.
        opt.zero_grad()
        x, eps = torch.cat(latents), torch.cat(noise)
        ref = ((model(x + eps) - eps) ** 2).sum() / (total_rows * a.dim)
        ref.backward()
        worst = max(((g - p.grad).abs().max() / p.grad.abs().max().clamp_min(1e-30)).item()
                    for g, p in zip(ranked, model.parameters()))
        print(f"loss {sum(per_rank_loss):.5f} (whole batch {ref.item():.5f}); "
              f"per-rank gradients summed vs whole batch: max rel diff {worst:.1e}")
        if worst > 1e-4 or abs(sum(per_rank_loss) - ref.item()) > 1e-4 * abs(ref.item()):
            print("error: the ranks' shards do not add up to the batch", file=sys.stderr)
            return 1
        opt.step()
    return 0


if __name__ == "__main__":
    sys.exit(main())
