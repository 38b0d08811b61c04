"""Continuing an interrupted or failed run in place: what each part of its plan still lacks,
launched into the same run directory (`mpiscope run --resume RUN`)."""
from __future__ import annotations

from mpiscope.errors import UsageError
from mpiscope.execute import RunSpec, restrict
from mpiscope.mpi import find
from mpiscope.mpi.build import build_engine
from mpiscope.plan import Plan, units_of
from mpiscope.sizes import parse_sizes
from mpiscope.store import Run

DONE = ("point", "skip", "timeout")  # a time-out is a result too: resuming does not retry it


def remaining(run: Run) -> list[tuple[RunSpec, dict | None]]:
    """The launches (with their record tags) that finish every part of `run`'s plan."""
    meta = run.meta()
    if meta.get("status") == "running" and _alive(meta):
        raise UsageError(f"run {run.id} is still being measured (mpiscope pid {meta.get('pid')}): wait for it "
                         f"to finish or stop it, then resume")
    parts = meta.get("parts") or [{"plan": meta.get("plan")}]
    if not all(p.get("plan") and p["plan"].get("sizes_expr") for p in parts):
        raise UsageError(f"run {run.id} has no complete plan in run.json: it cannot be resumed; measure again")
    lib = find((meta.get("mpi") or {}).get("name"))
    engine = build_engine(lib.mpicc)
    records = [r for r in run.records().records if r.get("type") in DONE]
    todo: list[tuple[RunSpec, dict | None]] = []
    for part in parts:
        tag = part.get("tag") or {}
        done = {(r.get("benchmark"), r.get("size"), r.get("ranks")) for r in records
                if all(r.get(k) == v for k, v in tag.items())}
        plan = Plan(**part["plan"])
        plan.sizes = parse_sizes(plan.sizes_expr, units_of(plan.engine_options))
        base = RunSpec(lib, engine, plan, part.get("env", meta.get("env")) or {},
                       part.get("launcher_args", meta.get("launcher_args")) or [],
                       part.get("placement", meta.get("placement")) or {}, meta.get("factors") or {})
        groups: dict[tuple[int, ...], list[str]] = {}
        for bench in plan.benchmarks:
            if bench in plan.sizeless:
                if not any(b == bench and r == plan.ranks for b, _, r in done):
                    groups.setdefault((0,), []).append(bench)
                continue
            left = tuple(s for s in plan.sizes if (bench, s, plan.ranks) not in done)
            if left:
                groups.setdefault(left, []).append(bench)
        todo += [(restrict(base, benches, list(sizes)), tag or None) for sizes, benches in groups.items()]
    return todo


def _alive(meta: dict) -> bool:
    """Is the mpiscope that created the run still running (on this host)?"""
    import os
    import socket
    pid = meta.get("pid")
    if not isinstance(pid, int) or meta.get("host") != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
