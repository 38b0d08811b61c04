"""SimGrid's SMPI as a target: the real engine built with smpicc and run by smpirun on small
simulated platforms whose truth is known (latency and bandwidth factors set to 1)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mpiscope.analysis.hockney import fit_hockney
from mpiscope.analysis.predict import CONTENTION_SHARE, contention, link_bytes, shared_link
from mpiscope.records.measured import Synthetic
from mpiscope.analysis.topology import infer_topology
from mpiscope.util.errors import UsageError
from mpiscope.launchers.base import Job
from mpiscope.launchers.platform import parse
from mpiscope.launchers.smpirun import Smpirun
from mpiscope.launchers.base import launcher_family
from mpiscope.mpi.vendor import parse_library_version

needs_simgrid = pytest.mark.skipif(not (shutil.which("smpicc") and shutil.which("smpirun")),
                                reason="SimGrid's smpicc/smpirun are not installed (apt-get install libsimgrid-dev)")

# SMPI's default factors correct latency and bandwidth by message size (measured on a real
# cluster); set to 1, the time of a message is the route's latency plus size / bandwidth.
EXACT = ["--cfg=smpi/lat-factor:0:1", "--cfg=smpi/bw-factor:0:1"]


@pytest.fixture(scope="module")
def smpi_engine(engine_builder) -> Path:
    return engine_builder(Path(shutil.which("smpicc") or "smpicc"))


def simulate(engine: Path, ranks: int, platform: str, *args: str, launcher_args: tuple[str, ...] = ()) -> list[dict]:
    launch = Smpirun(Path(shutil.which("smpirun") or "smpirun")).command(
        Job(program=[str(engine), *args], ranks=ranks, platform=platform, extra_args=[*EXACT, *launcher_args]))
    done = subprocess.run(launch.argv, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **launch.env})
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@needs_simgrid
def test_pingpong_recovers_the_links_latency_and_bandwidth(smpi_engine):
    # two 1 us links (node to switch, switch to node), no backbone latency: alpha = 2 us
    records = simulate(smpi_engine, 2, "cluster:nodes=2,bw=12.5GBps,lat=1us,bb-lat=0us", "pingpong",
                       "--sizes", "0,1K,64K,256K,1M,4M")
    points = [r for r in records if r["type"] == "point"]
    assert len(points) == 6
    fit = fit_hockney([Synthetic(size=p["size"], median=p["time_us"]["median"], ci_low=p["time_us"]["ci_low"],
                                 ci_high=p["time_us"]["ci_high"], n=p["time_us"]["n"]) for p in points])
    assert fit.alpha_us == pytest.approx(2.0, rel=0.05)
    assert fit.bandwidth_MBps == pytest.approx(12.5e3, rel=0.05)


@needs_simgrid
def test_collectives_finish_with_window_sync_and_say_they_are_simulated(smpi_engine):
    records = simulate(smpi_engine, 16, "fattree:nodes=16,per-switch=4", "allreduce", "bcast", "memcpy",
                       "--sizes", "8,64K")
    context = records[0]
    sim = context["simulation"]
    assert {k: sim[k] for k in ("simulator", "platform")} == {
        "simulator": "SMPI", "platform": parse("fattree:nodes=16,per-switch=4", 16).description}
    # what the figures depend on: the platform XML's digest and every --cfg smpirun was given
    assert len(sim["digest"]) == 16 and {*EXACT, "--cfg=smpi/coll-selector:mpich"} <= set(sim["cfg"])
    points = [r for r in records if r["type"] == "point"]
    assert {(p["benchmark"], p["size"]) for p in points} == {(b, s) for b in ("allreduce", "bcast")
                                                            for s in (8, 65536)}
    for p in points:  # a deterministic simulator repeats a sample: two identical ones end the point
        assert p["sync"] == "window" and p["stop_reason"] == "identical" and p["time_us"]["n"] == 2
        assert p["converged"]
        assert p["host_s"] > 0 and p["elapsed_s"] > 0
    skips = [r for r in records if r["type"] == "skip"]
    assert skips and all("simulated" in s["reason"] for s in skips)  # memcpy: the host's, not the platform's
    assert records[-1]["type"] == "end"
    # every rank's facts reach rank 0's context record (gathered there, not allgathered)
    assert context["hosts"] == [f"node-{i}" for i in range(16)]
    assert [r["host"] for r in context["ranks"]] == context["hosts"] and context["ranks_by_host"] == [[i] for i in
                                                                                                   range(16)]
    # the algorithms the adapter names, one rank a node, take the mpich selector's simulated times
    selector = simulate(smpi_engine, 16, "fattree:nodes=16,per-switch=4", "allreduce", "bcast", "--sizes", "8,64K",
                        launcher_args=("--cfg=smpi/coll-selector:mpich",))
    median = {(p["benchmark"], p["size"]): p["time_us"]["median"] for p in points}
    assert {(p["benchmark"], p["size"]): pytest.approx(median[(p["benchmark"], p["size"])], rel=1e-3)
            for p in selector if p["type"] == "point"} == median
    # the 6 samples --stop-identical 0 takes (identical ones converge) give the figure the 2 gave
    six = [r for r in simulate(smpi_engine, 16, "fattree:nodes=16,per-switch=4", "allreduce", "bcast", "--sizes",
                               "8,64K", "--stop-identical", "0") if r["type"] == "point"]
    assert {p["time_us"]["n"] for p in six} == {6} and {p["stop_reason"] for p in six} == {"ci"}
    assert {(p["benchmark"], p["size"]): pytest.approx(p["time_us"]["median"], rel=1e-3) for p in six} == median


@needs_simgrid
def test_a_sample_longer_than_the_time_cap_still_ends_converged_on_identical_samples(smpi_engine):
    # --max-time reads the simulated clock: one 64 KiB collective (about 15 simulated us on 4 nodes)
    # outlasts a 1 us cap, which once ended every point at its one sample, "converged: no"
    records = simulate(smpi_engine, 4, "cluster:nodes=4", "allreduce", "bcast", "pingpong", "--sizes", "64K",
                       "--max-time", "1e-6", "--raw")
    points = {p["benchmark"]: p for p in records if p["type"] == "point"}
    for name in ("allreduce", "bcast"):
        p = points[name]
        assert p["time_us"]["median"] > 1.0  # the one sample took longer than the cap
        assert (p["stop_reason"], p["converged"], p["time_us"]["n"]) == ("identical", True, 2), p
        first, second = p["samples_us"]
        assert second == pytest.approx(first, abs=1e-3)  # the same tick, printed to the ns
    # --stop-identical 3 asks for three: the cap waits for them too
    three = [p for p in simulate(smpi_engine, 4, "cluster:nodes=4", "allreduce", "--sizes", "64K", "--max-time",
                                 "1e-6", "--stop-identical", "3") if p["type"] == "point"]
    assert [(p["stop_reason"], p["converged"], p["time_us"]["n"]) for p in three] == [("identical", True, 3)]
    # a pingpong's simulated samples are not all alike (the first of a batch is slower), so it has no
    # identical rule to wait for: the cap ends it as before
    assert points["pingpong"]["stop_reason"] == "max_time" and not points["pingpong"]["converged"]


@needs_simgrid
def test_the_contention_check_counts_the_messages_the_algorithm_puts_on_the_backbone(smpi_engine):
    # 16 ranks behind a 1 GB/s backbone against one that never binds: the 8 B allreduce (recursive
    # doubling) and the barrier (dissemination) send 16 messages in each of 4 steps, all across it
    def medians(platform: str) -> dict[str, float]:
        return {r["benchmark"]: r["time_us"]["median"] for r in simulate(smpi_engine, 16, platform, "allreduce",
                                                                         "barrier", "--sizes", "8")
                if r["type"] == "point"}
    slow, free = medians("cluster:nodes=16,bb-bw=1GBps"), medians("cluster:nodes=16,bb-bw=100TBps")
    link = shared_link("cluster:nodes=16,bb-bw=1GBps")
    for name, algorithm in (("allreduce", "recursive_doubling"), ("barrier", "dissemination")):
        late_us = slow[name] - free[name]  # what the backbone adds (crosstraffic: a few % more)
        assert late_us == pytest.approx(link_bytes(name, 16, 8, algorithm) / link.bytes_per_s * 1e6, rel=0.08)
        # the closed form is the free figure (no contention): the check's share is its miss, and flags it
        share = contention(name, 16, 8, free[name], link, algorithm)
        assert share == pytest.approx(late_us / free[name], rel=0.08) and share >= CONTENTION_SHARE
    # the fewest bytes any allreduce moves (a message to each other rank, twice) see too little of it
    assert contention("allreduce", 16, 8, free["allreduce"], link) < CONTENTION_SHARE


@needs_simgrid
@pytest.mark.parametrize("platform", ["cluster:nodes=4", "fattree:nodes=4,per-switch=2",
                                      "dragonfly:groups=1,routers=2,per-router=2"])
def test_a_planted_slow_link_slows_exactly_the_pairs_through_it(smpi_engine, platform):
    # the fat tree and dragonfly with a fault are written link by link (launchers/zones.py)
    def time_us(platform: str, order: str) -> float:
        records = simulate(smpi_engine, 4, platform, "pingpong", "--sizes", "8", "--order", order)
        return next(r for r in records if r["type"] == "point")["time_us"]["median"]
    slow = platform + ",slow-link=1,slowdown=10"
    # nodes 0 and 1 cross node 1's link, 10 times slower: (1 + 10) us instead of (1 + 1) us; 2 and 3 do not
    assert time_us(slow, "0,1,2,3") - time_us(platform, "0,1,2,3") == pytest.approx(9.0, rel=0.05)
    assert time_us(slow, "2,3,0,1") == pytest.approx(time_us(platform, "2,3,0,1"), rel=1e-3)


@needs_simgrid
def test_payloads_past_the_kernels_mapping_limit_are_a_skip_that_names_the_fix(smpi_engine):
    # SMPI's global sharing maps a block at a time: 4 KiB blocks make an allgather of 4 MiB on
    # 16 ranks 278,528 mappings, past vm.max_map_count; the adapter's local sharing maps each
    # buffer once, and the point is measured, with the same simulated time at the size that fits both
    small = ("--cfg=smpi/shared-malloc:global", "--cfg=smpi/shared-malloc-blocksize:4096")
    records = simulate(smpi_engine, 16, "cluster:nodes=16", "allgather", "--sizes", "64K,4M", launcher_args=small)
    skips = [r for r in records if r["type"] == "skip"]
    assert len(skips) == 1 and skips[0]["size"] == 4 << 20, skips
    assert "vm.max_map_count" in skips[0]["reason"] and "smpi/shared-malloc:local" in skips[0]["reason"]
    local = {r["size"]: r for r in simulate(smpi_engine, 16, "cluster:nodes=16", "allgather", "--sizes", "64K,4M")
             if r["type"] == "point"}
    assert set(local) == {64 << 10, 4 << 20}
    glob = next(r for r in records if r["type"] == "point")
    assert local[64 << 10]["time_us"]["median"] == pytest.approx(glob["time_us"]["median"], rel=1e-9)


@needs_simgrid
def test_the_written_fat_tree_picks_the_top_switch_as_simgrid_does(smpi_engine):
    # a fault on a node outside the job makes mpiscope write the fat tree link by link; with two
    # top switches the alltoall's flows must share the up links as on SimGrid's own zone, which
    # picks the top switch by destination node (picking it by destination leaf: 116.1 us, not 85.6)
    def alltoall_us(platform: str) -> float:
        records = simulate(smpi_engine, 8, platform, "alltoall", "--sizes", "64K")
        return next(r for r in records if r["type"] == "point")["time_us"]["median"]
    assert alltoall_us("fattree:nodes=12,per-switch=4,top=2,slow-link=10") == pytest.approx(
        alltoall_us("fattree:nodes=12,per-switch=4,top=2"), rel=1e-3)


@pytest.mark.parametrize("text, fragment", [
    ("torus", "unknown platform 'torus'"),
    ("cluster:bw=3", "give a number and one of the units"),
    ("fattree:nodes=10,per-switch=4", "not a multiple of per-switch=4"),
    ("cluster:nodes=4,slow-link=9", "name a node from 0 to 3"),
    ("cluster:per-switch=2", "not KEY=VALUE with a key of cluster"),
    ("fattree:nodes=8,slow-node=8", "name a node from 0 to 7"),
    ("dragonfly:groups=8,routers=4", "give routers=8 or more"),
    ("cluster:nodes=2", "2 node(s) for 4 ranks"),
    ("nowhere.xml", "no such file"),
])
def test_a_bad_platform_is_one_usage_error_that_names_the_fix(text, fragment):
    with pytest.raises(UsageError, match=None) as e:
        parse(text, 4)
    assert fragment in str(e.value)


def test_run_refuses_a_platform_for_a_real_mpi(cli):
    done = cli("run", "-n", "2", "-b", "pingpong", "--platform", "cluster", "--no-report")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("mpiscope: error: --platform describes a simulated")


def one_pair_map(records: list[dict]) -> np.ndarray:
    point = next(r for r in records if r["type"] == "point" and r["benchmark"] == "pairs")
    rows = point["pair_map"]["one_pair"]["matrix_us"]
    return np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)


@needs_simgrid
@pytest.mark.parametrize("platform, levels", [
    ("fattree:nodes=16,per-switch=4", [[(0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11), (12, 13, 14, 15)],
                                       [tuple(range(16))]]),
    # the global link makes a pair across groups (3 links) as far as two routers of one group:
    # the groups are told apart by the neighbours they share
    ("dragonfly:groups=2,routers=2,per-router=2", [[(0, 1), (2, 3), (4, 5), (6, 7)], [(0, 1, 2, 3), (4, 5, 6, 7)],
                                                  [tuple(range(8))]]),
])
def test_the_inferred_topology_is_the_platforms(smpi_engine, platform, levels):
    ranks = len(levels[-1][0])
    records = simulate(smpi_engine, ranks, platform, "pairs", "--sizes", "8")
    topology = infer_topology(one_pair_map(records))
    assert [list(lv.groups) for lv in topology.levels] == levels


def test_the_smpirun_adapter_writes_the_platform_and_passes_cfg_through(mpiscope_home):
    launch = Smpirun(Path("/usr/bin/smpirun")).command(
        Job(program=["engine", "allreduce"], ranks=8, env={"K": "V"}, platform="fattree:nodes=8,per-switch=4",
            extra_args=["--cfg=smpi/allreduce:rab1"]))
    argv = launch.argv
    assert argv[:3] == ["/usr/bin/smpirun", "-np", "8"] and argv[-2:] == ["engine", "allreduce"]
    xml = Path(argv[argv.index("-platform") + 1]).read_text()
    assert 'topology="FAT_TREE"' in xml and 'topo_parameters="2;4,2;1,1;1,1"' in xml
    assert Path(argv[argv.index("-hostfile") + 1]).read_text().split() == [f"node-{i}" for i in range(8)]
    assert "--cfg=smpi/allreduce:rab1" in argv and "--cfg=smpi/simulate-computation:no" in argv
    digest = hashlib.sha256(Path(argv[argv.index("-platform") + 1]).read_bytes()).hexdigest()[:16]
    assert launch.env == {"K": "V", "MPISCOPE_PLATFORM": "fattree:bw=12.5GBps,lat=1us,speed=1Gf,per-switch=4,top=1,"
                                                          "nodes=8", "MPISCOPE_SIM_BLOCK": str(16 << 20),
                          "MPISCOPE_SIM_SHARED": "local", "MPISCOPE_SIM_DIGEST": digest,
                          "MPISCOPE_SIM_CFG": "\n".join(a for a in argv if a.startswith("--cfg="))}
    # payloads shared a mapping an allocation; the engine allocates whole blocks if a user names global
    assert f"--cfg=smpi/shared-malloc-blocksize:{16 << 20}" in argv and "--cfg=smpi/coll-selector:mpich" in argv
    assert "--cfg=smpi/shared-malloc:local" in argv
    mine = Smpirun(Path("smpirun")).command(Job(program=["e"], ranks=2,
                                                extra_args=["--cfg=smpi/simulate-computation:yes"])).argv
    assert "--cfg=smpi/simulate-computation:no" not in mine  # the user's choice wins
    mode = Smpirun(Path("smpirun")).command(Job(program=["e"], ranks=2, extra_args=["--cfg=smpi/shared-malloc:global"]))
    assert "--cfg=smpi/shared-malloc:local" not in mode.argv and mode.env["MPISCOPE_SIM_SHARED"] == "global"
    # named algorithms spare SimGrid's node discovery; a given one wins, a given selector drops all
    assert "--cfg=smpi/allreduce:rdb" not in argv and {"--cfg=smpi/bcast:binomial_tree",
                                                       "--cfg=smpi/reduce:binomial"} <= set(argv)
    assert {"--cfg=smpi/allreduce:rdb", "--cfg=smpi/bcast:binomial_tree", "--cfg=smpi/reduce:binomial"} <= set(mine)
    ompi = Smpirun(Path("smpirun")).command(Job(program=["e"], ranks=2,
                                                extra_args=["--cfg=smpi/coll-selector:ompi"])).argv
    assert not [a for a in ompi if a.startswith(("--cfg=smpi/allreduce", "--cfg=smpi/bcast", "--cfg=smpi/reduce"))]
    with pytest.raises(UsageError, match="leave out --hosts"):
        Smpirun(Path("smpirun")).command(Job(program=["e"], ranks=2, hosts=["a", "b"]))


def test_smpi_is_recognised_by_its_library_version_string():
    assert parse_library_version("SMPI Version 3.32. Copyright The SimGrid Team 2007-2022") == ("SMPI", "3.32")
    assert launcher_family("SMPI") == "smpi"


@needs_simgrid
def test_pairs_names_a_planted_slow_link_and_shows_the_groups(cli, smpi_engine, tmp_path):
    added = cli("mpi", "add", "smpi")
    assert added.returncode == 0 or "exists already" in added.stderr, added.stderr
    runs = str(tmp_path / "runs")
    done = cli("run", "--mpi", "smpi", "-n", "16", "-b", "pairs", "--sizes", "8,64K", "--no-report", "--runs-dir", runs,
               "--platform", "fattree:nodes=16,per-switch=4,slow-link=11")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "simulated on" in done.stdout  # the summary's title (rich may wrap it)
    shown = cli("pairs", "latest", "--runs-dir", runs)
    assert shown.returncode == 0, shown.stderr
    slow = [line.strip() for line in shown.stdout.splitlines() if "slow rank:" in line]
    assert slow and all(line.startswith("slow rank: 11 (node-11)") for line in slow)
    # latency and bandwidth together: the leaf switches, the slow node alone in its own; then
    # everyone else; then all
    assert "inferred topology from the latency at 8 B and bandwidth at 64 KiB" in shown.stdout
    level = next(line for line in shown.stdout.splitlines() if "level 1:" in line)
    assert "5 group(s) of 1/3/4 rank(s)" in level and level.endswith("{0-3} {4-7} {8-10} {11} {12-15}")
    assert "level 2: 2 group(s) of 1/15 rank(s)" in shown.stdout and "level 3: 1 group(s) of 16" in shown.stdout


@needs_simgrid
def test_doctor_names_a_slow_link_among_64_simulated_nodes_by_halving(cli, smpi_engine):
    added = cli("mpi", "add", "smpi")
    assert added.returncode == 0 or "exists already" in added.stderr, added.stderr
    done = cli("doctor", "--mpi", "smpi", "--platform", "cluster:nodes=64,slow-link=37", "--json")
    assert done.returncode == 1, done.stderr[-2000:]  # a failed check
    check = next(c for c in json.loads(done.stdout)["checks"] if c["name"] == "no slow host link")
    assert check["status"] == "fail" and check["figure"].startswith("node-37 slows every barrier")
    # two barriers per halving of 64 nodes, against the 2016 pairs of the pair map
    assert "12 launch(es) of one barrier each, where the pair map measures 2016 pairs" in check["figure"]
