"""The machine's states a run did not meet (docs/statistics.md, "A state this run did not meet").

A run's launches mostly share one state of the machine, and the drift is learnt from runs of
one state, so a next run in another state can read a point several times away from this run's
interval (MPICH under four busy processes here: 0.61-3.2x, every launch of the first run in one
handoff state). When this run met the other state in some launches, its interval covers it
(`launches.with_other_state`); when it met none, only the machine's own history can tell that
the state exists. That history is the control's pieces no configuration changes, kept per
machine across every configuration (store.machine): a state this run did not meet is a level
of those pieces that enough earlier launches on the same machine read and none of this run's
launches came near. How far a point moves in that state belongs to its configuration, which
this run never saw there: its interval is then not one another run may rely on, and is named so
(`results.evidence`), not widened to cover everything."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from mpiscope.records.model import Context, Control
from mpiscope.results.control import NAMES, PIECES, RunControl, moved_by
from mpiscope.results.policy import POLICY, Policy


def machine_key(records: Iterable[Any]) -> str | None:
    """What makes two runs' controls one machine's: rank 0's host and where the control's pair of
    ranks was bound (a bound pair on two cores hands a cache line on differently from one on a
    core's two threads). None for a run without a control or a context (imports, simulations)."""
    ctx = control = None
    for rec in records:
        if isinstance(rec, Context) and ctx is None:
            ctx = rec
        elif isinstance(rec, Control) and control is None:
            control = rec
        if ctx is not None and control is not None:
            break
    if ctx is None or control is None or ctx.simulation or not ctx.ranks:
        return None
    places = {r.rank: r for r in ctx.ranks}
    pair = [places.get(r) for r in control.ranks] or [places.get(0)]
    binding = ",".join("-" if p is None or not p.bound else "+".join(map(str, p.cpus)) for p in pair)
    first = places.get(0) or ctx.ranks[0]
    return f"{first.host}|{binding}"


def deciding_pieces(policy: Policy = POLICY) -> tuple[str, ...]:
    """The pieces whose levels tell a machine's states across configurations: those no
    configuration changes, less the ones that name no launch (the copy moves with the points
    unmoved, results.control)."""
    return tuple(p for p in PIECES if p not in policy.control_launch_excluded)


def launch_levels(rc: RunControl) -> dict[str, list[float]]:
    """Each configuration-free piece's launch medians of a run (the copy too: it decides between
    runs), as the machine's history keeps them."""
    return {piece: [float(x) for x in rc.levels[piece].launches] for piece in PIECES if piece in rc.levels}


@dataclass(frozen=True)
class Unmet:
    """A state of the machine this run did not meet: the piece that tells it, this run's level,
    the level earlier launches on this machine read, and how many launches of how many runs."""
    piece: str
    level: float
    other: float
    launches: int
    runs: int

    def text(self) -> str:
        return (f"{NAMES[self.piece]} {self.level:.3g} us in this run, {self.other:.3g} us in {self.launches} "
                f"launches of {self.runs} earlier runs on this machine")

    def to_json(self) -> dict[str, Any]:
        return {"piece": self.piece, "level": self.level, "other": self.other, "launches": self.launches,
                "runs": self.runs}


def unmet_state(rc: RunControl, earlier: Sequence[Mapping[str, Sequence[float]]],
                policy: Policy = POLICY, sessions: Sequence[str] | None = None) -> Unmet | None:
    """The state of the machine that `earlier` runs' launches met and this run's (`rc`) did not:
    of a deciding piece, the earlier launches whose level lies beyond this run's noise from every
    launch of this run (`control.moved_by`), on one side of it (above, or below), when they are
    at least `policy.unmet_min_launches`, from runs of `policy.unmet_min_runs` measuring
    sessions (`sessions`, one per earlier run: a `run --vs` session's runs met the machine
    together; by default each run its own) and `policy.unmet_min_share` of the earlier launches
    (a compute loop that waited for a time slice once in forty launches is no state). The piece
    and side whose unmet launches are most; None when every state the machine showed, this run met."""
    sessions = list(sessions) if sessions is not None else [str(k) for k in range(len(earlier))]
    best: Unmet | None = None
    for piece in deciding_pieces(policy):
        if piece not in rc.levels:
            continue
        mine = np.asarray(rc.levels[piece].launches, float)
        noise = rc.levels[piece].noise(policy)
        centre = float(np.exp(np.median(np.log(mine))))
        runs = [np.asarray([x for x in run.get(piece, ()) if x > 0], float) for run in earlier]
        total = sum(len(r) for r in runs)
        far = [r[[all(moved_by(x / y, noise, policy, piece) for y in mine) for x in r]] for r in runs]
        for above in (True, False):
            got = [f[f > centre] if above else f[f < centre] for f in far]
            launches = sum(len(g) for g in got)
            met = {s for s, g in zip(sessions, got) if len(g)}
            if launches < policy.unmet_min_launches or len(met) < policy.unmet_min_runs \
                    or launches < policy.unmet_min_share * total:
                continue
            level = float(np.exp(np.median(np.log(np.concatenate(got)))))
            found = Unmet(piece, centre, level, launches, sum(len(g) > 0 for g in got))
            if best is None or found.launches > best.launches:
                best = found
    return best


def kept_in_one_state(flags: Sequence[bool], left_out: Sequence[str]) -> str:
    """A point of a run that met two states of the machine whose launches kept (`flags`: switched
    or not, each) all lie in the run's main state, because it was disturbed and left out in the
    launches whose control switched (`left_out`: their causes): its interval holds for that state
    alone, as for a run that met one (`unmet_state`); what says so, or ''. Under four busy
    processes both such intervals missed the next run (0.47x and 1.65x, bench/evidence). A point the switched
    launches did not measure at all (a refinement round's) keeps its interval: one odd launch of
    a run is no evidence that the state recurs."""
    causes = [c for c in left_out if isinstance(c, str) and c]
    if not flags or any(flags) or not causes:
        return ""
    cause = causes[0].removeprefix("machine state switched: ")
    return f"{cause} in {len(causes)} launch(es) of this run, where this point was disturbed and left out"


def unmet_kept(extra: Mapping[str, Any]) -> Unmet | None:
    """The state this run did not meet as its run.json keeps it (`machine_states`), or None."""
    kept = extra.get("machine_states") if isinstance(extra, Mapping) else None
    found = kept.get("unmet") if isinstance(kept, Mapping) else None
    if not isinstance(found, Mapping):
        return None
    try:
        u = Unmet(str(found["piece"]), float(found["level"]), float(found["other"]), int(found["launches"]),
                  int(found["runs"]))
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    ok = u.piece in NAMES and all(math.isfinite(x) and x > 0 for x in (u.level, u.other))
    return u if ok else None
