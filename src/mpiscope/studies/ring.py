"""`mpiscope study ring`: the performance-programming chapter's ring case study as one run:
five algorithms balanced and unbalanced, algorithm 5 across MPI_Testall frequencies, optionally
across tuning variables; then its tables and figures.

Each series is its own launch, so algorithm 1's deadlock ends only its own series: execute
relaunches past the hang, and after two hangs in a row records the larger sizes as not measured
(a library that deadlocks at N bytes deadlocks beyond N too)."""
from __future__ import annotations

import argparse
import itertools
from dataclasses import dataclass, field

from mpiscope.report.ring_figures import ALGORITHM_NAMES as ALGORITHMS

CHAPTER_NBLOCKS = [128, 256, 384, 512, 1024, 2048, 4096, 8192, 10240, 12288, 16384]
CHAPTER_TESTALL_SIZES = [64 << 10, 1 << 20]  # FIGURE 4-9's two message sizes, bytes
QUICK_NBLOCKS = [128, 1024, 16384]
TABLE_SIZES = [1 << 10, 8 << 10, 64 << 10, 1 << 20, 4_000_000]  # bytes; the nearest measured size is shown


@dataclass(frozen=True)
class Series:
    """One engine launch of the study and the factors (its records' tag) that tell it apart."""
    name: str
    benchmark: str
    sizes: tuple[int, ...]  # bytes
    engine_options: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    tag: tuple[tuple[str, object], ...] = ()


