"""`mpiscope doctor`: what is wrong with an MPI setup, before it spoils a measurement.

Two halves that never mix: `execute.probe` launches the engine (and a plain command on every host)
under time limits and keeps what came back as `Facts`; the check modules (launching,
placement, clock, transport, library, noise, hosts) are pure functions of those facts, each
returning `Check`s (ok / warn / fail, the figure that decided it, and the fix). Captured facts
can therefore be judged again, in tests or in a run's report, without launching anything."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
STATUSES = (OK, WARN, FAIL, SKIP)


@dataclass(frozen=True)
class Check:
    """One line of the checklist."""
    name: str
    status: str          # ok | warn | fail | skip (nothing to decide it with)
    figure: str          # what decided it, with the numbers
    fix: str = ""        # for warn and fail: what to change
    group: str = ""

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v != "" or k in ("name", "status", "figure")}


def exit_status(checks: list[Check]) -> int:
    """0 when nothing failed, 1 otherwise."""
    return 1 if any(c.status == FAIL for c in checks) else 0


def ok(name: str, figure: str) -> Check:
    return Check(name, OK, figure)


def warn(name: str, figure: str, fix: str) -> Check:
    return Check(name, WARN, figure, fix)


def fail(name: str, figure: str, fix: str) -> Check:
    return Check(name, FAIL, figure, fix)


def skip(name: str, figure: str) -> Check:
    return Check(name, SKIP, figure)
