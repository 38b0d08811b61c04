"""The Python API, for scripts and notebooks: load runs as typed objects with their tidy table,
measure and get the run back, fit the model, compare, predict, plot and report. The commands of
`mpiscope` are thin layers over these functions (docs/python.md). Errors raise
`mpiscope.util.errors.MpiscopeError` (a `UsageError` for bad input), never exit; nothing here prints
except the warnings the session and the models give on standard error."""
from __future__ import annotations

import io
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence, Union, overload

from mpiscope.util import paths
from mpiscope.store import runs as store
from mpiscope.plan.describe import Description
from mpiscope.results.policy import POLICY
from mpiscope.util.errors import MeasurementError, MpiscopeError, UsageError

if TYPE_CHECKING:
    import pandas as pd

    from mpiscope.results.compare import PointChange
    from mpiscope.analysis.hockney import HockneyFit
    from mpiscope.analysis.predict import Params, ParamsFor
    from mpiscope.records import Point, Record
    from mpiscope.report.model import ModelSummary
    from mpiscope.report.plots import Plot
    from mpiscope.report.table import SideBySide
    from mpiscope.execute.session import Measurement
    from mpiscope.store.runs import RunMeta

__all__ = ["Comparison", "Description", "Model", "Prediction", "RecordsWarning", "Run", "Runs", "compare",
           "describe_run", "fit", "import_runs", "list_runs", "load", "load_runs", "load_sweep", "measure",
           "plan_run", "plots", "predict", "side_by_side", "table", "tune", "write_plots", "write_report"]

PathLike = Union[str, "os.PathLike[str]"]
# What the functions accept as runs: a run, several, or what names them (an id, a unique prefix
# of one, 'latest', a run's path, a sweep directory, a directory of runs).
RunsLike = Union["store.Run", "Runs", PathLike, Sequence[Union["store.Run", PathLike]]]

PREDICT_RANKS = tuple(2 ** k for k in range(1, 11))   # 2, 4, ..., 1024 (as `mpiscope predict`)
PREDICT_SIZES = (8, 1024, 65536, 1 << 20)             # 8, 1K, 64K, 1M


class RecordsWarning(UserWarning):
    """A run holds lines or files that could not be read; they are left out of its table."""


# --- runs ---------------------------------------------------------------------------------

class Run(store.Run):
    """One stored run: its directory (`path`, `id`), what it is (`meta`), its records and its tidy
    table. It is a `store.Run`, so every function that takes a run takes it."""

    @property
    def status(self) -> str:
        """ok, failed, interrupted, running, or unreadable (run.json could not be read)."""
        return self.meta().status

    @property
    def info(self) -> RunMeta:
        """run.json as its typed object (`store.RunMeta`): the MPI, the parts, the launches."""
        return self.meta()

    @property
    def points(self) -> list[Point]:
        """The measured points (`records.Point`), one per point and launch, in the order measured."""
        return self.records().points

    @property
    def problems(self) -> list[str]:
        """The lines of records.jsonl that could not be read (left out of the table)."""
        return self.records().problems

    def table(self, per_launch: bool = False) -> pd.DataFrame:
        """The run's tidy table: a row per point with its launch-level estimate and interval (as
        `mpiscope export`); `per_launch`: a row per point and launch (`launch` column)."""
        return table(self, per_launch=per_launch)

    def summary(self) -> str:
        """The summary `mpiscope show` prints, as text."""
        from rich.console import Console

        from mpiscope.report.reporter import report
        from mpiscope.report.summary import Summary
        buf = io.StringIO()
        console = Console(file=buf, width=120, highlight=False, color_system=None, force_jupyter=False)
        report([self], Summary(console, console))
        return buf.getvalue()

    def __repr__(self) -> str:
        return f"Run({self.id!r}, status={self.status!r}, points={len(self.points)})"


class Runs(Sequence[Run]):
    """Several runs (of a sweep, or named together), in the order given; one tidy table."""

    def __init__(self, runs: Sequence[store.Run], sweep: Path | None = None):
        self.runs: list[Run] = [r if isinstance(r, Run) else Run(r.path, r.copies) for r in runs]
        self.sweep = sweep  # the sweep directory they came from, if any

    @overload
    def __getitem__(self, i: int) -> Run: ...
    @overload
    def __getitem__(self, i: slice) -> "Runs": ...

    def __getitem__(self, i: int | slice) -> "Run | Runs":
        return Runs(self.runs[i]) if isinstance(i, slice) else self.runs[i]

    def __len__(self) -> int:
        return len(self.runs)

    def __iter__(self) -> Iterator[Run]:
        return iter(self.runs)

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.runs]

    def table(self, per_launch: bool = False) -> pd.DataFrame:
        """One tidy table of every run (see `Run.table`); a sweep's launches of one configuration
        pool into one estimate per point."""
        return table(self, per_launch=per_launch)

    def __repr__(self) -> str:
        return f"Runs({self.ids!r})"


