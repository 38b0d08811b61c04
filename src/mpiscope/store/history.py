"""Which stored runs a run learns its run-to-run drift from (`results.history.learn_drift`): the
finished runs of the same configuration beside it, started at most POLICY.history_days earlier,
or the runs a `--history` names."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Sequence

from mpiscope.results.policy import POLICY
from mpiscope.store.runs import Run, distinct, list_runs


def _started(run: Run) -> datetime | None:
    """When the run started (to the microsecond; runs of older mpiscopes to the second)."""
    for form in ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return datetime.strptime(run.meta().started, form).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    return None


def _same_run_configuration(a: Any, b: Any) -> bool:
    """What run.json says without reading records: host, library and factors (a cheap first sieve;
    each launch's configuration decides)."""
    def lib(m: Any) -> tuple:
        return tuple(getattr(m.mpi, k, None) for k in ("vendor", "version", "prefix"))
    return a.host == b.host and lib(a) == lib(b) and a.factors == b.factors


def earlier_runs(run: Run) -> list[Run]:
    """The finished runs beside `run` started before it and at most POLICY.history_days earlier, newest
    first."""
    start = _started(run)
    if start is None:
        return []
    mine = run.meta()
    out = []
    for other in reversed(list_runs(run.path.parent)):
        if other.id == run.id:
            continue
        when = _started(other)
        meta = other.meta()
        if when is None or when >= start or meta.status != "ok" or not _same_run_configuration(meta, mine):
            continue
        if start - when > timedelta(days=POLICY.history_days):
            continue
        out.append(other)
    return distinct(sorted(out, key=_started, reverse=True))  # a copy of a run (`cp -r`) is one run


def drift_sources(run: Run, history: str = "auto", resolve: Callable[[str], Sequence[Run]] | None = None
                  ) -> list[Run]:
    """The runs `history` names for `run`'s drift: "auto" the latest earlier runs here (at most
    POLICY.history_runs are used a point), "none" none (the prior), or run ids (comma-separated,
    read by `resolve`)."""
    if history == "none":
        return []
    if history == "auto" or resolve is None:
        return earlier_runs(run)
    return [r for r in distinct(resolve(history)) if r.id != run.id and r.identity() != run.identity()]