@dataclass
class RingStudyConfig:
    ranks: int = 4
    max_words: int = 500_000
    sizes_expr: str | None = None  # in words, the engine's grammar; default 0:max_words:*step
    step: float = 1.2  # the chapter's; --quick takes 2
    imbalance: tuple[int, int] = (1, 200)
    nblocks: list[int] = field(default_factory=lambda: list(CHAPTER_NBLOCKS))
    testall_sizes: list[int] = field(default_factory=lambda: list(CHAPTER_TESTALL_SIZES))
    env_levels: dict[str, list[str]] = field(default_factory=dict)  # --env NAME=v1,v2
    max_time: float = 0.1
    ci_target: float = 0.05
    # per-point warm-up: the algorithm itself pumps this much round the ring (the chapter pumps
    # 500 MB once; per point keeps every launch self-contained, and compute dominates anyway)
    warmup_bytes: str = "1M"

    def words(self) -> list[int]:
        from mpiscope.sizes import parse_sizes
        expr = self.sizes_expr or f"0:{self.max_words}:*{self.step:g}"
        return [b // 8 for b in parse_sizes(expr, "words")]

    def testall_bytes(self) -> list[int]:
        top = max(self.words()) * 8
        fits = [s for s in self.testall_sizes if s <= top]
        return fits or [top]

    def engine_options(self, ncompute: str) -> tuple[str, ...]:
        return ("--warmup", "1", "--warmup-bytes", self.warmup_bytes, "--ncompute", ncompute)


def env_combinations(levels: dict[str, list[str]]) -> list[tuple[tuple[str, str], ...]]:
    """Every combination of the tuning variables' levels (one empty one without any)."""
    names = sorted(levels)
    return [tuple(zip(names, combo)) for combo in itertools.product(*(levels[n] for n in names))]


def series(cfg: RingStudyConfig) -> list[Series]:
    sizes = tuple(w * 8 for w in cfg.words())
    a, b = cfg.imbalance
    out: list[Series] = []
    for env in env_combinations(cfg.env_levels):
        suffix = "".join(f" {k}={v}" for k, v in env)
        env_tag = tuple((f"env_{k}", v) for k, v in env)
        for load, ncompute in (("balanced", "0"), ("imbalanced", f"{a},{b}")):
            for k in ALGORITHMS:
                out.append(Series(f"alg{k} {load}{suffix}", f"ringcs{k}", sizes, cfg.engine_options(ncompute), env,
                                  (("algorithm", k), ("load", load), *env_tag)))
        for nblock in cfg.nblocks:
            out.append(Series(f"alg5 nblock={nblock}{suffix}", "ringcs5", tuple(cfg.testall_bytes()),
                              (*cfg.engine_options(f"{a},{b}"), "--nblock", str(nblock)), env,
                              (("algorithm", 5), ("load", "imbalanced"), ("nblock", nblock), *env_tag)))
    return out


def parse_env_levels(items: list[str]) -> dict[str, list[str]]:
    """--env NAME=v1,v2 (repeatable): the levels of each tuning variable."""
    from mpiscope.cli import parse_env
    return {k: [v for v in vals.split(",") if v] or [""] for k, vals in parse_env(items).items()}


def config_from_args(a: argparse.Namespace, cores: int) -> RingStudyConfig:
    from mpiscope.errors import UsageError
    cfg = RingStudyConfig(ranks=a.ranks or max(2, min(4, cores - cores % 2)))
    if a.quick:
        cfg.max_words, cfg.step, cfg.nblocks, cfg.max_time, cfg.warmup_bytes = 2048, 2.0, list(QUICK_NBLOCKS), 0.02, "256K"
    if a.max_words is not None:
        cfg.max_words = a.max_words
    if cfg.max_words < 1:
        raise UsageError(f"--max-words must be at least 1, got {cfg.max_words}")
    cfg.sizes_expr = a.sizes
    if a.imbalance is not None:
        try:
            parts = [int(x) for x in a.imbalance.split(",")]
        except ValueError:
            parts = []
        if len(parts) != 2 or min(parts) < 0:
            raise UsageError(f"--imbalance expects A,B (multiplications per element), e.g. 1,200; got '{a.imbalance}'")
        cfg.imbalance = (parts[0], parts[1])
    if a.nblocks is not None:
        try:
            cfg.nblocks = [int(x) for x in a.nblocks.split(",") if x.strip()]
        except ValueError:
            cfg.nblocks = []
        if not cfg.nblocks or min(cfg.nblocks) < 1:
            raise UsageError(f"--nblocks expects positive integers, e.g. 128,1024,16384; got '{a.nblocks}'")
    for name, value in (("--max-time", a.max_time), ("--ci-target", a.ci_target)):
        if value is not None and not value > 0:
            raise UsageError(f"{name} must be a positive number, got {value}")
    cfg.max_time = a.max_time or cfg.max_time
    cfg.ci_target = a.ci_target or cfg.ci_target
    cfg.env_levels = parse_env_levels(a.env)
    if cfg.ranks < 2 or cfg.ranks % 2:
        raise UsageError(f"the ring case study needs an even number of ranks (the chapter's driver): "
                         f"use -n {max(2, cfg.ranks + 1)}")
    return cfg


def cmd_ring(a: argparse.Namespace) -> int:
    from mpiscope import paths
    from mpiscope.cli import err, finish, out, parse_env, parse_launcher_args
    from mpiscope.execute import RunSpec, launch_into, register_parts
    from mpiscope.launch import local_cores
    from mpiscope.mpi import find
    from mpiscope.mpi.build import build_engine
    from mpiscope.plan import make_plan, registry
    from mpiscope.report import ring_figures
    from mpiscope.store import Run

    cfg = config_from_args(a, local_cores())
    base_env, extra = parse_env(a.base_env), parse_launcher_args(a.launcher_args)
    lib = find(a.mpi)
    engine = build_engine(lib.mpicc)
    reg = registry(engine)
    todo = series(cfg)
    specs = [RunSpec(lib, engine, make_plan([s.benchmark], ",".join(map(str, s.sizes)), cfg.ranks, reg,
                                            ci_target=cfg.ci_target, max_time=cfg.max_time, check=a.check,
                                            engine_options=list(s.engine_options)),
                     {**base_env, **dict(s.env)}, extra, factors={"study": "ring", **dict(s.tag)})
             for s in todo]
    run = Run.create(paths.runs_dir(a.runs_dir), {
        "mpi": lib.to_json(), "study": "ring", "factors": {"study": "ring"}, "env": base_env,
        "plan": {"ranks": cfg.ranks, "benchmarks": sorted({s.benchmark for s in todo})},
        "config": {**{k: v for k, v in vars(cfg).items()}, "words": cfg.words()},
        "series": [{"name": s.name, "benchmark": s.benchmark, "sizes": list(s.sizes), "env": dict(s.env),
                    "tag": dict(s.tag), "engine_options": list(s.engine_options)} for s in todo]})
    out.print(f"ring case study: {len(todo)} series on {cfg.ranks} ranks of {lib.name}, run {run.id}")
    worst = None
    tags = register_parts(run, [(spec, {"series": s.name, **dict(s.tag)}) for s, spec in zip(todo, specs)])
    for s, spec, tag in zip(todo, specs, tags):
        outcome = launch_into(run, spec, err, progress=not a.no_progress, tag=tag, new_part=False)
        if outcome.status == "interrupted":
            return finish(outcome, run.path)
        if outcome.status == "failed":
            err.print(f"series {s.name}: {outcome.error}; the study goes on", markup=False)
            worst = worst or outcome
    records = run.records().records
    print_tables(out, records, cfg)
    for path in ring_figures.write_all(run, run.path):
        out.print(f"figure: {path}")
    out.print(f"saved in {run.path}")
    if worst is not None:
        worst.error = f"some series failed ({worst.error})"
        return finish(worst, run.path)
    return 0


def print_tables(console, records: list[dict], cfg: RingStudyConfig) -> None:
    """The chapter's figures as numbers: bandwidth per series at a few sizes, the leading
    algorithm per load, algorithm 5 across nblock, and where each algorithm deadlocked."""
    from rich.table import Table

    from mpiscope.report import ring_figures as rf
    from mpiscope.sizes import human_size
    df = rf.points(records)
    dead = rf.deadlock_table(records)
    sweep = df[df["nblock"].isna()]
    near = rf.nearest_sizes(sorted(set(sweep["size"])), TABLE_SIZES)
    t = Table(title="bandwidth 16n/t in MB/s (includes computation)", title_justify="left")
    t.add_column("series")
    for target in near.values():
        t.add_column(human_size(int(target)), justify="right")
    dead_at = dict(zip(dead["series"], dead["deadlock"])) if not dead.empty else {}
    for name, part in sweep.groupby("series", sort=False):
        bw = dict(zip(part["size"], part["bw_MBps"]))
        cells = []
        for size in near.values():
            d = dead_at.get(name)
            cells.append(f"{bw[size]:.4g}" if size in bw else ("deadlock" if d is not None and size >= d else "-"))
        t.add_row(str(name), *cells)
    console.print(t)

    lead = rf.leaders(records)
    if not lead.empty:
        t = Table(title="leading algorithm (highest bandwidth)", title_justify="left", min_width=60)
        envs = rf.env_columns(rf.points(records))
        for col in ("load", *(e[4:] for e in envs), "sizes led (of measured)", "at the largest common size"):
            t.add_column(col)
        for key, part in lead.groupby(["load", *envs], sort=True):
            key = key if isinstance(key, tuple) else (key,)
            counts = part["algorithm"].value_counts()
            led = ", ".join(f"alg {k}: {n}" for k, n in counts.items())
            last = part.sort_values("size").iloc[-1]
            t.add_row(*map(str, key), led, f"alg {last['algorithm']} at {human_size(int(last['size']))} "
                      f"({last['bw_MBps']:.4g} MB/s)")
        console.print(t)

    testall = df[df["nblock"].notna()]
    if not testall.empty:
        t = Table(title="algorithm 5, imbalanced: MB/s by elements between MPI_Testall calls",
                  title_justify="left", min_width=60)
        t.add_column("nblock", justify="right")
        sizes = sorted(set(testall["size"]))
        for size in sizes:
            t.add_column(human_size(int(size)), justify="right")
        for nblock, part in testall.groupby("nblock", sort=True):
            bw = dict(zip(part["size"], part["bw_MBps"]))
            t.add_row(str(int(nblock)), *(f"{bw[s]:.4g}" if s in bw else "-" for s in sizes))
        console.print(t)

    t = Table(title="deadlocks (algorithm 1 relies on the library buffering MPI_Send)", title_justify="left",
              min_width=60)
    t.add_column("series")
    t.add_column("result")
    for _, row in dead.iterrows():
        t.add_row(str(row["series"]), row["result"])
    console.print(t)


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    p = sub.add_parser("ring", parents=[runs_dir],
                       help="the ring case study: five algorithms, load imbalance, MPI_Testall, deadlock")
    p.add_argument("--mpi", help="MPI library by name (default: the embedded MPICH)")
    p.add_argument("-n", "--ranks", type=int, help="even number of ranks (default: 4, the chapter's, or the cores)")
    p.add_argument("--max-words", type=int, help="largest message in 8-byte words (default 500000, the chapter's)")
    p.add_argument("--sizes", help="message sizes in words, engine grammar (default 0:MAX_WORDS:*1.2)")
    p.add_argument("--imbalance", help="ncompute A,B for the unbalanced series (default 1,200)")
    p.add_argument("--nblocks", help="algorithm 5's elements between MPI_Testall calls (default the chapter's "
                                     "128..16384)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=v1,v2",
                   help="sweep a tuning variable: every series runs once per level")
    p.add_argument("--base-env", action="append", default=[], metavar="K=V", help="fixed environment for the ranks")
    p.add_argument("--max-time", type=float, help="time cap per point, seconds (default 0.1; --quick 0.02)")
    p.add_argument("--ci-target", type=float, help="stop a point when the 95%% CI is within +-F (default 0.05)")
    p.add_argument("--quick", action="store_true", help="small sizes (up to 2048 words), 3 nblocks, short points")
    p.add_argument("--check", action="store_true", help="verify the ring's contents before timing each point")
    p.add_argument("--launcher-args", help="extra launcher arguments, one quoted string")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_ring)