def _runs_dir(runs_dir: PathLike | None) -> Path:
    return paths.runs_dir(os.fspath(runs_dir) if runs_dir is not None else None)


def _warn(runs: Sequence[store.Run]) -> None:
    for run in runs:
        for p in run.records().problems:
            warnings.warn(f"run {run.id}: {p}", RecordsWarning, stacklevel=3)


def list_runs(runs_dir: PathLike | None = None) -> list[Run]:
    """Every run kept in `runs_dir` (default: $MPISCOPE_RUNS, else ./mpiscope-runs), oldest first."""
    return [Run(r.path) for r in store.list_runs(_runs_dir(runs_dir))]


def load(ref: PathLike = "latest", runs_dir: PathLike | None = None) -> Run:
    """One run by id, unique prefix of an id, 'latest', or its directory's path. UsageError when
    there is no such run (or a sweep directory: `load_sweep`)."""
    if store.is_sweep_dir(Path(ref)):
        raise UsageError(f"{ref} is a sweep directory: load its runs with load_sweep() or load_runs()")
    run = Run(store.resolve(os.fspath(ref), _runs_dir(runs_dir)).path)
    _warn([run])
    return run


def load_runs(*refs: PathLike, runs_dir: PathLike | None = None) -> Runs:
    """Several runs, as `load` names them; a sweep directory stands for its finished runs, a
    directory of run directories for all of them (each run once)."""
    if not refs:
        raise UsageError("name at least one run: an id, 'latest', a path or a sweep directory")
    runs = Runs(store.runs_of([os.fspath(r) for r in refs], _runs_dir(runs_dir)))
    _warn(runs.runs)
    return runs


def load_sweep(path: PathLike) -> Runs:
    """The finished runs of a sweep directory (`mpiscope sweep`), in the plan's order."""
    p = Path(path)
    if not store.is_sweep_dir(p):
        raise UsageError(f"{p} is not a sweep directory (no {store.SWEEP_FILE} in it)")
    found = [run for _, run in store.SweepDir(p).runs()]
    if not found:
        raise UsageError(f"the sweep in {p} has no finished run yet: run or resume it first")
    runs = Runs(found, sweep=p)
    _warn(runs.runs)
    return runs


def as_runs(runs: RunsLike, runs_dir: PathLike | None = None) -> list[Run]:
    """Runs from anything that names them (see RunsLike); UsageError for none."""
    if isinstance(runs, Runs):
        out = list(runs)
    elif isinstance(runs, store.Run):
        out = [runs if isinstance(runs, Run) else Run(runs.path, runs.copies)]
    elif isinstance(runs, (str, os.PathLike)):
        out = list(load_runs(runs, runs_dir=runs_dir))
    else:
        out = []
        for r in runs:
            out += as_runs(r, runs_dir)
    if not out:
        raise UsageError("no runs given")
    return store.distinct(out)


def table(runs: RunsLike, per_launch: bool = False, runs_dir: PathLike | None = None) -> pd.DataFrame:
    """The tidy table of runs (`results.table.tidy`): every factor of a run and launch a column,
    every figure of a point a column, the typed point in `point`. By default one row per point with
    its launch-level estimate (`time_median_us`) and 95 % interval (`time_ci_low_us`,
    `time_ci_high_us`) over its launches (`results.frame.launch_frame`); `per_launch`: one row per
    point and launch."""
    from mpiscope.report.reporter import Frame, report
    return report(as_runs(runs, runs_dir), Frame(per_launch))


def side_by_side(runs: RunsLike, benchmark: str | None = None, words: bool = False, per_launch: bool = False,
                 runs_dir: PathLike | None = None) -> list[SideBySide]:
    """The tables of `mpiscope table`, one per benchmark: sizes x configurations (labelled by the
    factors that differ between the runs) in `.us` (microseconds) and `.bw` (MB/s) DataFrames;
    each cell a point's launch-level estimate, or with `per_launch` a column per launch."""
    from mpiscope.report.reporter import report
    from mpiscope.report.table import SideBySideTables
    return report(as_runs(runs, runs_dir), SideBySideTables(benchmark, words, per_launch=per_launch))


# --- measuring ------------------------------------------------------------------------------

