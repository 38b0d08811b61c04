"""Which adapter starts a library's ranks: its own mpiexec, in the dialect of its vendor, or Slurm's srun."""
from __future__ import annotations

from pathlib import Path
from typing import Protocol

from mpiscope.launchers.base import LAUNCHERS, Launcher, in_allocation, launcher_family
from mpiscope.launchers.hydra import Hydra
from mpiscope.launchers.openmpi import OpenMpi
from mpiscope.launchers.smpirun import Smpirun
from mpiscope.launchers.srun import Srun, find_srun
from mpiscope.util.errors import UsageError

ADAPTERS: dict[str, type[Launcher]] = {"hydra": Hydra, "openmpi": OpenMpi, "smpi": Smpirun}


class Library(Protocol):
    """What the choice reads of an MPI library (mpi.library.MpiLibrary)."""
    name: str
    vendor: str
    launcher: Path


def default_launcher() -> str:
    return "srun" if in_allocation() else "mpiexec"


def launcher_for(lib: Library, kind: str | None = None) -> Launcher:
    """`mpiexec` is the library's own launcher, whose dialect follows the library's vendor
    (not the launcher's file name); `srun` is Slurm's. None: srun inside an allocation."""
    kind = kind or default_launcher()
    if kind == "srun":
        if launcher_family(lib.vendor) == "smpi":
            raise UsageError(f"{lib.name} is SimGrid's SMPI, which simulates its ranks in one process: "
                             f"leave out --launcher srun")
        return Srun(find_srun(), lib.vendor)
    if kind == "mpiexec":
        return ADAPTERS[launcher_family(lib.vendor)](lib.launcher)
    raise UsageError(f"unknown launcher '{kind}': use one of {', '.join(LAUNCHERS)}")
