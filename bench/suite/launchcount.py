"""A pytest plugin for bench/suite/run.py --per-file: per test, its wall seconds (set-up, call and
tear-down) and what it started through subprocess.Popen in pytest's own process (MPI launchers,
the engine alone, compilers and make), one JSON line each, appended to $MPISCOPE_SUITE_LOG.
What a test starts inside another process (a `python -m mpiscope` child) is not counted."""
from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Iterator

import pytest

LAUNCHERS = frozenset({"mpiexec", "mpirun", "mpiexec.hydra", "orterun", "prterun", "srun", "smpirun"})
BUILDERS = frozenset({"make", "mpicc", "smpicc"})
KINDS = ("launch", "engine", "build")
_started = dict.fromkeys(KINDS, 0)
_popen = subprocess.Popen.__init__


def kind_of(args: object) -> str | None:
    """What starting `args` (as Popen takes them) is: launch, engine, build or None."""
    first = args if isinstance(args, (str, bytes, os.PathLike)) else next(iter(args), "")  # type: ignore[call-overload]
    words = os.fsdecode(first).split()
    name = os.path.basename(words[0]) if words else ""
    if name in LAUNCHERS:
        return "launch"
    if name in BUILDERS:
        return "build"
    return "engine" if name.startswith("mpiscope-engine") else None


def _counted(self: subprocess.Popen, args: object, *rest: object, **kw: object) -> None:
    kind = kind_of(args)
    if kind:
        _started[kind] += 1
    _popen(self, args, *rest, **kw)  # type: ignore[arg-type]


subprocess.Popen.__init__ = _counted  # type: ignore[method-assign]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    before, start = dict(_started), time.monotonic()
    try:
        return (yield)
    finally:
        row = {"id": item.nodeid, "wall_s": round(time.monotonic() - start, 3), "load": os.getloadavg()[0],
               **{k: _started[k] - before[k] for k in KINDS}}
        with open(os.environ["MPISCOPE_SUITE_LOG"], "a") as log:
            log.write(json.dumps(row) + "\n")