def plan_run(benchmarks: Sequence[str] | str | None = None, sizes: str | Sequence[int] | None = None,
             ranks: int | None = None, *, description: Description | None = None, **options: Any) -> Measurement:
    """What `measure` (and `mpiscope run`) measures, planned by the engine but not launched
    (`planner.measurement`). The options are the fields of `describe.Description`, as keywords
    (`mpi`, `launches`, `ci_target`, `env`, `hosts`, ...; docs/python.md lists them), over
    `description` when one is given. Builds the engine for `mpi` on first use. A rank count far
    beyond the cores and hosts is refused unless `oversubscribe`."""
    from mpiscope.execute.planner import measurement
    return measurement(describe_run(benchmarks, sizes, ranks, description=description, **options))


def describe_run(benchmarks: Sequence[str] | str | None = None, sizes: str | Sequence[int] | None = None,
                 ranks: int | None = None, *, description: Description | None = None,
                 **options: Any) -> Description:
    """The checked description of a run from keywords (errors name the keyword)."""
    from mpiscope.plan.describe import API, describe
    return describe({"benchmarks": benchmarks, "sizes": sizes, "ranks": ranks, **options}, API, description)


def measure(benchmarks: Sequence[str] | str | None = None, sizes: str | Sequence[int] | None = None,
            ranks: int | None = None, *, description: Description | None = None, runs_dir: PathLike | None = None,
            progress: bool = False, report: bool = False, **options: Any) -> Run:
    """Measure now, through the one measurement session `mpiscope run` uses, and return the run.
    The options are `plan_run`'s; `launches` None is the CLI's default ($MPISCOPE_LAUNCHES, else
    auto). `progress`: a progress bar on standard error; `report`: write report.html into the
    run's directory. A launch that fails raises MeasurementError (the run is kept, its path in
    `.run_path`); Ctrl-C raises KeyboardInterrupt."""
    from mpiscope.util.console import err
    from mpiscope.execute.session import Session, stderr_tail
    from mpiscope.execute.planner import measurement
    d = describe_run(benchmarks, sizes, ranks, description=description, **options)
    m = measurement(d)
    from mpiscope.execute.refine import measure_run
    run, outcome = measure_run(Session(_runs_dir(runs_dir), err, progress=progress), m, d)
    if report:
        from mpiscope.execute.session import write_report_quietly
        write_report_quietly([run], run.path / "report.html")
    if outcome.status == "interrupted":
        raise KeyboardInterrupt(f"interrupted; the points measured so far are kept in {run.path}")
    if outcome.error:
        tail = stderr_tail(run)
        raise MeasurementError(f"{outcome.error} (run kept in {run.path})"
                               + ("\nlauncher stderr (last lines):\n  " + "\n  ".join(tail) if tail else ""),
                               run.path)
    return Run(run.path)


def tune(collectives: Sequence[str] | str | None = None, *, description: Description | None = None,
         runs_dir: PathLike | None = None, progress: bool = False, **options: Any) -> dict:
    """`mpiscope tune` (docs/tune.md): race the collectives' algorithms, write the library's
    tuning file and prove it; returns tune.json's figures. The options are the description's
    fields a tune reads, as keywords (`rank_counts`, `sizes`, `rounds`, `algorithms`, `env`,
    `hosts`, ...), over `description` when one is given."""
    import time
    from mpiscope.util.console import err
    from mpiscope.execute.session import Session, target
    from mpiscope.execute.tune import TUNE, tune as race, tune_description
    d = tune_description({"benchmarks": collectives, **options}, base=description or TUNE)
    directory = _runs_dir(runs_dir) / f"tune-{time.strftime('%Y%m%d-%H%M%S')}"
    directory.mkdir(parents=True, exist_ok=True)
    result = race(directory, d, target(d.mpi), Session(_runs_dir(runs_dir), err, progress=progress))
    if result.get("error"):
        raise MpiscopeError(result["error"])
    return result


# --- models ---------------------------------------------------------------------------------

