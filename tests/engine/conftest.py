"""Fixtures for driving the engine directly: built with the real mpicc of each
MPI (stand-alone Makefile build, warnings as errors), launched by the real
mpiexec with real ranks."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

ENGINE_SRC = Path(__file__).resolve().parents[2] / "engine"
ROOT_OK = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


@dataclass
class EngineRun:
    returncode: int
    records: list[dict]
    stdout: str
    stderr: str

    def points(self, benchmark: str | None = None) -> list[dict]:
        return [r for r in self.records
                if r["type"] == "point" and (benchmark is None or r["benchmark"] == benchmark)]

    @property
    def context(self) -> dict:
        return self.records[0]


def build_engine(mpicc: Path, out: Path) -> Path:
    """The stand-alone build a packager would run, with -Werror on top."""
    done = subprocess.run(["make", "-s", "-C", str(ENGINE_SRC), f"MPICC={mpicc}", f"BUILD={out}", "WERROR=1"],
                          capture_output=True, text=True)
    assert done.returncode == 0, f"engine build failed with {mpicc}:\n{done.stdout}\n{done.stderr}"
    return out / "mpiscope-engine"


def run_engine(launch: list[str], engine: Path, *args: str, env: dict[str, str] | None = None,
               timeout: float = 120) -> EngineRun:
    full_env = {**os.environ, **ROOT_OK, **(env or {})}
    done = subprocess.run([*launch, str(engine), *args], capture_output=True, text=True,
                          timeout=timeout, env=full_env)
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return EngineRun(done.returncode, records, done.stdout, done.stderr)


@pytest.fixture(scope="session")
def mpich_bin() -> Path:
    """The embedded default: the mpich wheel installed beside this Python."""
    bindir = Path(sys.prefix) / "bin"
    if not (bindir / "mpicc").exists():
        pytest.fail(f"no mpicc in {bindir}: install the package (pip install -e '.[test]'), "
                    "which brings the mpich wheel")
    return bindir


@pytest.fixture(scope="session")
def engine_mpich(mpich_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_engine(mpich_bin / "mpicc", tmp_path_factory.mktemp("engine-mpich"))


@pytest.fixture(scope="session")
def engine_openmpi(openmpi_prefix: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_engine(openmpi_prefix / "bin" / "mpicc", tmp_path_factory.mktemp("engine-openmpi"))


@pytest.fixture(scope="session")
def mpich_launch(mpich_bin: Path) -> Callable[[int], list[str]]:
    return lambda n: [str(mpich_bin / "mpiexec"), "-n", str(n)]


@pytest.fixture(scope="session")
def openmpi_launch(openmpi_prefix: Path) -> Callable[[int], list[str]]:
    return lambda n: [str(openmpi_prefix / "bin" / "mpirun"), "-n", str(n), "--oversubscribe",
                      "--bind-to", "none"]
