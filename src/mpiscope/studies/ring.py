"""`mpiscope study ring`: the ring case study (five ways to pass blocks round a ring) as one run:
five algorithms balanced and unbalanced, algorithm 5 across MPI_Testall frequencies, optionally
across tuning variables; then its tables and figures.

Each series is its own launch, so algorithm 1's deadlock ends only its own series: execute
relaunches past the hang, and after two hangs in a row records the larger sizes as not measured
(a library that deadlocks at N bytes deadlocks beyond N too)."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from mpiscope.analysis.ring import ALGORITHM_NAMES as ALGORITHMS
from mpiscope.records import Record

if TYPE_CHECKING:
    import pandas as pd

RING_NBLOCKS = [128, 256, 384, 512, 1024, 2048, 4096, 8192, 10240, 12288, 16384]
TESTALL_SIZES = [64 << 10, 1 << 20]  # the MPI_Testall series' two message sizes, bytes
QUICK_NBLOCKS = [128, 1024, 16384]
TABLE_SIZES = [1 << 10, 8 << 10, 64 << 10, 1 << 20, 4_000_000]  # bytes; the nearest measured size is shown


@dataclass(frozen=True)
class Series:
    """One part of the study's run and the factors (its records' tag) that tell it apart."""
    name: str
    benchmark: str
    sizes: str                 # the engine's size expression
    units: str                 # of `sizes`: words for the size sweeps, bytes for MPI_Testall's sizes
    engine_options: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    tag: tuple[tuple[str, object], ...] = ()


@dataclass
class RingStudyConfig:
    ranks: int = 4
    max_words: int = 500_000
    sizes_expr: str | None = None  # in words, the engine's grammar; default 0:max_words:*step
    step: float = 1.2  # the study's growth factor; --quick takes 2
    imbalance: tuple[int, int] = (1, 200)
    nblocks: list[int] = field(default_factory=lambda: list(RING_NBLOCKS))
    testall_sizes: list[int] = field(default_factory=lambda: list(TESTALL_SIZES))
    env_levels: dict[str, list[str]] = field(default_factory=dict)  # --env NAME=v1,v2
    max_time: float = 0.1
    ci_target: float = 0.05
    # per-point warm-up: the algorithm itself pumps this much round the ring (per point rather
    # than once per run keeps every launch self-contained, and compute dominates anyway)
    warmup_bytes: str = "1M"

    def sizes_words(self) -> str:
        """The size sweep in 8-byte words, in the engine's grammar."""
        return self.sizes_expr or f"0:{self.max_words}:*{self.step:g}"

    def testall_bytes(self, top: int) -> list[int]:
        """The MPI_Testall series' sizes that the sweep reaches (its largest size, `top` bytes, otherwise)."""
        fits = [s for s in self.testall_sizes if s <= top]
        return fits or [top]

    def engine_options(self, ncompute: str) -> tuple[str, ...]:
        return ("--warmup", "1", "--warmup-bytes", self.warmup_bytes, "--ncompute", ncompute)


def env_combinations(levels: dict[str, list[str]]) -> list[tuple[tuple[str, str], ...]]:
    """Every combination of the tuning variables' levels (one empty one without any)."""
    names = sorted(levels)
    return [tuple(zip(names, combo)) for combo in itertools.product(*(levels[n] for n in names))]


def series(cfg: RingStudyConfig, top: int) -> list[Series]:
    """Every series of the study; `top`: the size sweep's largest size in bytes (the engine's plan)."""
    words = cfg.sizes_words()
    testall = ",".join(map(str, cfg.testall_bytes(top)))
    a, b = cfg.imbalance
    out: list[Series] = []
    for env in env_combinations(cfg.env_levels):
        suffix = "".join(f" {k}={v}" for k, v in env)
        env_tag = tuple((f"env_{k}", v) for k, v in env)
        for load, ncompute in (("balanced", "0"), ("imbalanced", f"{a},{b}")):
            for k in ALGORITHMS:
                out.append(Series(f"alg{k} {load}{suffix}", f"ringcs{k}", words, "words",
                                  cfg.engine_options(ncompute), env, (("algorithm", k), ("load", load), *env_tag)))
        for nblock in cfg.nblocks:
            out.append(Series(f"alg5 nblock={nblock}{suffix}", "ringcs5", testall, "bytes",
                              (*cfg.engine_options(f"{a},{b}"), "--nblock", str(nblock)), env,
                              (("algorithm", 5), ("load", "imbalanced"), ("nblock", nblock), *env_tag)))
    return out