@dataclass
class Model:
    """The fitted models of runs (`report.model.ModelSummary` in `summary`): the Hockney regimes
    T(n) = Ts + n Tc and the protocol switches between them, LogGP, the hardware ceiling."""
    summary: ModelSummary
    runs: list[str] = field(default_factory=list)
    imported_from: list[str] = field(default_factory=list)  # the tools whose figures were fitted

    @property
    def imported_note(self) -> str:
        """A line saying the fit used another tool's figures (mpiscope import), else ''."""
        if not self.imported_from:
            return ""
        return (f"fitted to figures imported from {', '.join(self.imported_from)}: no interval per point, "
                f"so every size weighs by its time alone (docs/import.md)")

    @property
    def benchmark(self) -> str:
        return self.summary.benchmark

    @property
    def text(self) -> str:
        """As `mpiscope model` prints it."""
        from mpiscope.report.model import render
        return render(self.summary)

    def to_dict(self) -> dict[str, Any]:
        """As `mpiscope model --json` writes it."""
        from mpiscope.report.model import to_json
        return to_json(self.summary)

    def fits(self) -> list[tuple[tuple[int, int], HockneyFit, str | None]]:
        """Each regime's size range, its fit, and why it is no model (None: it is one)."""
        from mpiscope.report.hockney import issue_text
        s = self.summary
        if s.report is not None:
            return [(g.size_range, g.fit, issue_text(g.flag)) for g in s.report.regimes]
        return [(s.single.size_range, s.single, issue_text(s.single_flag))] if s.single is not None else []

    @property
    def valid(self) -> bool:
        """Every regime is a model: latency and per-byte cost identifiable, nothing impossible."""
        return bool(self.fits()) and not self.why

    @property
    def why(self) -> str:
        """Why the model is not valid ("" when it is): each regime's reason."""
        from mpiscope.report.hockney import why
        return "; ".join(f"{lo}..{hi} B: {flag or why(f)}" for (lo, hi), f, flag in self.fits() if flag or not f.valid)

    @property
    def switches(self) -> list[int]:
        """The sizes (bytes) where the protocol switches (a regime ends)."""
        return [sw.size for sw in self.summary.report.switches] if self.summary.report is not None else []

    @property
    def bursts(self) -> list[float]:
        """The sizes (bytes) of `switches` that are a rate limiter's burst, not a protocol switch
        (docs/models.md: a token bucket's samples split into fast and slow)."""
        return [sw.size for sw in self.summary.report.switches if sw.burst] if self.summary.report is not None else []

    @property
    def regimes(self) -> pd.DataFrame:
        """A row per regime: sizes, latency Ts (alpha_us), Tc (beta_us_per_byte), bandwidth (MB/s =
        10^6 B/s, and MiB/s), n_1/2; a figure that is not identifiable is NaN, `valid` and `why`
        say so and why, `flag` why the regime cannot price a transfer."""
        import pandas as pd
        from mpiscope.report.hockney import why
        nan = float("nan")
        return pd.DataFrame([{"size_from": lo, "size_to": hi,
                              "alpha_us": nan if f.latency_issue else f.alpha_us,
                              "beta_us_per_byte": nan if f.per_byte_issue else f.beta_us_per_byte,
                              "bandwidth_MBps": nan if f.per_byte_issue else f.bandwidth_MBps,
                              "bandwidth_MiBps": nan if f.per_byte_issue else f.bandwidth_MiBps,
                              "n_half_bytes": f.n_half if f.valid else nan, "points": f.n_points,
                              "valid": f.valid, "why": why(f), "flag": flag}
                             for (lo, hi), f, flag in self.fits()])

    def __str__(self) -> str:
        return self.text


def fit(runs: RunsLike, benchmark: str = "pingpong", clock_mhz: float | None = None,
        runs_dir: PathLike | None = None, variant: str | None = None) -> Model:
    """Every model the runs allow for `benchmark` (several runs are fitted together: repeats,
    refinement launches); `variant` picks one labelled variant (an RMA sync mode: "flush") where the
    benchmark has several. UsageError when the runs have no such points or they cannot be fitted."""
    from mpiscope.records import Point
    from mpiscope.report.model import model_summary
    rs = _once(as_runs(runs, runs_dir), "the model")
    _not_pooled(rs, "the model")
    if clock_mhz is not None and not clock_mhz > 0:
        raise UsageError(f"clock_mhz must be a positive clock in MHz, got {clock_mhz}")
    records = [rec for r in rs for rec in r.records()]
    names = ", ".join(r.id for r in rs)
    try:
        s = model_summary(records, benchmark, clock_mhz, variant)
    except ValueError as e:
        raise UsageError(f"cannot fit {benchmark} of {names}: {e}") from e
    if s.empty:
        have = sorted({r.benchmark for r in records if isinstance(r, Point)})
        raise UsageError(f"{names} has no {benchmark} points to model (it has: {', '.join(have) or 'no points'}); "
                         f"measure a sweep with `mpiscope run -b {benchmark} --sizes 1:1M`")
    tools = sorted({f"{r.imported.tool.upper()} {r.imported.tool_version} {r.imported.tool_benchmark} ({r.estimate})"
                    for r in records if isinstance(r, Point) and r.imported is not None and r.benchmark == benchmark})
    return Model(s, [r.id for r in rs], tools)


