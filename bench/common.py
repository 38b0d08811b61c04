"""What the bench scripts share: an MPI by its mpiscope name, the engine from mpiscope's own
build cache, a minimal hand-written C program built with the same mpicc, and launch commands
from mpiscope's launcher adapters (root consent, oversubscription, binding: one place)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from mpiscope.launchers import Job, launcher_for, local_cores
from mpiscope.mpi import MpiLibrary, find
from mpiscope.mpi.build import build_engine


def setup(mpi: str | None, minimal_c: Path, work: Path) -> tuple[MpiLibrary, Path, Path]:
    """(library, engine, minimal program), both programs built with the library's mpicc."""
    lib = find(mpi)
    minimal = work / "minimal"
    subprocess.run([str(lib.mpicc), "-O2", "-o", str(minimal), str(minimal_c)], check=True)
    return lib, build_engine(lib.mpicc), minimal


def run(lib: MpiLibrary, ranks: int, program: list[str]) -> str:
    """Standard output of `program` on `ranks` ranks, launched the way mpiscope launches."""
    launch = launcher_for(lib).command(Job(program, ranks), local_cores())
    return subprocess.run(launch.argv, capture_output=True, text=True, check=True,
                          env={**os.environ, **launch.env}).stdout
