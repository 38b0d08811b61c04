"""Continuing an interrupted or failed run in place: what each part of its plan still lacks,
launched into the same run directory (`mpiscope run --resume RUN`)."""
from __future__ import annotations

from mpiscope.errors import UsageError
from mpiscope.execute import RunSpec, restrict
from mpiscope.mpi import find
from mpiscope.mpi.build import build_engine
from mpiscope.plan import Plan
from mpiscope.sizes import parse_sizes
from mpiscope.store import Run

DONE = ("point", "skip", "timeout")  # a time-out is a result too: resuming does not retry it
SIZELESS = {"barrier", "ibarrier"}     # measured once, whatever the sizes


def _units(engine_options: list[str]) -> str:
    for i, a in enumerate(engine_options):
        if a == "--units" and i + 1 < len(engine_options):
            return engine_options[i + 1]
        if a.startswith("--units="):
            return a.split("=", 1)[1]
    return "bytes"


def remaining(run: Run) -> list[tuple[RunSpec, dict | None]]:
    """The launches (with their record tags) that finish `run`'s plan."""
    meta = run.meta()
    if meta.get("status") == "running":
        raise UsageError(f"run {run.id} is still marked running: if its mpiscope was killed, wait for "
                         f"its processes to end; resume it then")
    parts = meta.get("parts") or [{"plan": meta.get("plan")}]
    if not parts[0].get("plan"):
        raise UsageError(f"run {run.id} has no plan in run.json: it cannot be resumed")
    lib = find((meta.get("mpi") or {}).get("name"))
    engine = build_engine(lib.mpicc)
    done = {(r.get("benchmark"), r.get("size"), r.get("ranks")) for r in run.records().records
            if r.get("type") in DONE}
    todo: list[tuple[RunSpec, dict | None]] = []
    for part in parts:
        plan = Plan(**part["plan"])
        plan.sizes = parse_sizes(plan.sizes_expr, _units(plan.engine_options))
        base = RunSpec(lib, engine, plan, meta.get("env") or {}, meta.get("launcher_args") or [],
                       meta.get("placement") or {}, meta.get("factors") or {})
        groups: dict[tuple[int, ...], list[str]] = {}
        for bench in plan.benchmarks:
            if any(b == bench and r == plan.ranks for b, _, r in done) and bench in SIZELESS:
                continue
            left = tuple(s for s in plan.sizes if (bench, s, plan.ranks) not in done)
            if left:
                groups.setdefault(left, []).append(bench)
        todo += [(restrict(base, benches, list(sizes)), part.get("tag")) for sizes, benches in groups.items()]
    return todo