# --- comparing ------------------------------------------------------------------------------

@dataclass
class Comparison:
    """Two sides compared point by point (`results.compare.PointChange` in `changes`)."""
    baseline: list[Run]
    candidate: list[Run]
    changes: list[PointChange]

    @property
    def baseline_name(self) -> str:
        return _name(self.baseline)

    @property
    def candidate_name(self) -> str:
        return _name(self.candidate)

    @property
    def baseline_figure(self) -> str:
        """What the baseline's figures are when they are not mpiscope's medians: ' (OSU 7.4 mean)'."""
        return _figure(self.baseline)

    @property
    def candidate_figure(self) -> str:
        return _figure(self.candidate)

    @property
    def summary(self) -> str:
        """How many points got slower, faster, stayed the same."""
        from mpiscope.report.comparison import summary
        return summary(self.changes)

    @property
    def launches(self) -> str:
        """Which test judged the points, on how many launches."""
        from mpiscope.report.comparison import launches_line
        return launches_line(self.changes)

    def regressions(self, fail_on: float) -> list[PointChange]:
        """The points significantly slower by more than `fail_on` (0.05: 5 %)."""
        from mpiscope.results.compare import regressions
        return regressions(self.changes, fail_on)

    def table(self) -> pd.DataFrame:
        """A row per point, sorted by benchmark, variant, size: estimates (us), the change (0.1:
        10 % slower), the ratio with its 95 % interval, the test, adjusted p, effect size, verdict
        (slower, faster, same, inconclusive), launches a side that would decide an inconclusive
        one, and the drift from run to run in the test (and whether it decided the verdict)."""
        import pandas as pd
        return pd.DataFrame([{"benchmark": pc.label, "size": pc.size, "ranks": pc.ranks, "baseline_us": pc.base_us,
                              "candidate_us": pc.cand_us, "change": pc.change, "ratio": pc.cand_us / pc.base_us,
                              "ratio_low": pc.ratio_low, "ratio_high": pc.ratio_high, "test": pc.test,
                              "p_adj": pc.p_adj, "effect": pc.effect, "verdict": pc.verdict,
                              "launches_needed": pc.launches_needed, "baseline_launches": pc.base_launches,
                              "candidate_launches": pc.cand_launches,
                              "drift": pc.drift.described if pc.drift is not None else "",
                              "drift_decided": pc.drift_decided} for pc in self.changes])

    def __str__(self) -> str:
        return f"{self.candidate_name} against baseline {self.baseline_name}: {self.summary}"


def _name(runs: Sequence[store.Run]) -> str:
    return runs[0].id if len(runs) == 1 else f"{len(runs)} runs ({runs[0].id}, ...)"


def _figure(runs: Sequence[store.Run]) -> str:
    tools = sorted({f"{p.imported.tool.upper()} {p.imported.tool_version} {p.estimate}"
                    for run in runs for p in run.records().points if p.imported is not None})
    return f" ({', '.join(tools)})" if tools else ""


def compare_side(ref: RunsLike, runs_dir: PathLike | None = None) -> list[Run]:
    """One side of a comparison: a run, runs of one configuration (a list, or one string
    RUN1,RUN2,...), or a sweep directory of one configuration; every launch is one observation."""
    if not isinstance(ref, (str, os.PathLike)):
        return as_runs(ref, runs_dir)
    p = Path(ref)
    if store.is_sweep_dir(p):
        sd = store.SweepDir(p)
        if len(sd.plan().configurations) != 1:
            raise UsageError(f"{ref} is a sweep of {len(sd.plan().configurations)} configurations: compare "
                             f"single runs, or runs of one configuration as RUN1,RUN2,...")
        runs = [Run(run.path) for _, run in sd.runs()]
        if not runs:
            raise UsageError(f"the sweep in {ref} has no finished run: run or resume it first")
        return store.distinct(runs)
    runs = [Run(store.resolve(r, _runs_dir(runs_dir)).path) for r in os.fspath(ref).split(",") if r.strip()]
    if not runs:
        raise UsageError(f"'{os.fspath(ref)}' names no run: give a run id, 'latest', a run's path, or RUN1,RUN2,...")
    return _once(runs, f"'{os.fspath(ref)}'")


def _once(runs: list[Run], where: str) -> list[Run]:
    """`runs`, refused when one is named twice: its launches would count as twice as many; a copy
    of one (`cp -r`) is counted once and named in the warnings (store.distinct)."""
    seen: set[Path] = set()
    for run in runs:
        if run.path.resolve() in seen:
            raise UsageError(f"{where} names run {run.id} twice: each run counts once, name it once")
        seen.add(run.path.resolve())
    return store.distinct(runs)


