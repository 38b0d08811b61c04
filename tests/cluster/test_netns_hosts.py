"""Ranks on several "hosts" (network namespaces on this machine): the engine
tells same-host pairs (shared memory) from cross-host pairs (TCP over a veth
link) and measures both, with MPICH (Hydra) and Open MPI (PRRTE)."""
from __future__ import annotations

import json
import subprocess
import time

from mpiscope_test_fixtures.engine import QUICK, Mpi, Records  # loaded by conftest.py


JOB_TIMEOUT = 60  # seconds for one launcher call; a hang is killed with all its children


def launch(cluster, mpi: Mpi, ranks_per_host: int, engine_args: list[str], hosts=None,
           timeout: float = JOB_TIMEOUT) -> Records:
    """The engine under `mpi`'s own launcher, started inside host 0."""
    if mpi.name == "mpich":
        argv = [str(mpi.launcher), *cluster.mpich_args(ranks_per_host, hosts)]
        env = mpi.env(cluster.mpich_env)
    else:
        argv = [str(mpi.launcher), *cluster.openmpi_args(ranks_per_host, hosts)]
        env = mpi.env(cluster.openmpi_env)
    done = cluster.run([*argv, str(mpi.engine), *engine_args], env=env, timeout=timeout)
    rec = Records.parse(done.stdout, done.returncode, done.stderr)
    assert done.returncode == 0, rec.explain()
    return rec


# -- the fixture itself ------------------------------------------------------------------

def test_hosts_are_separate_machines_to_mpi(two_hosts):
    h0, h1 = two_hosts.hosts
    # own hostnames (Open MPI hangs when two hosts share one)
    assert two_hosts.run(["hostname"], 0).stdout.strip() == h0
    assert two_hosts.run(["hostname"], 1).stdout.strip() == h1
    # every host resolves every host by name, to its address on the link
    for i in (0, 1):
        hosts_file = two_hosts.run(["cat", "/etc/hosts"], i).stdout
        for h in (h0, h1):
            assert f"{two_hosts.addresses[h]}\t{h}" in hosts_file
    # one interface of the same name on each, UP, with its address
    for i, h in enumerate((h0, h1)):
        link = two_hosts.run(["ip", "-o", "-4", "addr", "show", "dev", two_hosts.iface], i).stdout
        assert f"inet {two_hosts.addresses[h]}/24" in link
        assert "state UP" in two_hosts.run(["ip", "-o", "link", "show", two_hosts.iface], i).stdout
    # the ssh stand-in reaches host 1 from host 0, as ssh would (options, user@, a command line)
    via = two_hosts.run([str(two_hosts.agent), "-x", "-o", "BatchMode=yes", f"root@{h1}", "hostname;",
                         "echo", "'a b'"], 0)
    assert via.returncode == 0, via.stderr
    assert via.stdout.split("\n")[:2] == [h1, "a b"]
    unknown = two_hosts.run([str(two_hosts.agent), "no-such-host", "true"], 0)
    assert unknown.returncode == 255 and "not one of the namespace hosts" in unknown.stderr
    # the machine's own network does not see the hosts' addresses
    own = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True, timeout=10).stdout
    assert two_hosts.addresses[h0] not in own


def test_teardown_removes_everything_and_kills_what_ran_inside():
    from mpiscope_test_fixtures import netns as mod
    mod.require()
    t0 = time.monotonic()
    with mod.netns_cluster(3) as c:
        setup_s = time.monotonic() - t0
        hosts, bridge, run_dir = c.hosts, c.bridge, c.agent.parent
        sleeper = subprocess.Popen(c.wrap(["sleep", "300"], 2), start_new_session=True)
        time.sleep(0.2)
        assert sleeper.poll() is None
    assert setup_s < 5, f"setting up 3 namespace hosts took {setup_s:.1f} s"
    assert sleeper.wait(timeout=10) is not None  # killed by the tear-down
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout
    for ns in [*hosts, bridge]:
        assert ns not in listed
        assert not (mod.NETNS_ETC / ns).exists()
    assert not run_dir.exists()
    mounts = open("/proc/self/mountinfo").read()
    assert str(run_dir) not in mounts


# -- placement: same-host and cross-host pairs ---------------------------------------------

