"""Launcher adapters: each turns a Job into argv for one launcher dialect."""
from __future__ import annotations

from mpiscope.launch.base import Job, Launch, Launcher, local_cores
from mpiscope.launch.hydra import Hydra
from mpiscope.launch.openmpi import OpenMpi
from mpiscope.mpi.library import MpiLibrary
from mpiscope.mpi.vendor import launcher_family

ADAPTERS: dict[str, type[Launcher]] = {"hydra": Hydra, "openmpi": OpenMpi}


def launcher_for(lib: MpiLibrary) -> Launcher:
    """The adapter follows the library's vendor, not the launcher's file name."""
    return ADAPTERS[launcher_family(lib.vendor)](lib.launcher)


__all__ = ["Job", "Launch", "Launcher", "launcher_for", "local_cores"]