def _apart(baseline: list[Run], candidate: list[Run]) -> None:
    """A run on both sides, under two names (a copy): UsageError, a run is not compared with itself."""
    ids = {run.identity(): run for run in baseline}
    for run in candidate:
        if run.identity() in ids:
            raise UsageError(f"the candidate's run {run.id} is a copy of the baseline's run {ids[run.identity()].id} "
                             f"(the same id and start in run.json): compare two different runs")


def _not_pooled(runs: list[Run], where: str) -> None:
    """Imported runs (one tool's mean per size) and measured runs (launches of medians) are not one
    sample: refused before they are combined."""
    imported = [r.id for r in runs if "imported" in r.meta().extra]
    if imported and len(imported) < len(runs):
        measured = [r.id for r in runs if r.id not in imported]
        raise UsageError(f"{where} mixes imported run(s) {', '.join(imported)} (a tool's mean per size) with "
                         f"measured run(s) {', '.join(measured)} (launches of medians), which cannot be pooled: "
                         f"give them separately")


def compare(baseline: RunsLike, candidate: RunsLike, alpha: float = POLICY.alpha, min_change: float = POLICY.margin,
            benchmark: str | None = None, runs_dir: PathLike | None = None, history: str = "auto") -> Comparison:
    """`baseline` against `candidate` (each a side as `compare_side` reads it), point by point, at
    the launch level when the sides hold several launches: slower / faster (significant after
    Benjamini-Hochberg adjustment at `alpha`, and beyond the margin `min_change`), same (the 95 %
    interval of the ratio inside +-`min_change`) or inconclusive. With one run a side, the drift
    from run to run joins the test: `history` "auto" (the drift either run keeps, the one learnt
    from more runs), "none" (no earlier run: the stated prior), or runs (ids, comma-separated) to
    learn it from; the prior where none is learnt. UsageError when the sides have no point in
    common."""
    from mpiscope.results.sides import compare_sides
    if not 0 < alpha < 1:
        raise UsageError(f"alpha must be between 0 and 1, got {alpha}")
    if not min_change >= 0:
        raise UsageError(f"min_change must be a fraction of 0 or more (0.05: 5 %), got {min_change}")
    b_runs, c_runs = compare_side(baseline, runs_dir), compare_side(candidate, runs_dir)
    _once(b_runs + c_runs, "the comparison (baseline and candidate together)")
    _not_pooled(b_runs, "the baseline")
    _not_pooled(c_runs, "the candidate")
    _apart(b_runs, c_runs)
    from mpiscope.results.history import one_platform
    one_platform(b_runs, "baseline"), one_platform(c_runs, "candidate")
    # the launch is the unit: every launch of every run on a side is one observation of a point
    changes = compare_sides(b_runs, c_runs, alpha, min_change, history, lambda ref: compare_side(ref, runs_dir))
    if benchmark:
        changes = [pc for pc in changes if pc.benchmark == benchmark]
    if not changes:
        raise UsageError(f"{_name(b_runs)} and {_name(c_runs)} have no benchmark and size in common"
                         + (f" for '{benchmark}'" if benchmark else "")
                         + ": compare runs of the same benchmarks and sizes")
    return Comparison(b_runs, c_runs, changes)


# --- predicting -----------------------------------------------------------------------------

# How the API names predict's inputs in its messages; the CLI passes its flags instead.
PREDICT_NAMES = {"alpha": "alpha", "beta": "beta", "gamma": "gamma", "given": "alpha= and beta= (us, us per byte)",
                 "source": "a source run of `measure(\"pingpong\")`"}


