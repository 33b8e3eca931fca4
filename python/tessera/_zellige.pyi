"""Type stubs of tessera._zellige (the pybind11 extension behind tessera.zellige)."""

from typing import Mapping, Sequence

def tokens(kind: str = "video", res: str = "1080p", seconds: float = 15.0, fps: int = 16) -> int:
    """DiT tokens of an image or a video, as `tessera zellige tokens`.

    Raises ValueError for an unknown kind or resolution, or a non-positive length.
    """

def planners() -> list[str]:
    """Names of the registered planners, in display order."""

class Cluster:
    """A cluster of identical devices: nodes x ranks per node, intra- and inter-node links."""

    name: str
    provenance: str
    nodes: int
    ranks_per_node: int
    @property
    def num_ranks(self) -> int: ...
    @property
    def usable_memory_bytes(self) -> float: ...
    @staticmethod
    def preset(name: str) -> Cluster:
        """A preset by name (ValueError listing the presets when unknown)."""
    @staticmethod
    def from_json(source: str | Mapping[str, object]) -> Cluster:
        """A cluster from a JSON file path or a dict of the same fields (validated)."""
    @staticmethod
    def presets() -> list[str]: ...
    def to_json(self) -> str: ...

class Placement:
    """Where one sequence runs: config (q, h, k) on an ordered rank set of q*h*k ranks."""

    seq: int
    tokens: int
    q: int
    h: int
    k: int
    ranks: list[int]
    @property
    def degree(self) -> int: ...

class Shard:
    """One rank's tokens [token_begin, token_end) of sequence `seq` (member `member` of it)."""

    seq: int
    placement: int
    member: int
    token_begin: int
    token_end: int
    q: int
    h: int
    k: int
    @property
    def tokens(self) -> int: ...

class SimResult:
    """A plan's modeled training step (seconds, bytes)."""

    feasible: bool
    infeasible_reason: str
    makespan_s: float
    busy_s: list[float]
    finish_s: list[float]
    comm_s: list[float]
    """Per rank: the exposed-communication part of busy_s."""
    mem_bytes: list[float]
    max_over_mean: float
    attn_comm_bytes: float
    peak_mem_bytes: float
    split_sequences: int

class Plan:
    """A placement of every sequence of a batch."""

    @property
    def planner(self) -> str: ...
    @property
    def num_ranks(self) -> int: ...
    @property
    def solve_ms(self) -> float:
        """Measured wall-clock time of the planner, in milliseconds."""
    @property
    def placements(self) -> list[Placement]: ...
    @property
    def shards(self) -> list[list[Shard]]:
        """Per rank, its shards in execution (issue) order."""
    @property
    def rank_tokens(self) -> list[int]: ...
    def simulate(self) -> SimResult:
        """The plan's modeled training step (releases the GIL)."""
    def to_json(self) -> str:
        """JSON text in the format of `tessera zellige plan --save-plan`."""

def plan(
    seq_lens: Sequence[int],
    cluster: Cluster | str | None = None,
    planner: str = "zellige",
    profile: str | None = None,
    model: str | None = None,
    options: Mapping[str, object] = ...,
) -> Plan:
    """Plan a batch of sequence lengths (tokens) on a cluster.

    cluster: a Cluster, a preset name or a cluster JSON path (default a800x16); not with
    profile. planner: one of planners(). profile: a `tessera zellige profile` file (its machine
    and SmallDit are the cluster and model). model: a DiT preset name or JSON path (default
    wan2.1-1.3b). options: planner options, as `--option key=value` (e.g.
    {"knapformer.gamma": 1.2}).

    Raises ValueError (bad lengths, unknown planner/preset/option, a batch no plan fits) and
    TypeError (wrong argument types), with the CLI's messages. Releases the GIL while planning.
    """