def measurement(cfg: RingStudyConfig, d, target):
    """The study as one run (`planner.measurement` of the description `d` with the study's
    ranks and sampling): a part per series, each tagged with the series' factors; a failed series
    does not stop the next."""
    from dataclasses import replace

    from mpiscope.plan.engine import Plan, engine_plan
    from mpiscope.execute.planner import Group
    from mpiscope.execute.planner import measurement as plan
    sweep = engine_plan(target.engine, Plan(("ringcs1",), cfg.ranks, cfg.sizes_words(), "words"))
    todo = series(cfg, max(sweep.sizes_bytes))
    parts = [Group((s.benchmark,), s.sizes, s.units, engine_options=s.engine_options, env=dict(s.env),
                   tag={"series": s.name, **dict(s.tag)}) for s in todo]
    base_env = d.env
    config = {**vars(cfg), "words": [size // 8 for size in sweep.sizes_bytes]}
    extra = {"study": "ring", "env": base_env, "config": config,
             "series": [{"name": s.name, "benchmark": s.benchmark, "sizes": s.sizes, "units": s.units,
                         "env": dict(s.env), "tag": dict(s.tag), "engine_options": list(s.engine_options)}
                        for s in todo]}
    d = replace(d, ranks=cfg.ranks, max_time=cfg.max_time, ci_target=cfg.ci_target)
    return plan(d, parts, more_hosts=None, factors={"study": "ring"}, extra=extra, keep_going=True)


def show_results(cfg: RingStudyConfig):
    """What `mpiscope study ring` prints after measuring: its tables, then its figures."""
    def show(run, results) -> None:
        from mpiscope.util.console import out
        from mpiscope.report import ring_figures
        print_tables(out, results.frame, run.records())
        for path in ring_figures.write_all(results, run.path):
            out.print(f"figure: {path}")
    return show


def print_tables(console, df: "pd.DataFrame", records: Iterable[Record]) -> None:
    """The study's figures as numbers: bandwidth per series at a few sizes, the leading
    algorithm per load, algorithm 5 across nblock, and where each algorithm deadlocked.
    `df`: the run's tidy table; `records`: its typed records (for the time-outs)."""
    from mpiscope.analysis import ring
    from mpiscope.report.deadlocks import deadlock_table
    from mpiscope.util.console import make_table
    from mpiscope.util.units import human_size
    pts = ring.points(df)
    dead = deadlock_table(records)
    sweep = pts[~pts["nblock_series"]]
    lead = ring.leaders(df)
    # the measured sizes nearest the usual ones, and the sizes the leader table below quotes as
    # "at the largest common size": the tables of one study agree
    quoted = set(lead.groupby([c for c in lead.columns if c == "load" or c.startswith("env_")])["size"].max()) \
        if not lead.empty else set()
    shown = sorted(set(ring.nearest_sizes(sorted(set(sweep["size"])), TABLE_SIZES).values()) | quoted)
    t = make_table("bandwidth 16n/t in MB/s (includes computation)",
                   ["series", *(human_size(int(size)) for size in shown)], left=("series",))
    dead_at = dict(zip(dead["series"], dead["deadlock"])) if not dead.empty else {}
    for name, part in sweep.groupby("series", sort=False):
        bw, d = dict(zip(part["size"], part["bw_median_MBps"])), dead_at.get(name)
        t.add_row(str(name), *(f"{bw[size]:.4g}" if size in bw else "deadlock" if d is not None and size >= d
                               else "-" for size in shown))
    console.print(t)

    if not lead.empty:
        envs = ring.env_columns(pts)
        t = make_table("leading algorithm (highest bandwidth)",
                       ("load", *(e[4:] for e in envs), "sizes led (of measured)", "at the largest size measured"),
                       min_width=60)
        for key, part in lead.groupby(["load", *envs], sort=True):
            key = key if isinstance(key, tuple) else (key,)
            counts = part["algorithm"].value_counts()
            led = ", ".join(f"alg {k}: {n}" for k, n in counts.items())
            last = part.sort_values("size").iloc[-1]
            t.add_row(*map(str, key), led, f"alg {last['algorithm']} at {human_size(int(last['size']))} "
                      f"({last['bw_MBps']:.4g} MB/s)")
        console.print(t)

    testall = pts[pts["nblock_series"]]
    if not testall.empty:
        sizes = sorted(set(testall["size"]))
        envs = ring.env_columns(pts)  # one row per tuning level and nblock, each labelled
        t = make_table("algorithm 5, imbalanced: MB/s by elements between MPI_Testall calls",
                       [*(e[4:] for e in envs), "nblock", *(human_size(int(size)) for size in sizes)], left=(),
                       min_width=60)
        for key, part in testall.groupby([*envs, "nblock"], sort=True):
            key = key if isinstance(key, tuple) else (key,)
            bw = dict(zip(part["size"], part["bw_median_MBps"]))
            t.add_row(*map(str, key[:-1]), str(int(key[-1])), *(f"{bw[s]:.4g}" if s in bw else "-" for s in sizes))
        console.print(t)

    t = make_table("deadlocks (algorithm 1 relies on the library buffering MPI_Send)", ("series", "result"),
                   min_width=60)
    for _, row in dead.iterrows():
        t.add_row(str(row["series"]), row["result"])
    console.print(t)