def prediction_parameters(records: Sequence[Record], alpha: float | None = None, beta: float | None = None,
                          gamma: float | None = None, where: str = "the runs",
                          names: Mapping[str, str] = PREDICT_NAMES) -> tuple[Params | ParamsFor, str]:
    """alpha, beta (given, or each size's pingpong regime fitted from `records`) and gamma (given,
    or the slope of the records' reduce_local sweep, else 0); and a line saying where they came
    from. Regimes that are no model are skipped with a warning. Messages name the inputs as
    `names` does (the API's keywords by default; the CLI gives its flags)."""
    from mpiscope.analysis.predict import Params, gamma_from_records, regime_params
    from mpiscope.report.model import model_summary
    gsrc = "given"
    if gamma is None:
        gamma = gamma_from_records(records)
        gsrc = "reduce_local sweep of the run" if gamma is not None else "none measured: 0"
        gamma = gamma or 0.0
    if alpha is not None and beta is not None:
        if alpha < 0 or beta < 0 or gamma < 0:
            raise UsageError(f"{names['alpha']}, {names['beta']} and {names['gamma']} must not be negative")
        return Params(alpha, beta, gamma), \
            f"alpha {alpha:g} us, beta {beta:g} us/byte (given), gamma {gamma:g} us/byte ({gsrc})"
    fits = Model(model_summary(records)).fits()
    if not fits:
        raise UsageError(f"{where} has no pingpong sweep to take alpha and beta from: give "
                         f"{names['given']}, or {names['source']}")
    usable = usable_fits(fits, where, names)
    desc = "; ".join(f"{lo}..{hi} B: alpha {f.alpha_us:.3g} us, beta {f.beta_us_per_byte:.3g} us/byte"
                     for (lo, hi), f in usable)
    tools = sorted({f"{r.imported.tool.upper()} {r.imported.tool_version} {r.estimate}s" for r in records
                    if getattr(r, "imported", None) is not None and getattr(r, "benchmark", "") == "pingpong"})
    imported = f" fitted to imported {', '.join(tools)}" if tools else ""  # mpiscope import
    return regime_params(usable, gamma), \
        f"pingpong regimes{imported} ({desc}); gamma {gamma:.3g} us/byte ({gsrc}); each n uses its regime"


def usable_fits(fits: Sequence[tuple[tuple[int, int], HockneyFit, str | None]],
                where: str, names: Mapping[str, str] = PREDICT_NAMES) -> list[tuple[tuple[int, int], HockneyFit]]:
    """The regimes that are models: a flagged one (a negative latency, ...) prices nothing and is
    skipped with a warning; none left is a usage error."""
    from mpiscope.util.console import warn
    ok = [(r, f) for r, f, flag in fits if not flag]
    for (lo, hi), _, flag in fits:
        if flag:
            warn(f"{where}: regime {lo}..{hi} B is not a model ({flag}): not used; its sizes are "
                 f"priced with the regime below it")
    if not ok:
        raise UsageError(f"{where} has no pingpong regime that is a model "
                         f"({'; '.join(flag for *_, flag in fits)}): measure more sizes, or give "
                         f"{names['given']}")
    return ok


@dataclass
class Prediction:
    """Predicted collective times (us) per algorithm, rank count p and size n (bytes)."""
    tables: dict[str, pd.DataFrame]   # collective -> a row per (p, n): every algorithm, `best`, `mpich_default`
    parameters: str                   # where alpha, beta and gamma came from

    @property
    def table(self) -> pd.DataFrame:
        """Every collective's rows in one table."""
        import pandas as pd
        return pd.concat(list(self.tables.values()), ignore_index=True)

    def winners(self, collective: str) -> str:
        """A grid of the fastest algorithm per n (rows) and p (columns), as `mpiscope predict` prints it."""
        from mpiscope.report.predictions import format_winners
        if collective not in self.tables:
            raise UsageError(f"no prediction for '{collective}': have {', '.join(self.tables)}")
        return format_winners(self.tables[collective])


def predict(source: RunsLike | None = None, collectives: Sequence[str] | None = None,
            ranks: Sequence[int] | str = PREDICT_RANKS, sizes: Sequence[int] | str = PREDICT_SIZES, *,
            alpha: float | None = None, beta: float | None = None, gamma: float | None = None,
            runs_dir: PathLike | None = None) -> Prediction:
    """Collective algorithm times (Thakur, Rabenseifner & Gropp) at any rank count and size, from
    alpha and beta given, or fitted from `source`'s pingpong regimes (gamma from its reduce_local
    sweep); `sizes` in bytes, or a size expression the engine expands."""
    from mpiscope.analysis.predict import ALGORITHMS, prediction_table
    colls = list(collectives) if collectives is not None else [c for c in ALGORITHMS if c != "barrier"]
    for c in colls:
        if c not in ALGORITHMS:
            raise UsageError(f"unknown collective '{c}': known are {', '.join(ALGORITHMS)}")
    if (alpha is None) != (beta is None):
        raise UsageError("give both alpha (us) and beta (us per byte), or a source run")
    if alpha is not None and source is not None:
        raise UsageError("give either a source run or alpha and beta, not both")
    if alpha is None and source is None:
        raise UsageError("predict needs alpha and beta: a source run (a pingpong sweep) or alpha= and beta=")
    from mpiscope.plan.engine import expand_counts, expand_sizes
    from mpiscope.execute.session import target
    if isinstance(ranks, str):  # the engine's size grammar, or the progression 2,4,...,1024
        try:
            ps = expand_counts(ranks, lambda expr: expand_sizes(target(None).engine, expr))
        except UsageError as e:
            raise UsageError(f"ranks {e}") from None
    else:
        ps = sorted({int(p) for p in ranks})
    if not ps or ps[0] < 1:
        raise UsageError("ranks: rank counts must be at least 1")
    if isinstance(sizes, str):
        ns = expand_sizes(target(None).engine, sizes)
    else:
        ns = [int(n) for n in sizes]
    rs = as_runs(source, runs_dir) if source is not None else []
    records = [rec for r in rs for rec in r.records()]
    params, desc = prediction_parameters(records, alpha, beta, gamma,
                                         f"run {', '.join(r.id for r in rs)}" if rs else "the runs")
    return Prediction({c: prediction_table(c, ps, ns, params) for c in colls}, desc)


