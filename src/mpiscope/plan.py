"""What to run: benchmarks, sizes, ranks and options, checked, then turned into engine argv."""
from __future__ import annotations

import json
import subprocess
from dataclasses import asdict, dataclass, field
from difflib import get_close_matches
from pathlib import Path

from mpiscope.errors import MpiscopeError, UsageError
from mpiscope.sizes import parse_sizes

DEFAULT_BENCHMARKS = ["pingpong", "bw"]
DEFAULT_SIZES = "1:4M"
# The default run's second part, on every local core (nccl-tests' core set plus barrier).
DEFAULT_COLLECTIVES = ["barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall"]
# Benchmarks in which only ranks 0 and 1 talk: extra ranks would only steal cores.
PAIR_ONLY = {"pingpong", "pingping", "bw", "bibw"}
DEFAULT_COLLECTIVE_SIZES = "4:1M"  # 4 B: one float, the smallest reduction
STARTUP_S = 5.0  # launcher start-up and engine set-up, a generous guess


@dataclass
class Plan:
    benchmarks: list[str]
    sizes_expr: str
    ranks: int
    ci_target: float | None = None
    max_time: float | None = None
    reps: int | None = None
    time_budget: float | None = None
    check: bool = False
    raw: bool = False
    # Engine options the plan does not model itself (--ncompute, --npmin, --datatype ...),
    # passed through before the benchmark names; the engine validates them.
    engine_options: list[str] = field(default_factory=list)
    sizeless: list[str] = field(default_factory=list)  # measured once, at size 0 (barrier, cacheline)
    sizes: list[int] = field(default_factory=list)

    def order(self) -> list[tuple[str, int]]:
        """(benchmark, size) in the engine's measuring order, as its records will name them."""
        return [(b, s) for b in self.benchmarks for s in ([0] if b in self.sizeless else self.sizes)]

    @property
    def points(self) -> int:
        return len(self.order())

    @property
    def point_cap_s(self) -> float:
        """The engine's per-point time cap this plan asks for (its default is 1 s)."""
        if self.max_time is not None:
            return self.max_time
        if self.time_budget is not None:
            return max(0.01, self.time_budget / max(1, self.points))
        return 1.0

    def upper_bound_s(self) -> float:
        """Sampling time if every point hits its cap; warm-up is extra, hence the wall limit's slack."""
        return self.points * self.point_cap_s

    def wall_limit_s(self) -> float:
        """Python's own limit per launch, above the engine's watchdog, for hangs it cannot see."""
        return 3 * self.upper_bound_s() + 60 + 2 * self.points

    def engine_args(self) -> list[str]:
        args = ["--sizes", self.sizes_expr]
        if self.ci_target is not None:
            args += ["--ci-target", repr(self.ci_target)]
        if self.max_time is not None or self.time_budget is not None:
            args += ["--max-time", f"{self.point_cap_s:g}"]
        if self.reps is not None:
            args += ["--reps", str(self.reps)]
        if self.check:
            args.append("--check")
        if self.raw:
            args.append("--raw")
        return args + self.engine_options + self.benchmarks

    def to_json(self) -> dict:
        d = asdict(self)
        d.pop("sizes")
        return d


def order_options(order: str | None) -> list[str]:
    """The engine's --order for `order`: block, cyclic, or launch ranks in their new order (0,2,1,3)."""
    if order is None:
        return []
    items = order.split(",")
    if order in ("block", "cyclic") or (all(i.strip().isdigit() for i in items)
                                        and len({int(i) for i in items}) == len(items)):
        return ["--order", order.replace(" ", "")]
    raise UsageError(f"--order {order}: use block, cyclic, or every rank once in its new order, e.g. 0,2,1,3")


def default_ranks(benchmarks: list[str], cores: int) -> int:
    """Two ranks for pair benchmarks (more would only steal cores), else every core, at least 2."""
    return 2 if set(benchmarks) <= PAIR_ONLY else max(2, cores)


def units_of(engine_options: list[str]) -> str:
    """The --units among engine options passed through (bytes unless it says words)."""
    for i, a in enumerate(engine_options):
        if a == "--units" and i + 1 < len(engine_options):
            return engine_options[i + 1]
        if a.startswith("--units="):
            return a.split("=", 1)[1]
    return "bytes"


def registry(engine: Path) -> list[dict]:
    """The engine's benchmark registry (`--list --json`), the one source of benchmark names."""
    try:
        r = subprocess.run([str(engine), "--list", "--json"], capture_output=True, text=True, timeout=60)
        return json.loads(r.stdout)
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
        raise MpiscopeError(f"{engine} --list --json did not answer with JSON ({e}): rebuild the engine") from e


def make_plan(benchmarks: list[str], sizes_expr: str, ranks: int, reg: list[dict], **options) -> Plan:
    """A checked plan: every name known, every size valid, enough ranks for every benchmark."""
    for name, value in (("--ci-target", options.get("ci_target")), ("--max-time", options.get("max_time")),
                        ("--time-budget", options.get("time_budget"))):
        if value is not None and not value > 0:
            raise UsageError(f"{name} must be a positive number, got {value}")
    if options.get("reps") is not None and options["reps"] < 1:
        raise UsageError(f"--reps must be at least 1, got {options['reps']}")
    if ranks < 1:
        raise UsageError(f"-n/--ranks must be at least 1, got {ranks}")
    if not benchmarks:
        raise UsageError("no benchmark given: name one or more with -b, e.g. -b pingpong,bw")
    known = {b["name"]: b for b in reg}
    for name in benchmarks:
        if name not in known:
            close = get_close_matches(name, list(known), n=2)
            hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
            raise UsageError(f"unknown benchmark '{name}': {hint}`mpiscope bench list` shows all of them")
        b = known[name]
        if ranks < b.get("min_ranks", 1):
            raise UsageError(f"{name} needs at least {b['min_ranks']} ranks: use -n {b['min_ranks']} or more")
        if b.get("even_ranks") and ranks % 2:
            raise UsageError(f"{name} needs an even number of ranks: use -n {ranks + 1}")
    plan = Plan(benchmarks=list(dict.fromkeys(benchmarks)), sizes_expr=sizes_expr, ranks=ranks,
                sizeless=[b for b in benchmarks if known[b].get("sizeless")], **options)
    plan.sizes = parse_sizes(sizes_expr, units_of(plan.engine_options))
    return plan
