"""Fixtures for driving the engine directly: built with the real mpicc of each MPI (the one
build of tests/fixtures/engine.py), launched by the real mpiexec with real ranks."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from mpiscope_test_fixtures.engine import ENGINE_SRC, ROOT_OK, run_engine  # noqa: F401  (the tests import them from here)


@pytest.fixture(scope="session")
def mpich_bin(mpich_mpicc: Path) -> Path:
    """The embedded default: the mpich wheel installed beside this Python."""
    return mpich_mpicc.parent


@pytest.fixture(scope="session")
def engine_mpich(mpich_engine: Path) -> Path:
    return mpich_engine


@pytest.fixture(scope="session")
def engine_openmpi(openmpi_engine: Path) -> Path:
    return openmpi_engine


@pytest.fixture(scope="session")
def mpich_launch(mpich_bin: Path) -> Callable[[int], list[str]]:
    return lambda n: [str(mpich_bin / "mpiexec"), "-n", str(n)]


@pytest.fixture(scope="session")
def openmpi_launch(openmpi_prefix: Path) -> Callable[[int], list[str]]:
    return lambda n: [str(openmpi_prefix / "bin" / "mpirun"), "-n", str(n), "--oversubscribe",
                      "--bind-to", "none"]
