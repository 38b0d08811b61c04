"""What every launcher adapter gets and returns: a job description in, argv + env out."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Job:
    """One launch of the engine. Placement fields are for adapters that need them (srun, hosts)."""
    program: list[str]
    ranks: int
    env: dict[str, str] = field(default_factory=dict)
    extra_args: list[str] = field(default_factory=list)
    hosts: list[str] | None = None
    hostfile: str | None = None
    ranks_per_node: int | None = None
    mapping: str | None = None  # block | cyclic (see MAPPINGS)
    binding: str | None = None  # none | core | hwthread | socket | numa (see BINDINGS)
    nodes: int | None = None
    launcher: str | None = None  # mpiexec | srun; None: srun inside a Slurm allocation, else mpiexec
    platform: str | None = None  # smpirun: a simulated platform's description or XML file (launch/platform.py)


# Placement vocabulary shared by every adapter: what mpiscope's options accept.
MAPPINGS = ("block", "cyclic")
LAUNCHERS = ("mpiexec", "srun")
BINDINGS = ("none", "core", "hwthread", "socket", "numa")


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str]  # added to the launcher's own environment
    oversubscribed: bool
    # What to do when the launch gives N one-rank jobs instead of one N-rank job
    # ("" = the generic advice: launcher and engine come from different MPIs).
    singleton_fix: str = ""


class Launcher:
    """One launcher dialect. Subclasses only translate; they never run anything."""

    def __init__(self, path: Path):
        self.path = path

    def command(self, job: Job, cores: int | None = None) -> Launch:
        raise NotImplementedError


# Which command-line dialect a vendor's launcher speaks.
_LAUNCHER_FAMILY = {
    "MPICH": "hydra",
    "Intel MPI": "hydra",
    "MVAPICH": "hydra",
    "Cray MPICH": "hydra",
    "Open MPI": "openmpi",
    "Spectrum MPI": "openmpi",
    "SMPI": "smpi",
}


def launcher_family(vendor: str) -> str:
    """'hydra', 'openmpi' or 'smpi' (SimGrid's smpirun); unknown vendors get Hydra, the commonest mpiexec dialect."""
    return _LAUNCHER_FAMILY.get(vendor, "hydra")


def local_cores() -> int:
    """Cores this process may run on, which is what oversubscription is about."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def in_allocation() -> bool:
    """Inside salloc/sbatch (SLURM_JOB_ID set) with srun at hand, srun is how ranks start."""
    return bool(os.environ.get("SLURM_JOB_ID")) and shutil.which("srun") is not None


def nodes_need_hosts(job: Job) -> None:
    """An MPI's own launcher spreads ranks over the hosts it is given (or, inside a Slurm
    allocation, the allocation's nodes); a node count alone would silently put every rank here."""
    from mpiscope.util.errors import UsageError
    if job.nodes and job.nodes > 1 and not (job.hosts or job.hostfile) and not in_allocation():
        raise UsageError(f"--nodes {job.nodes} names no machines for mpiexec: give --hosts or --hostfile, "
                         f"or run inside a Slurm allocation, or use --launcher srun")


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0
