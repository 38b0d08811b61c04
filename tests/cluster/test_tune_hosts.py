"""`mpiscope tune` over two network-namespace hosts: Open MPI's component choice is read from the
library on the communicator the engine times, and across nodes coll/han, not coll/tuned, serves
allreduce (on one node han disqualifies itself and tuned serves)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from mpiscope.store.runs import Run


def mpiscope_in(cluster, args: list[str], timeout: float):
    """The real CLI, started inside host 0 (as tests/cluster/test_run_hosts.py starts it)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return cluster.run([sys.executable, "-m", "mpiscope", *args], env={"PATH": path}, timeout=timeout)


def openmpi_options(cluster) -> list[str]:
    """What Open MPI needs to reach the namespace hosts and use TCP between them."""
    return ["--mpi", "openmpi", "--bind-to", "none", "--launcher-args",
            f"--prtemca plm_ssh_agent {cluster.agent} --prtemca oob_tcp_if_include {cluster.iface} "
            f"--mca btl_tcp_if_include {cluster.iface} --mca mpi_yield_when_idle 1"]


def test_openmpi_han_serves_allreduce_across_two_hosts(two_hosts, openmpi_prefix, tmp_path):
    h0, h1 = two_hosts.hosts
    runs = tmp_path / "runs"
    r = mpiscope_in(two_hosts, ["tune", "allreduce", "--runs-dir", str(runs), "--hosts", f"{h0},{h1}",
                                "--ranks-per-node", "2", "-n", "4", "--sizes", "8", "--algorithms",
                                "allreduce=ring", "--rounds", "2", "--live-launches", "2", "--verify-launches", "2",
                                "--verify-max-launches", "2", "--max-time", "0.05", "--no-progress",
                                *openmpi_options(two_hosts)], timeout=900)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    (directory,) = runs.glob("tune-*")
    res = json.loads((Path(directory) / "tune.json").read_text())
    served = res["layers"]["allreduce"]
    assert served["component"] == "han" and not served["algorithms_steer"], served
    assert "han 35" in served["why"] and "tuned 30" in served["why"]
    assert "served by han" in r.stdout


def mpich_options(cluster) -> list[str]:
    """What MPICH's wheel needs to reach the namespace hosts and use TCP between them."""
    return ["--launcher-args", f"-launcher ssh -launcher-exec {cluster.agent} -iface {cluster.iface}",
            "--env", "UCX_TLS=self,tcp", "--env", f"UCX_NET_DEVICES={cluster.iface}"]


def test_mpich_tune_across_two_hosts_races_mpir_under_the_composition(two_hosts, mpiscope_home, tmp_path):
    """Across nodes MPICH serves allreduce by a composition whose inter-node step runs MPIR's
    algorithms: the layer is named, the algorithm variable is checked live, the race runs and the
    file is written (a rank count of the hosts' ranks), as on one node."""
    h0, h1 = two_hosts.hosts
    runs = tmp_path / "runs"
    r = mpiscope_in(two_hosts, ["tune", "allreduce", "--runs-dir", str(runs), "--hosts", f"{h0},{h1}",
                                "--ranks-per-node", "1", "-n", "2", "--sizes", "8,64K", "--algorithms",
                                "allreduce=ring,recursive_doubling", "--rounds", "2", "--live-launches", "3",
                                "--verify-launches", "2", "--verify-max-launches", "2", "--max-time", "0.05",
                                "--no-progress", *mpich_options(two_hosts)], timeout=900)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    (directory,) = runs.glob("tune-*")
    res = json.loads((Path(directory) / "tune.json").read_text())
    served = res["layers"]["allreduce"]
    assert served["layer"] == "composition" and served["algorithms_steer"], served
    assert "on 2 nodes" in served["why"] and "MPIR_CVAR_ALLREDUCE_COMPOSITION" in served["why"]
    (check,) = [row for row in res["liveness"] if row["knob"] == "algorithm"]
    assert check["ranks"] == 2 and check["verdict"] in ("slower", "same", "faster", "inconclusive")
    run = Run(Path(res.get("race_run") or check["run"]))
    assert {r.host for r in run.records().context.ranks} == {h0, h1}  # the launches spanned both hosts
    assert Path(res["file"]).is_file() and res["reaches"]