# --- plots and reports ----------------------------------------------------------------------

def plots(runs: RunsLike, runs_dir: PathLike | None = None) -> list[Plot]:
    """Every figure that applies to the runs (`report.plots.Plot`: `name`, `title`, a matplotlib
    `figure`; a notebook shows a Plot as its image). UsageError when there is nothing to draw."""
    from mpiscope.report.plots import Plots
    from mpiscope.results.view import results_of
    results = results_of(as_runs(runs, runs_dir))
    if results.per_launch.empty:
        raise UsageError("the runs hold no measured points: nothing to plot")
    found = Plots().render(results)
    if not found:
        raise UsageError("no plot applies to these runs' benchmarks")
    return found


def write_plots(runs: RunsLike, output: PathLike | None = None, fmt: str = "png",
                runs_dir: PathLike | None = None) -> list[Path]:
    """Write every figure that applies (`plots`) as FMT files (png or svg) into `output` (default:
    the run's directory for one run, else the current directory); returns the files."""
    from mpiscope.report import plots as figures
    if fmt not in ("png", "svg"):
        raise UsageError(f"fmt must be png or svg, got '{fmt}'")
    rs = as_runs(runs, runs_dir)
    found = plots(rs)
    out_dir = Path(output) if output is not None else (rs[0].path if len(rs) == 1 else Path("."))
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"-o {out_dir} is a file, not a directory: give a directory for the plots")
    try:
        return figures.write_plots(found, out_dir, fmt)
    except OSError as e:
        import errno
        fix = ("free some space or give another directory with -o" if e.errno == errno.ENOSPC
               else "give a writable directory with -o")
        raise UsageError(f"cannot write the plots into {out_dir}: {e.strerror or e}: {fix}; no new plot file was "
                         f"kept") from e


def write_report(runs: RunsLike, output: PathLike | None = None, runs_dir: PathLike | None = None) -> Path:
    """One self-contained HTML report of the runs, written to `output` (a file, '-' for standard
    output, or a directory for its report.html; default: report.html in the run's directory for
    one run, else ./report.html). A FIFO or a device is written into, never replaced."""
    from mpiscope.report import html
    rs = as_runs(runs, runs_dir)
    target = Path(output) if output is not None else (rs[0].path / "report.html" if len(rs) == 1
                                                      else Path("report.html"))
    stdout = str(target) == "-"
    if not stdout and target.is_dir():
        target = target / "report.html"
    if not stdout and not target.parent.is_dir():
        raise UsageError(f"cannot write {target}: the directory {target.parent} does not exist")
    try:
        html.write_report(rs, target)
    except OSError as e:
        raise UsageError(f"cannot write {target}: {e.strerror or e}: free some space or give a writable "
                         f"place with -o (nothing was written)") from e
    return target

# --- importing other tools' output ------------------------------------------------------------

def import_runs(files: Sequence[PathLike] | PathLike, fmt: str | None = None, mpi_label: str | None = None,
                ranks: int | None = None, runs_dir: PathLike | None = None) -> Run:
    """Store OSU Micro-Benchmarks 7.x or Intel MPI Benchmarks 2021 text output as one run, as
    `mpiscope import` does (docs/import.md), and return it. `fmt` 'osu' or 'imb' (None: detected
    per file); `mpi_label` the library the files were measured with (they do not say); `ranks`
    the job's size (OSU collectives do not print it). Nothing is stored unless every file reads:
    a file that is no such output, or is damaged, raises ImportFailed (a UsageError) naming the
    file and line."""
    from mpiscope.importers import import_files
    paths = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    return Run(import_files(paths, fmt, mpi_label, ranks, _runs_dir(runs_dir)))

