"""The report's "Setup checks": the checks of `mpiscope doctor` that a run's own context records
decide (placement, shared cores, unbound ranks, oversubscription, clock and timer, tuning
variables), judged by the same functions as `mpiscope doctor` (docs/doctor.md)."""
from __future__ import annotations

import json
from html import escape

from mpiscope.doctor import Check
from mpiscope.doctor.clock import frequency, timer
from mpiscope.doctor.facts import Facts, LaunchFacts
from mpiscope.doctor.library import tuning
from mpiscope.doctor.placement import checks as placement_checks
from mpiscope.records import Context, to_json


def context_checks(ctx: Context) -> list[Check]:
    """The doctor checks one context record decides (none for simulated ranks: they have no
    cores, clocks or governors of this host's)."""
    if ctx.simulation:
        return []
    job = LaunchFacts(argv=[], status="ok", exit_code=0, stdout=[json.dumps(to_json(ctx))])
    f = Facts(ranks=ctx.world_size, job=job)
    return [c for c in placement_checks(f) if c.name != "rank placement"] + [frequency(f), timer(f), tuning(f)]


def section(contexts: dict[str, Context | None]) -> str:
    rows = []
    many = len(contexts) > 1
    for rid, ctx in contexts.items():
        if ctx is None:
            continue
        for c in context_checks(ctx):
            fix = f'<div class="muted">fix: {escape(c.fix)}</div>' if c.fix else ""
            run = f"<span class=run>{escape(rid)}</span> " if many else ""
            rows.append(f'<li class="check-{c.status}"><b>{escape(c.status)}</b> {run}{escape(c.name)}: '
                        f"{escape(c.figure)}{fix}</li>")
    if not rows:
        simulated = any(ctx is not None and ctx.simulation for ctx in contexts.values())
        return ('<p class="muted">Simulated: nothing of this host to check (docs/simulation.md).</p>' if simulated
                else '<p class="muted">No context record to check.</p>')
    return (f'<ul class="checks">{"".join(rows)}</ul><p class="muted">The checks of <code>mpiscope doctor</code> '
            f"that the run's own context record decides; run <code>mpiscope doctor</code> for the rest "
            f"(transport, hosts, noise).</p>")
