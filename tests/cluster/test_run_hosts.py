"""`mpiscope run --hosts` over network-namespace hosts: the launcher places ranks block-wise
or cyclically, every point-to-point point is classified intra-node / inter-node / mixed in
the summary and the tidy export, Hockney fits come per placement, and a link shaped with
`tbf` shows its configured rate in the fitted bandwidth."""
from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pandas as pd
import pytest

from mpiscope.report.placement import INTER, INTRA, MIXED, groups
from mpiscope.store.runs import Run


QUICK = ["--max-time", "0.05", "--no-progress"]


def mpiscope_in(cluster, args: list[str], timeout: float = 240):
    """The real CLI, started inside host 0 as a user on a login node would start it."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return cluster.run([sys.executable, "-m", "mpiscope", *args], env={"PATH": path}, timeout=timeout)


def launcher_options(cluster, lib: str) -> list[str]:
    """What each MPI needs to reach the namespace hosts (the ssh stand-in) and to use TCP
    between them (see tests/fixtures/netns.py): plain --launcher-args and --env."""
    if lib == "mpich":
        return ["--launcher-args", f"-launcher ssh -launcher-exec {cluster.agent} -iface {cluster.iface}",
                "--env", "UCX_TLS=self,tcp", "--env", f"UCX_NET_DEVICES={cluster.iface}"]
    return ["--mpi", "openmpi", "--bind-to", "none", "--launcher-args",
            f"--prtemca plm_ssh_agent {cluster.agent} --prtemca oob_tcp_if_include {cluster.iface} "
            f"--mca btl_tcp_if_include {cluster.iface} --mca mpi_yield_when_idle 1"]


def only_run(runs_dir: Path, before: set[Path] = frozenset()) -> Run:
    new = [p for p in runs_dir.iterdir() if (p / "run.json").is_file() and p not in before]
    assert len(new) == 1, new
    return Run(new[0])


def hosts_of(run: Run) -> dict[int, str]:
    return {r.rank: r.host for r in run.records().context.ranks}


@pytest.fixture(params=["mpich", "openmpi"])
def lib(request) -> str:
    if request.param == "openmpi":
        request.getfixturevalue("openmpi_prefix")  # registered in the session's MPISCOPE_HOME
    else:
        request.getfixturevalue("mpiscope_home")
    return request.param


def test_run_over_two_hosts_classifies_and_measures_both_kinds(two_hosts, lib, tmp_path):
    h0, h1 = two_hosts.hosts
    runs = tmp_path / "runs"
    opts = launcher_options(two_hosts, lib)

    # block: ranks 0,1 on h0 and 2,3 on h1; the ring has both kinds of hop, pingpong (0,1) is intra-node
    r = mpiscope_in(two_hosts, ["run", "--runs-dir", str(runs), "--hosts", f"{h0},{h1}", "--ranks-per-node", "2",
                                "-b", "ring,pingpong", "--sizes", "8,64K,1M", *QUICK, *opts])
    assert r.returncode == 0, r.stderr
    block = only_run(runs)
    assert block.meta().status == "ok"
    assert hosts_of(block) == {0: h0, 1: h0, 2: h1, 3: h1}
    assert block.meta().parts[0].placement.to_json() == {"hosts": [h0, h1], "ranks_per_node": 2, **(
        {"binding": "none"} if lib == "openmpi" else {})}
    assert "by placement" in r.stdout and MIXED in r.stdout and INTRA in r.stdout

    # cyclic, 2 ranks: rank 0 on h0, rank 1 on h1, so pingpong crosses the link
    r = mpiscope_in(two_hosts, ["run", "--runs-dir", str(runs), "--hosts", f"{h0},{h1}", "--map-by", "cyclic",
                                "-n", "2", "-b", "pingpong", "--sizes", "8,64K,1M", *QUICK, *opts])
    assert r.returncode == 0, r.stderr
    cyclic = only_run(runs, {block.path})
    assert hosts_of(cyclic) == {0: h0, 1: h1}
    assert INTER in r.stdout

    # the tidy export names the placement of every point
    r = mpiscope_in(two_hosts, ["export", block.id, cyclic.id, "--runs-dir", str(runs), "--format", "csv"])
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(io.StringIO(r.stdout))
    where = df.groupby(["run_id", "benchmark"])["placement"].agg(set).to_dict()
    assert where == {(block.id, "ring"): {MIXED}, (block.id, "pingpong"): {INTRA},
                     (cyclic.id, "pingpong"): {INTER}}
    assert set(df["hosts"]) == {2}

    # one Hockney fit per placement, both kinds measured at every size (which is faster is a
    # benchmark's question, not a test's: bench/cluster/shaping.py prints the figures)
    fits = {(g.benchmark, g.placement): g for g in groups(block.records().records + cyclic.records().records)}
    assert set(fits) == {("ring", MIXED), ("pingpong", INTRA), ("pingpong", INTER)}
    assert all(g.fit is not None and g.fit.n_points == 3 for g in fits.values())
    assert all(sorted(p.size for p in g.points) == [8, 1 << 16, 1 << 20] and
               all(p.time_us.min > 0 for p in g.points) for g in fits.values())
    ring = [p for p in block.records().points if p.benchmark == "ring"]
    for p in ring:
        assert {x.ranks: x.same_host for x in p.pairs} == {
            (0, 1): True, (1, 2): False, (2, 3): True, (3, 0): False}


def test_tbf_rate_shows_in_the_fitted_bandwidth(netns_hosts, mpiscope_home, tmp_path):
    """A token bucket on each host's link at R: the Hockney fit of inter-node pingpong
    (512 KiB to 4 MiB, where the rate dominates) gives a bandwidth near R. The bounds are
    about the rate being applied and tracked, not about speed: within -40 %/+10 % of R
    (TCP/IP headers and a loaded machine's bucket timer only lower it), halving R about
    halves it, and the unshaped link is several times faster. Rates of 500 and 250 Mbit/s:
    at 1 Gbit/s the 2-core machine's own TCP over veth, shared with other jobs, was the
    bottleneck (49-88 MB/s fitted, 700 MB/s unshaped at best), not the bucket; at 500 Mbit/s
    the fit gave 59.7-60.3 MB/s of 62.5, at 250 Mbit/s 28.8 of 31.25."""
    c = netns_hosts(2)
    h0, h1 = c.hosts
    runs = tmp_path / "runs"
    args = ["run", "--runs-dir", str(runs), "--hosts", f"{h0},{h1}", "--ranks-per-node", "1", "-b", "pingpong",
            "--sizes", "512K:4M", "--reps", "5", "--no-progress", *launcher_options(c, "mpich")]

    def fitted() -> float:
        before = set(runs.iterdir()) if runs.exists() else set()
        r = mpiscope_in(c, args)
        assert r.returncode == 0, r.stderr
        (g,) = groups(only_run(runs, before).records().records)
        assert g.placement == INTER and g.fit is not None
        return g.fit.bandwidth_MBps

    free = fitted()
    rates = {}
    try:
        for rate, mbps in (("500mbit", 62.5), ("250mbit", 31.25)):
            c.shape(rate)
            rates[mbps] = fitted()
    finally:
        c.unshape()
    for mbps, got in rates.items():
        assert 0.6 * mbps <= got <= 1.1 * mbps, f"shaped to {mbps} MB/s, fitted {got:.1f} MB/s"
    assert 1.5 <= rates[62.5] / rates[31.25] <= 2.6, rates
    assert free > 3 * rates[62.5], (free, rates)
