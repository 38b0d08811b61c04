"""Each launcher adapter translates hosts, hostfile, ranks per node, mapping, binding and
environment into its own flags; `mpiscope run` checks placement options before launching.
(The flags are exercised for real in test_run_hosts.py and test_run_slurm.py.)"""
from __future__ import annotations

from pathlib import Path

import pytest

from mpiscope.util.errors import UsageError
from mpiscope.launchers import Job, default_launcher, launcher_for
from mpiscope.launchers.hydra import Hydra
from mpiscope.launchers.openmpi import OpenMpi
from mpiscope.launchers.placement import make_placement
from mpiscope.launchers.srun import Srun
from mpiscope.mpi.library import MpiLibrary

PROGRAM = ["/x/mpiscope-engine", "pingpong"]


def job(**kw) -> Job:
    return Job(PROGRAM, kw.pop("ranks", 4), kw.pop("env", {}), kw.pop("extra", []), **kw)


def after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_hydra_block_and_cyclic():
    h = Hydra(Path("mpiexec"))
    block = h.command(job(hosts=["a", "b"], mapping="block", binding="core", env={"K": "v,w"})).argv
    assert after(block, "-hosts") == "a,b" and after(block, "-ppn") == "2"
    assert after(block, "-bind-to") == "core"
    assert block[block.index("-genv"):block.index("-genv") + 3] == ["-genv", "K", "v,w"]
    assert block[-2:] == PROGRAM
    # Hydra deals ranks round the hosts when each takes one per round
    assert after(h.command(job(hosts=["a", "b"], mapping="cyclic")).argv, "-ppn") == "1"
    rpn = h.command(job(hostfile="/h", ranks_per_node=2)).argv
    assert after(rpn, "-f") == "/h" and after(rpn, "-ppn") == "2"
    # slot counts in the host list are Hydra's own block placement: no -ppn needed
    assert "-ppn" not in h.command(job(hosts=["a:2", "b:2"], mapping="block")).argv
    # block is the default, as with Open MPI and srun (Hydra alone would deal ranks round)
    assert after(h.command(job(hosts=["a", "b"])).argv, "-ppn") == "2"


def test_openmpi_mapping_ranking_binding():
    o = OpenMpi(Path("mpirun"))
    rpn = o.command(job(hosts=["a", "b"], ranks_per_node=2, binding="socket")).argv
    assert after(rpn, "--host") == "a:2,b:2"
    assert after(rpn, "--map-by") == "ppr:2:node" and "--rank-by" not in rpn
    assert after(rpn, "--bind-to") == "package"
    cyc = o.command(job(hosts=["a", "b"], ranks_per_node=2, mapping="cyclic")).argv
    assert after(cyc, "--map-by") == "ppr:2:node" and after(cyc, "--rank-by") == "node"
    assert after(o.command(job(hosts=["a:2", "b:2"], mapping="cyclic")).argv, "--map-by") == "node"
    # hosts without slots get a share of the ranks (PRRTE gives them one slot each)
    share = o.command(job(ranks=4, hosts=["a", "b"], mapping="cyclic")).argv
    assert after(share, "--host") == "a:2,b:2" and after(share, "--map-by") == "node"
    assert after(o.command(job(hostfile="/h", mapping="block")).argv, "--map-by") == "slot"
    assert "-x" in o.command(job(env={"K": "v"})).argv


def test_srun_flags_pmi_and_environment():
    s = Srun(Path("/usr/bin/srun"), "MPICH")
    launch = s.command(job(ranks=4, ranks_per_node=2, mapping="cyclic", binding="core",
                           env={"A": "1", "UCX_TLS": "self,tcp"}))
    argv = launch.argv
    assert argv[:2] == ["/usr/bin/srun", "--mpi=pmi2"]
    assert after(argv, "-n") == "4" and after(argv, "-N") == "2"
    assert "--ntasks-per-node=2" in argv and "--distribution=cyclic" in argv and "--cpu-bind=cores" in argv
    # --export splits on commas: such a value travels in srun's own environment (ALL passes it on)
    assert "--export=ALL,A=1" in argv and launch.env == {"UCX_TLS": "self,tcp"}
    assert argv[-2:] == PROGRAM
    assert "--mpi=" in launch.singleton_fix and not launch.oversubscribed
    hosts = s.command(job(ranks=2, hosts=["n1:1", "n2:1"])).argv
    assert "--nodelist=n1,n2" in hosts and after(hosts, "-N") == "2"
    assert Srun(Path("srun"), "Open MPI").command(job()).argv[1] == "--mpi=pmix"
    # the user's own plugin wins, and is not given twice
    own = s.command(job(extra=["--mpi=pmix"])).argv
    assert [a for a in own if a.startswith("--mpi")] == ["--mpi=pmix"]


def test_srun_is_the_default_inside_an_allocation(monkeypatch, tmp_path):
    lib = MpiLibrary("m", Path("mpicc"), Path("mpiexec"), "system", vendor="MPICH")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert default_launcher() == "mpiexec" and isinstance(launcher_for(lib), Hydra)
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "srun").write_text("#!/bin/sh\n")
    (fake_bin / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", str(fake_bin))
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    assert default_launcher() == "srun" and isinstance(launcher_for(lib), Srun)
    assert isinstance(launcher_for(lib, "mpiexec"), Hydra)


def test_a_node_count_needs_machines_for_mpiexec(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    for adapter in (Hydra(Path("mpiexec")), OpenMpi(Path("mpirun"))):
        with pytest.raises(UsageError, match="--nodes 2 names no machines"):
            adapter.command(job(nodes=2, ranks_per_node=1, ranks=2))
        adapter.command(job(nodes=2, hosts=["a", "b"], ranks=2))  # the hosts say where
    assert "-N" in Srun(Path("srun"), "MPICH").command(job(nodes=2, ranks=2)).argv


def test_placement_is_checked(tmp_path):
    with pytest.raises(UsageError, match="give one of them"):
        make_placement(hosts=["a"], hostfile=str(tmp_path))
    with pytest.raises(UsageError, match="no such file"):
        make_placement(hostfile=str(tmp_path / "missing"))
    with pytest.raises(UsageError, match="at least 1"):
        make_placement(ranks_per_node=0)
    with pytest.raises(UsageError, match="--map-by"):
        make_placement(mapping="scatter")
    p = make_placement(hosts=["a", "b"], ranks_per_node=2, mapping="cyclic")
    assert p.to_json() == {"hosts": ["a", "b"], "ranks_per_node": 2, "mapping": "cyclic"}
    assert p.ranks(None) == 4 and p.ranks(3) == 3
    with pytest.raises(UsageError, match="does not fit"):
        p.ranks(5)


@pytest.mark.parametrize("args,message", [
    (["--hosts", "a", "--hostfile", "/etc/hostname"], "give one of them"),
    (["--hostfile", "/no/such/file"], "no such file"),
    (["--hosts", "a,b", "--ranks-per-node", "1", "-n", "3"], "does not fit"),
    (["--dry-run"], "--dry-run goes with --submit"),
])
def test_bad_placement_is_one_line_and_exit_2(cli, args, message):
    r = cli("run", "-b", "pingpong", "--sizes", "8", "--no-progress", *args)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("mpiscope: error:") and message in r.stderr
