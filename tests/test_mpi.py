"""`mpiscope mpi ...` with real libraries: the embedded MPICH, Open MPI from PyPI, a mismatched pair."""
import json

import pytest


FAST = ["-b", "pingpong", "--sizes", "1:64", "--max-time", "0.02", "--no-progress"]


def test_list_shows_the_embedded_mpich(cli):
    r = cli("mpi", "list")
    assert r.returncode == 0, r.stderr
    line = next(line for line in r.stdout.splitlines() if "embedded" in line)
    assert "MPICH" in line and "5." in line


def test_the_embedded_mpi_on_path_is_listed_once(cli, mpich_mpicc):
    import os
    r = cli("mpi", "list", env={"PATH": f"{mpich_mpicc.parent}{os.pathsep}{os.environ['PATH']}"})
    assert r.returncode == 0, r.stderr
    assert "embedded" in r.stdout and " path " not in r.stdout


@pytest.mark.net
def test_add_openmpi_then_run_on_it(cli, openmpi_prefix, tmp_path):
    r = cli("mpi", "list")
    assert "Open MPI" in r.stdout and "openmpi" in r.stdout
    r = cli("mpi", "show", "openmpi")
    assert r.returncode == 0 and "Open MPI" in r.stdout
    r = cli("run", "--mpi", "openmpi", *FAST, "--env", "OMPI_MCA_btl_base_verbose=0", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (run,) = tmp_path.iterdir()
    meta = json.loads((run / "run.json").read_text())
    assert meta["mpi"]["vendor"] == "Open MPI"
    assert "-x" in meta["launcher_command"]
    ctx = json.loads((run / "records.jsonl").read_text().splitlines()[0])
    assert ctx["world_size"] == 2 and "Open MPI" in ctx["mpi_library_version"]
    assert "not trustworthy" not in r.stderr


@pytest.mark.net
def test_more_ranks_than_cores_warns(cli, openmpi_prefix, tmp_path):
    import os
    ranks = len(os.sched_getaffinity(0)) + 2
    r = cli("run", "--mpi", "openmpi", "-n", str(ranks), *FAST, "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "not trustworthy" in " ".join(r.stderr.split())
    (run,) = tmp_path.iterdir()
    assert "--oversubscribe" in json.loads((run / "run.json").read_text())["launcher_command"]


@pytest.mark.net
def test_add_prefix_show_remove(cli, openmpi_prefix):
    r = cli("mpi", "add", str(openmpi_prefix), "--name", "sys-ompi")
    assert r.returncode == 0, r.stderr
    assert "Open MPI" in r.stdout
    r = cli("mpi", "add", str(openmpi_prefix), "--name", "sys-ompi")
    assert r.returncode == 2 and "exists already" in r.stderr
    r = cli("mpi", "show", "sys-ompi")
    assert r.returncode == 0 and "system" in r.stdout
    r = cli("mpi", "remove", "sys-ompi")
    assert r.returncode == 0
    assert openmpi_prefix.is_dir(), "removing a system MPI must not delete it"
    assert "sys-ompi" not in cli("mpi", "list").stdout


@pytest.mark.net
def test_add_and_remove_a_managed_mpich_version(cli, mpiscope_home):
    from importlib.metadata import version
    r = cli("mpi", "add", f"mpich=={version('mpich')}", "--name", "mpich-pinned", timeout=1800)
    assert r.returncode == 0, r.stderr
    prefix = mpiscope_home / "managed" / "mpich-pinned"
    assert (prefix / "bin" / "mpicc").is_file()
    r = cli("mpi", "remove", "mpich-pinned")
    assert r.returncode == 0 and not prefix.exists()


@pytest.mark.net
def test_mismatched_launcher_is_detected(cli, openmpi_prefix, mpich_mpiexec, tmp_path):
    """Open MPI's mpicc beside MPICH's mpiexec: the ranks start as singletons."""
    bindir = tmp_path / "mixed" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "mpicc").symlink_to(openmpi_prefix / "bin" / "mpicc")
    for tool in ("mpiexec", "hydra_pmi_proxy"):
        (bindir / tool).symlink_to(mpich_mpiexec.parent / tool)
    assert cli("mpi", "add", str(bindir.parent), "--name", "mixed").returncode == 0
    try:
        r = cli("run", "--mpi", "mixed", *FAST, "--runs-dir", str(tmp_path / "runs"))
        assert r.returncode == 2
        msg = " ".join(r.stderr.split())
        assert "different MPI" in msg and "--mpi" in msg
        assert "Traceback" not in r.stderr
        (run,) = (tmp_path / "runs").iterdir()
        assert json.loads((run / "run.json").read_text())["status"] == "failed"
    finally:
        cli("mpi", "remove", "mixed")
