"""What a record's tag and a run.json say about launches and configurations: which launch a record
belongs to, what configuration it measures beyond its point's key, and the run-to-run drift a
run keeps for its points (docs/statistics.md). The statistics on them are
`mpiscope.results.launches`."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Hashable, Mapping

from mpiscope.records.model import Point
from mpiscope.results.disturbance import disturbed

# Tag keys that tell launches and parts of one configuration apart; every other tag key
# (a study's series, a sweep's configuration) makes a different point.
# Refinement rounds (`--find-switches`) are further launches of the same points.
LAUNCH_TAGS = ("launch", "part", "refinement_round")
_LAUNCH_KEYS = frozenset(LAUNCH_TAGS)


def launch_of(p: Any) -> int:
    """The launch a record belongs to: its tag's `launch`; in runs made before launches were
    tagged, 0, or its refinement round (each round was one more launch)."""
    tag = getattr(p, "tag", None) or {}
    value = tag.get("launch", tag.get("refinement_round", 0))
    return value if isinstance(value, int) else 0


def tag_configuration(tag: Mapping[str, Any]) -> tuple[tuple[str, Hashable], ...]:
    """The configuration a tag names: its keys but the launch-like ones (a study's series, a
    sweep's configuration), sorted."""
    if tag.keys() <= _LAUNCH_KEYS:  # most tags: a launch and a part only
        return ()
    return tuple(sorted((k, v) for k, v in tag.items() if k not in LAUNCH_TAGS and isinstance(v, Hashable)))


def configuration_of(p: Any) -> tuple[tuple[str, Hashable], ...]:
    """What, beyond the point's key, makes it a different configuration: a study's series, and
    the ranks' renumbering (`--order`, which the grid study's two parts differ by)."""
    out = list(tag_configuration(getattr(p, "tag", None) or {}))
    order = getattr(p, "order", None)
    if isinstance(order, str) and order not in ("", "launch"):
        out.append(("rank_order", order))
    return tuple(sorted(out))


def disturbed_of(p: Any) -> str:
    """Why a launch's record is disturbed ("" when it is not, or when the records predate the
    engine's per-point counters): the disturbance rule on the record's own counters (without its
    launch's context, which only adds the core count to the run-queue figure)."""
    own = getattr(p, "disturbed", None)  # a cause already judged (the tidy table's column)
    if isinstance(own, str):
        return own
    return disturbed(p, None) if isinstance(p, Point) else ""


@dataclass(frozen=True)
class Drift:
    """How much a run's launch-level estimate of a point moves from one run to the next beyond
    what its launches' spread says (launches of one run follow each other within seconds and
    share a slower state of the machine): the variance of the run effect on the log scale, and
    how many runs of the configuration it was learnt from (this one included); `levels`: the
    distinct levels those runs fell into, (typical time in µs, share of the runs, runs), fastest
    first, or () for one level (a state of the machine that lasts seconds puts whole runs in it).
    """
    var: float
    runs: int
    levels: tuple[tuple[float, float, int], ...] = ()
    sources: tuple[str, ...] = ()  # the ids of the earlier runs it was learnt from
    left_out: tuple[tuple[str, str], ...] = ()  # (run id, why) of earlier runs not learnt from
    prior: bool = False  # not learnt: the policy's stated prior (POLICY.prior_drift_sd), known

    @property
    def described(self) -> str:
        """'the drift learnt from runs A, B' / 'the prior drift (10 %, not yet learnt)'."""
        if self.prior:
            return f"the prior drift ({100 * self.var ** 0.5:.0f} %, not yet learnt from earlier runs)"
        text = f"the drift learnt from {self.runs} runs"
        return text + (f" ({', '.join(self.sources)} and this one)" if self.sources else "")


def drifts_kept(extra: Mapping[str, Any]) -> dict[tuple, Drift]:
    """The drift a run.json keeps (`drift`, written by `mpiscope.results.history` at the end of a run),
    by (point key, configuration); {} when there is none or it is damaged."""
    kept = extra.get("drift") if isinstance(extra, Mapping) else None
    points = kept.get("points") if isinstance(kept, Mapping) else None
    out: dict[tuple, Drift] = {}
    for p in points if isinstance(points, list) else []:
        try:
            key = (str(p["benchmark"]), int(p["size"]), int(p["ranks"]), p["variant"])
            config = tuple((str(k), v) for k, v in p["config"])
            levels = tuple((float(m), float(share), int(n)) for m, share, n in p.get("levels") or ())
            drift = Drift(float(p["var"]), int(p["runs"]), levels, tuple(map(str, p.get("from") or ())),
                          tuple((str(i), str(why)) for i, why in p.get("left_out") or ()))
            hash((key, config))  # a list where a value belongs: damaged
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
        if math.isfinite(drift.var) and drift.var >= 0 and drift.runs >= 2:
            out[(key, config)] = drift
    return out
