"""Launcher adapters: each turns a Job into argv for one launcher dialect."""
from __future__ import annotations

from mpiscope.util.errors import UsageError
from mpiscope.launchers.base import BINDINGS, MAPPINGS, Job, Launch, Launcher, in_allocation, local_cores
from mpiscope.launchers.hydra import Hydra
from mpiscope.launchers.openmpi import OpenMpi
from mpiscope.launchers.smpirun import Smpirun
from mpiscope.launchers.srun import Srun, find_srun
from mpiscope.mpi.library import MpiLibrary
from mpiscope.mpi.vendor import launcher_family

ADAPTERS: dict[str, type[Launcher]] = {"hydra": Hydra, "openmpi": OpenMpi, "smpi": Smpirun}
LAUNCHERS = ("mpiexec", "srun")


def default_launcher() -> str:
    return "srun" if in_allocation() else "mpiexec"


def launcher_for(lib: MpiLibrary, kind: str | None = None) -> Launcher:
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


__all__ = ["BINDINGS", "Job", "LAUNCHERS", "Launch", "Launcher", "MAPPINGS", "default_launcher",
           "launcher_for", "local_cores"]
