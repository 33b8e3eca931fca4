"""tessera.zellige against the `tessera zellige` CLI: the same plans, tokens and errors."""

import json
import random
import sys
import threading

import pytest

import tessera
from tessera import zellige
from conftest import run_cli


def mixed_lens(n: int, seed: int) -> list[int]:
    """A seeded mix of image-sized and video-sized sequences (tokens)."""
    rng = random.Random(seed)
    return [rng.choice([1024, 3600, 4096]) if rng.random() < 0.8 else rng.randint(20000, 120000)
            for _ in range(n)]


def test_import_names_the_system_and_planners():
    assert tessera.zellige is zellige
    names = zellige.planners()
    for p in ["zellige", "usp", "knapformer", "dp"]:
        assert p in names


@pytest.mark.parametrize("kind,res,seconds", [("video", "1080p", 15), ("video", "720p", 4.5),
                                              ("image", "1024x1024", 0)])
def test_tokens_equal_the_cli(tessera_bin, kind, res, seconds):
    args = ["zellige", "tokens", "--kind", kind, "--res", res]
    if kind == "video":
        args += ["--seconds", str(seconds)]
    cli = int(run_cli(tessera_bin, *args).stdout.strip())
    assert zellige.tokens(kind, res, seconds) == cli
    assert cli > 0


@pytest.mark.parametrize("planner", ["zellige", "usp", "knapformer", "dp", "dynamic-cp"])
@pytest.mark.parametrize("cluster,seed", [("a800x16", 1), ("a6000x32", 2)])
def test_plan_equals_the_cli(tmp_path, tessera_bin, planner, cluster, seed):
    lens = mixed_lens(160, seed)
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps({"name": "python", "sequences": [{"tokens": n} for n in lens]}))
    saved, out = tmp_path / "plan.json", tmp_path / "out.json"
    run_cli(tessera_bin, "zellige", "plan", "--cluster", cluster, "--workload", str(batch),
            "--planner", planner, "--save-plan", str(saved), "--json", str(out))
    p = zellige.plan(lens, zellige.Cluster.preset(cluster), planner=planner)
    assert json.loads(p.to_json()) == json.loads(saved.read_text())
    sim = p.simulate()
    row = json.loads(out.read_text())["results"][0]
    assert sim.makespan_s == pytest.approx(row["makespan_s"], rel=1e-12)
    assert sim.feasible == row["feasible"]
    assert p.planner == planner and p.num_ranks == zellige.Cluster.preset(cluster).num_ranks
    assert p.solve_ms >= 0


def test_options_reach_the_planner_as_on_the_cli(tmp_path, tessera_bin):
    lens = mixed_lens(120, 5)
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps({"sequences": [{"tokens": n} for n in lens]}))
    saved = tmp_path / "plan.json"
    run_cli(tessera_bin, "zellige", "plan", "--workload", str(batch), "--planner", "knapformer",
            "--option", "knapformer.gamma=3", "--save-plan", str(saved))
    p = zellige.plan(lens, "a800x16", planner="knapformer", options={"knapformer.gamma": 3})
    assert json.loads(p.to_json()) == json.loads(saved.read_text())


def test_shards_cover_every_token_once_and_match_placements():
    lens = mixed_lens(200, 7) + [400000]  # one sequence long enough to be split
    p = zellige.plan(lens, "a800x16")
    assert any(pl.degree > 1 for pl in p.placements)
    covered = [0] * len(lens)
    for rank, shards in enumerate(p.shards):
        for s in shards:
            pl = p.placements[s.placement]
            assert pl.seq == s.seq and pl.ranks[s.member] == rank
            assert (s.q, s.h, s.k) == (pl.q, pl.h, pl.k)
            assert 0 <= s.token_begin < s.token_end <= lens[s.seq]
            covered[s.seq] += s.tokens
    assert covered == lens
    assert p.rank_tokens == [sum(s.tokens for s in r) for r in p.shards]
    assert sum(p.rank_tokens) == sum(lens)


def test_cluster_round_trips_through_json(tmp_path):
    c = zellige.Cluster.preset("a6000x32")
    d = json.loads(c.to_json())
    back = zellige.Cluster.from_json(d)
    assert back.num_ranks == c.num_ranks == 32
    f = tmp_path / "c.json"
    f.write_text(c.to_json())
    assert zellige.Cluster.from_json(str(f)).name == c.name
    assert "a800x16" in zellige.Cluster.presets()
    # The plan is the same whether the cluster is given by name, object or dict.
    lens = mixed_lens(50, 3)
    a = zellige.plan(lens, "a6000x32").to_json()
    assert zellige.plan(lens, back).to_json() == a


