"""Silent misconfigurations read off a job's context record: ranks the OS may move between
cores, and CPU frequency scaling that changes the clock under the measurement."""
from __future__ import annotations

import socket
from pathlib import Path

from mpiscope.records import Context

# Governors that hold the clock where the hardware wants it; others follow the load.
STEADY_GOVERNORS = {"performance"}


def unbound_ranks(ctx: Context) -> str | None:
    loose = [r.rank for r in ctx.ranks if r.bound is False]
    if not loose:
        return None
    shown = ", ".join(map(str, loose[:8])) + (" ..." if len(loose) > 8 else "")
    return (f"rank(s) {shown} are not bound to a core: the OS may move them mid-measurement; bind them "
            f"(--bind-to core, or the launcher's own option in --launcher-args)")


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
    scaling = {g: c for g, c in governors(cpus, root).items() if g not in STEADY_GOVERNORS}
    if not scaling:
        return None
    what = "; ".join(f"CPU(s) {','.join(map(str, c))} use the '{g}' governor" for g, c in sorted(scaling.items()))
    return (f"CPU frequency scaling is on ({what}): the clock can change during the run, and cycle figures "
            f"assume one clock; set the 'performance' governor (cpupower frequency-set -g performance) "
            f"for steady numbers")


def misconfigurations(ctx: Context) -> list[str]:
    return [w for w in (unbound_ranks(ctx), frequency_scaling(ctx)) if w]
