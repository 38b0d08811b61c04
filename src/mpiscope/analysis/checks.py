"""Silent misconfigurations read off a job's context record: ranks the OS may move between
cores, and CPU frequency scaling that changes the clock under the measurement (report/misconfig.py
words them)."""
from __future__ import annotations

import socket
from pathlib import Path

from mpiscope.records import Context

# Governors that hold the clock where the hardware wants it; others follow the load.
STEADY_GOVERNORS = {"performance"}


def loose_ranks(ctx: Context) -> list[int]:
    """Ranks whose CPU set is every core online: the OS may move them."""
    return [r.rank for r in ctx.ranks if r.bound is False]


def split_job(world_sizes: list[int], ranks: int) -> bool:
    """The launch gave something other than one job of `ranks` ranks (singletons: one context
    record per rank, each of world size 1)."""
    return len(world_sizes) > 1 or (len(world_sizes) == 1 and world_sizes[0] != ranks)


def unsteady(found: dict[str, list[int]]) -> dict[str, list[int]]:
    """The governors (of `governors()`) that let the clock follow the load."""
    return {g: c for g, c in found.items() if g not in STEADY_GOVERNORS}


def governors(cpus: list[int], root: Path = Path("/")) -> dict[str, list[int]]:
    """cpufreq governor -> the CPUs (of `cpus`) that use it; empty where cpufreq is not exposed."""
    found: dict[str, list[int]] = {}
    for cpu in cpus:
        f = root / f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"
        try:
            found.setdefault(f.read_text().strip(), []).append(cpu)
        except OSError:
            continue
    return found


def unsteady_here(ctx: Context, root: Path = Path("/"), hostname: str | None = None) -> dict[str, list[int]]:
    """The unsteady governors of the job's CPUs on this machine: only its CPUs can be read here,
    ranks on other hosts are not checked."""
    here = hostname or socket.gethostname()
    return unsteady(governors(sorted({c for r in ctx.ranks if r.host == here for c in r.cpus}), root))
