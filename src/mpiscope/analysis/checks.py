"""Silent misconfigurations read off a job's context record: ranks the OS may move between
cores, and CPU frequency scaling that changes the clock under the measurement."""
from __future__ import annotations

import socket
from pathlib import Path

from mpiscope.records import Context

# Governors that hold the clock where the hardware wants it; others follow the load.
STEADY_GOVERNORS = {"performance"}


UNBOUND_FIX = "bind them (--bind-to core, or the launcher's own option in --launcher-args)"


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


def unbound_ranks(ctx: Context) -> str | None:
    loose = loose_ranks(ctx)
    if not loose:
        return None
    shown = ", ".join(map(str, loose[:8])) + (" ..." if len(loose) > 8 else "")
    return f"rank(s) {shown} are not bound to a core: the OS may move them mid-measurement; {UNBOUND_FIX}"


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


def frequency_scaling(ctx: Context, root: Path = Path("/"), hostname: str | None = None) -> str | None:
    """Only this machine's CPUs can be read here: ranks on other hosts are not checked."""
    here = hostname or socket.gethostname()
    cpus = sorted({c for r in ctx.ranks if r.host == here for c in r.cpus})
    scaling = unsteady(governors(cpus, root))
    if not scaling:
        return None
    return scaling_warning(scaling)


GOVERNOR_FIX = "set the 'performance' governor (cpupower frequency-set -g performance) for steady numbers"


def scaling_warning(scaling: dict[str, list[int]]) -> str:
    what = "; ".join(f"CPU(s) {','.join(map(str, c))} use the '{g}' governor" for g, c in sorted(scaling.items()))
    return (f"CPU frequency scaling is on ({what}): the clock can change during the run, and cycle figures "
            f"assume one clock; {GOVERNOR_FIX}")


def misconfigurations(ctx: Context) -> list[str]:
    if ctx.simulation:  # simulated ranks have no cores or clocks of this host's
        return []
    return [w for w in (unbound_ranks(ctx), frequency_scaling(ctx)) if w]