def test_two_hosts_two_ranks_each_classify_pairs(two_hosts, any_mpi):
    """Ranks 0,1 on host A and 2,3 on host B: the ring has two same-host and two
    cross-host hops; ping-pong (ranks 0 and 1) is same-host."""
    h0, h1 = two_hosts.hosts
    rec = launch(two_hosts, any_mpi, 2, [*QUICK, "--sizes", "8,64K", "ring", "pingpong"])
    ctx = rec.of("context")
    assert len(ctx) == 1 and ctx[0]["world_size"] == 4, rec.explain()
    assert sorted(ctx[0]["hosts"]) == sorted([h0, h1])
    assert {r["rank"]: r["host"] for r in ctx[0]["ranks"]} == {0: h0, 1: h0, 2: h1, 3: h1}

    ring = rec.points("ring")
    assert [p["size"] for p in ring] == [8, 65536]
    for p in ring:
        same = {tuple(x["ranks"]): x["same_host"] for x in p["pairs"]}
        assert same == {(0, 1): True, (1, 2): False, (2, 3): True, (3, 0): False}, p["pairs"]
        assert p["time_us"]["median"] > 0
    for p in rec.points("pingpong"):
        assert p["pairs"] == [{"ranks": [0, 1], "same_host": True}]
        assert p["time_us"]["median"] > 0
    assert rec.of("end") and rec.of("end")[0]["points"] == 4


def link_tx_bytes(cluster, host: int) -> int:
    """Bytes host `host` has sent on its link so far (the namespace's interface counters)."""
    out = subprocess.run(["ip", "-n", cluster.hosts[host], "-j", "-s", "link", "show", "dev", cluster.iface],
                         capture_output=True, text=True, check=True).stdout
    return int(json.loads(out)[0]["stats64"]["tx"]["bytes"])


def test_cross_host_pair_goes_over_the_link(two_hosts, any_mpi):
    """Rank 0 on host A, rank 1 on host B is a cross-host pair and its messages really cross the
    link (the interface counters grow by at least every 1 MiB message sent); two ranks on one
    host are a same-host pair whose messages do not (shared memory: only the launcher's few
    control bytes cross)."""
    args = [*QUICK, "--sizes", "8,1M", "pingpong"]
    sent = link_tx_bytes(two_hosts, 1)
    across = launch(two_hosts, any_mpi, 1, args)
    crossed = link_tx_bytes(two_hosts, 1) - sent
    sent = link_tx_bytes(two_hosts, 1)
    within = launch(two_hosts, any_mpi, 2, args, hosts=[1])
    stayed = link_tx_bytes(two_hosts, 1) - sent
    assert within.of("context")[0]["hosts"] == [two_hosts.hosts[1]]
    for p in across.points("pingpong"):
        assert p["pairs"] == [{"ranks": [0, 1], "same_host": False}]
    for p in within.points("pingpong"):
        assert p["pairs"] == [{"ranks": [0, 1], "same_host": True}]
    (big,) = [p for p in across.points("pingpong") if p["size"] == 1 << 20]
    assert crossed >= big["time_us"]["n"] * (1 << 20), (crossed, big["time_us"]["n"])  # rank 1's replies
    (big,) = [p for p in within.points("pingpong") if p["size"] == 1 << 20]
    assert stayed < big["time_us"]["n"] * (1 << 20) / 10, (stayed, big["time_us"]["n"])


def test_three_hosts_through_a_bridge(netns_hosts, mpich):
    """Three hosts (veths into a bridge namespace), one rank each: every ring hop crosses hosts."""
    c = netns_hosts(3)
    assert c.bridge is not None
    rec = launch(c, mpich, 1, [*QUICK, "--sizes", "8", "ring"])
    assert rec.of("context")[0]["hosts"] == c.hosts
    (p,) = rec.points("ring")
    assert {tuple(x["ranks"]): x["same_host"] for x in p["pairs"]} == {(0, 1): False, (1, 2): False, (2, 0): False}


# -- rate shaping --------------------------------------------------------------------------

def test_tbf_shaping_limits_the_link(netns_hosts, mpich):
    """A structural check that `shape()` applies: a 500 Mbit/s token bucket on each host's
    interface brings streaming bandwidth at 4 MiB between the hosts down to about
    62.5 MB/s. The bounds are wide on purpose: below the rate plus 8 %, above half of it,
    and far below the unshaped link. (At 1 Gbit/s the loaded 2-core machine's own TCP over
    veth, not the bucket, was the limit: 56.7 MB/s measured once while other jobs ran.)"""
    c = netns_hosts(2)
    args = ["--sizes", "4M", "--window", "8", "--reps", "5", "--warmup", "1", "--warmup-bytes", "0",
            "--timeout", "60", "bw"]
    free = launch(c, mpich, 1, args).points("bw")[0]["bw_MBps"]["median"]
    c.shape("500mbit")
    assert "tbf" in c.qdisc(0) and "rate 500Mbit" in c.qdisc(1)
    try:
        shaped = launch(c, mpich, 1, args).points("bw")[0]
    finally:
        c.unshape()
    assert shaped["pairs"] == [{"ranks": [0, 1], "same_host": False}]
    bw = shaped["bw_MBps"]["median"]
    assert 31.25 <= bw <= 67.5, f"shaped to 500 Mbit/s (62.5 MB/s) but measured {bw:.1f} MB/s"
    assert free > 2 * bw, f"unshaped {free:.1f} MB/s is not well above shaped {bw:.1f} MB/s"
    assert "tbf" not in c.qdisc(0)