def cli_error(tessera_bin, *args) -> str:
    r = run_cli(tessera_bin, *args, check=False)
    assert r.returncode == 1, r.stderr
    return r.stderr.strip().removeprefix("tessera: ")


def test_errors_carry_the_cli_message(tessera_bin):
    with pytest.raises(ValueError) as e:
        zellige.plan([1000], planner="nope")
    assert str(e.value) == cli_error(tessera_bin, "zellige", "plan", "--planner", "nope")
    with pytest.raises(ValueError) as e:
        zellige.plan([1000], "nope")
    assert str(e.value) == cli_error(tessera_bin, "zellige", "plan", "--cluster", "nope")
    with pytest.raises(ValueError) as e:
        zellige.Cluster.preset("nope")
    assert str(e.value).startswith("cluster: got 'nope'")
    with pytest.raises(ValueError) as e:
        zellige.plan([1000], options={"zellige.gapp": 1})
    assert str(e.value) == cli_error(tessera_bin, "zellige", "plan", "--option", "zellige.gapp=1")
    with pytest.raises(ValueError) as e:
        zellige.tokens("video", "1080q", 15)
    assert str(e.value) == cli_error(tessera_bin, "zellige", "tokens", "--res", "1080q")
    with pytest.raises(ValueError, match="kind: got 'audio'"):
        zellige.tokens("audio")


def test_bad_batches_raise_value_error_naming_the_argument():
    with pytest.raises(ValueError, match=r"seq_lens: empty batch"):
        zellige.plan([])
    with pytest.raises(ValueError, match=r"seq_lens\[1\]: got -5 tokens"):
        zellige.plan([10, -5])
    with pytest.raises(ValueError, match=r"seq_lens\[0\]: got 0 tokens"):
        zellige.plan([0])
    with pytest.raises(ValueError, match=r"seq_lens\[0\]: got 134217729"):
        zellige.plan([2**27 + 1])
    with pytest.raises(ValueError, match="planner: got 'all'"):
        zellige.plan([10], planner="all")
    with pytest.raises(ValueError, match="cluster: cannot be combined with profile"):
        zellige.plan([10], "a800x16", profile="p.json")
    with pytest.raises(ValueError, match="p-missing.json"):
        zellige.plan([10], profile="p-missing.json")
    # A sequence no rank set can hold in memory: refused, not crashed.
    with pytest.raises(ValueError):
        zellige.plan([2**27] * 64, "a800x8")


@pytest.mark.parametrize("bad", [[1.5], ["10"], [None], 5, "abc", [[1]], [2**70]])
def test_wrong_types_raise_type_error(bad):
    with pytest.raises(TypeError):
        zellige.plan(bad)


def test_wrong_argument_types_raise_type_error():
    with pytest.raises(TypeError):
        zellige.plan([10], cluster=3)
    with pytest.raises(TypeError):
        zellige.plan([10], planner=None)
    with pytest.raises(TypeError):
        zellige.plan([10], options={1: "x"})
    with pytest.raises(TypeError):
        zellige.Cluster.from_json(3)
    with pytest.raises(TypeError):
        zellige.tokens(seconds="long")


def test_planning_releases_the_gil():
    # With the switch interval set far beyond the test, a thread that holds the GIL keeps it
    # until it blocks or a C call releases it: no time slice hands it over. The worker plans up
    # to 100 times in a row and stops when told. This thread, woken by `entering`, can run
    # while the worker is between its first and its last plan only if plan releases the GIL;
    # if plan held it, this thread would run only after all 100 plans. No timing is compared.
    lens = mixed_lens(120, 11)
    entering, stop = threading.Event(), threading.Event()
    plans = []

    def work():
        entering.set()
        while len(plans) < 100 and not stop.is_set():
            plans.append(zellige.plan(lens, "a6000x32"))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e6)
    try:
        worker = threading.Thread(target=work)
        worker.start()
        entering.wait()
        seen = len(plans)
        stop.set()
        worker.join()
    finally:
        sys.setswitchinterval(old)
    assert seen < 100, "zellige.plan held the GIL: no other thread ran until all plans were done"
    assert plans and all(p.planner == "zellige" for p in plans)