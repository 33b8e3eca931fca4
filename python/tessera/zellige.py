"""Zellige: moldable sequence placement for mixed image/video DiT training.

Mirrors `tessera zellige tokens|plan`:

- ``tokens(kind, res, seconds, fps)``: DiT tokens of an image or a video.
- ``Cluster.preset(name)`` / ``Cluster.from_json(path_or_dict)`` / ``Cluster.presets()``.
- ``plan(seq_lens, cluster=None, planner="zellige", profile=None, model=None, options={})``:
  places every sequence (given by its token count) on the cluster's ranks and returns a
  ``Plan``: ``placements`` (config q, h, k and ordered ranks per sequence), ``shards`` (per
  rank, its token ranges [token_begin, token_end) of each sequence, in execution order),
  ``rank_tokens``, ``solve_ms`` (measured planning time), ``simulate()`` (the modeled step:
  makespan, per-rank busy time and peak memory) and ``to_json()`` (the format of
  ``tessera zellige plan --save-plan``).
- ``planners()``: the registered planner names (zellige, usp, knapformer, dp, ...).

Without ``profile`` the analytic cost model prices the plan on ``cluster`` (default preset
a800x16) for ``model`` (a DiT preset name or JSON path, default wan2.1-1.3b); with ``profile``
(a file written by ``tessera zellige profile``) the measured machine and its SmallDit are the
cluster and model. Figures from ``simulate()`` are modeled. The GIL is released while planning.
"""

from tessera._zellige import (
    Cluster,
    Placement,
    Plan,
    Shard,
    SimResult,
    plan,
    planners,
    tokens,
)

__all__ = ["Cluster", "Placement", "Plan", "Shard", "SimResult", "plan", "planners", "tokens"]
