"""A run's warnings about silent misconfigurations, in words (analysis/checks.py finds them):
ranks the OS may move between cores, and CPU frequency scaling; with the fixes doctor's own
placement and clock checks suggest too."""
from __future__ import annotations

from pathlib import Path

from mpiscope.analysis.checks import loose_ranks, unsteady_here
from mpiscope.records import Context

UNBOUND_FIX = "bind them (--bind-to core, or the launcher's own option in --launcher-args)"
GOVERNOR_FIX = "set the 'performance' governor (cpupower frequency-set -g performance) for steady numbers"


def unbound_ranks(ctx: Context) -> str | None:
    loose = loose_ranks(ctx)
    if not loose:
        return None
    shown = ", ".join(map(str, loose[:8])) + (" ..." if len(loose) > 8 else "")
    return f"rank(s) {shown} are not bound to a core: the OS may move them mid-measurement; {UNBOUND_FIX}"


def scaling_warning(scaling: dict[str, list[int]]) -> str:
    what = "; ".join(f"CPU(s) {','.join(map(str, c))} use the '{g}' governor" for g, c in sorted(scaling.items()))
    return (f"CPU frequency scaling is on ({what}): the clock can change during the run, and cycle figures "
            f"assume one clock; {GOVERNOR_FIX}")


def frequency_scaling(ctx: Context, root: Path = Path("/"), hostname: str | None = None) -> str | None:
    """Only this machine's CPUs can be read here: ranks on other hosts are not checked."""
    scaling = unsteady_here(ctx, root, hostname)
    return scaling_warning(scaling) if scaling else None


def misconfigurations(ctx: Context) -> list[str]:
    if ctx.simulation:  # simulated ranks have no cores or clocks of this host's
        return []
    return [w for w in (unbound_ranks(ctx), frequency_scaling(ctx)) if w]
