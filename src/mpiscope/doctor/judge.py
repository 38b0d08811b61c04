"""Every check over one set of facts, in checklist order, and how they are shown."""
from __future__ import annotations

from typing import Any

from mpiscope.doctor import FAIL, OK, SKIP, WARN, Check, exit_status
from mpiscope.doctor import clock, hosts, launching, library, noise, placement, transport
from mpiscope.doctor.facts import Facts

MODULES = (hosts, launching, placement, transport, library, clock, noise)
MARKS = {OK: "ok", WARN: "warn", FAIL: "FAIL", SKIP: "skip"}
STYLES = {OK: "green", WARN: "yellow", FAIL: "bold red", SKIP: "dim"}


def judge(f: Facts) -> list[Check]:
    return [c for m in MODULES for c in m.checks(f)]


def to_json(f: Facts, checks: list[Check]) -> dict[str, Any]:
    return {"mpi": f.mpi_name, "vendor": f.vendor, "version": f.version, "launcher": f.launcher, "pmi": f.pmi,
            "ranks": f.ranks, "hosts": f.hosts, "status": "fail" if exit_status(checks) else "ok",
            "checks": [c.to_json() for c in checks]}


def lines(checks: list[Check]) -> list[tuple[str, str, str, str]]:
    """(mark, style, text, fix) per check, for a terminal."""
    return [(MARKS[c.status], STYLES[c.status], f"{c.name}: {c.figure}", c.fix) for c in checks]
