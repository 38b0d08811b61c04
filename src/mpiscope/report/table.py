"""Side-by-side tables: rows are message sizes, columns are
configurations labelled by the factors that differ, cells MB/s with the latency (us) beside it
for small messages. Built from the launch-level frame (results.frame: each cell a point's
estimate over its launches) or from the tidy table's per-launch rows (results.table, a column
per launch); terminal, Markdown, CSV."""
from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from rich.table import Table

from mpiscope.analysis.cache import copy_rate_flags
from mpiscope.report.copyrate import MARK, MARK_NOTE
from mpiscope.util.errors import UsageError
from mpiscope.report.numbers import cell
from mpiscope.results.table import tidy, unmeasured
from mpiscope.results.view import Results, results_of
from mpiscope.report.numbers import LATENCY_UPTO
from mpiscope.util.units import human_size
from mpiscope.store.runs import RunMeta, SweepDir, runs_of

# What tells plain runs apart when they carry no sweep factors, in label order.
FALLBACK_LABELS = ("mpi_name", "mpi_version", "world_size", "hosts", "launcher")
# Engine options that follow from the machine's state or the plan, not from a choice.
MACHINE_OPTIONS = ("opt_sizes", "opt_benchmarks", "opt_max_memory_bytes", "opt_timeout_s", "opt_timeout_extends")


def sweep_frame(sd: SweepDir) -> pd.DataFrame:
    """The tidy table of every finished run of a sweep."""
    runs = [run for _, run in sd.runs()]
    if not runs:
        raise UsageError(f"the sweep in {sd.path} has no finished run yet: run or resume it first")
    return tidy(runs)


def measured(results: Results) -> pd.DataFrame:
    """The results' per-launch table; a UsageError when they hold no measured point."""
    if results.per_launch.empty or "benchmark" not in results.per_launch:
        raise UsageError("these runs hold no measured point: check them with `mpiscope show RUN`")
    return results.per_launch


def load_frame(refs: list[str], runs_dir: Path, runs: list | None = None) -> pd.DataFrame:
    """Runs (ids, prefixes, paths) and sweep directories, as one tidy table; `runs` when they are
    at hand already (their records read once)."""
    return measured(results_of(runs if runs is not None else runs_of(refs, runs_dir)))


def label_columns(df: pd.DataFrame) -> list[str]:
    """The columns whose values differ between runs: a sweep's factors, else library, ranks, env, options."""
    def differs(col: str) -> bool:
        per_run = df.groupby("run_id", sort=False)[col].first().map(repr)
        return per_run.nunique() > 1
    if "source" in df and differs("source"):  # imported runs beside measured ones (mpiscope import)
        return ["source"] + [c for c in ("world_size",) if c in df and differs(c)]
    factors = [c for c in df.columns if c.startswith("factor_")]
    if factors and df[factors].notna().any(axis=1).all():
        return [c for c in factors if differs(c)]  # launches of one configuration share a label
    cands = [c for c in FALLBACK_LABELS if c in df] + sorted(c for c in df if c.startswith("env_"))
    cands += sorted(c for c in df if c.startswith("opt_") and c not in MACHINE_OPTIONS)
    return [c for c in cands if differs(c)]


def with_config(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with a `config` column: the differing factors as `name=value` lines (launches of one
    configuration share it)."""
    df = df.copy()
    if "tool" in df and df["tool"].notna().any():
        df["source"] = df.apply(_source, axis=1)
    labels = label_columns(df)
    if labels:
        df["config"] = df[labels].apply(lambda r: "\n".join(f"{_short(c)}={_value(r[c])}" for c in labels), axis=1)
    elif "sweep_config" in df and df["sweep_config"].notna().all():
        df["config"] = "all runs"  # one configuration of a sweep, launched several times
    else:
        df["config"] = df["run_id"] if df["run_id"].nunique() > 1 else "all runs"
    return df


def _source(r: pd.Series) -> str:
    """Who made a row's figure: 'OSU 7.4, MPICH 5.0.2, mean' for an imported one (the tool, the
    MPI as labelled, the statistic), 'mpiscope, embedded 5.0.2, median' for a measured one."""
    est = r.get("estimate") if isinstance(r.get("estimate"), str) else "median"
    if isinstance(r.get("tool"), str):
        mpi = r.get("mpi_library_version")
        return ", ".join(filter(None, (f"{r['tool'].upper()} {r.get('tool_version') or ''}".strip(),
                                       mpi if isinstance(mpi, str) else "", est)))
    mpi = " ".join(str(r[c]) for c in ("mpi_name", "mpi_version") if isinstance(r.get(c), str) and r.get(c))
    return ", ".join(filter(None, ("mpiscope", mpi, est)))


def _short(col: str) -> str:
    for prefix in ("factor_", "opt_"):
        if col.startswith(prefix):
            return col[len(prefix):]
    return {"mpi_name": "mpi", "world_size": "ranks", "mpi_version": "version"}.get(col, col)


def _value(v) -> str:
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return "-"
    return str(v) if v != "" else "''"


@dataclass
class SideBySide:
    """One benchmark's table: size rows x configuration columns of (MB/s, us)."""
    benchmark: str
    words: bool
    columns: list[str]  # configuration labels, one line per differing factor
    sizes: list[int]  # bytes
    bw: pd.DataFrame  # sizes x columns, MB/s (median over launches)
    us: pd.DataFrame  # sizes x columns, microseconds
    latency_upto: int = LATENCY_UPTO
    oversubscribed: frozenset[str] = frozenset()  # configurations with more ranks than cores
    launches: tuple[int, int] | None = None  # fewest and most launches per point; None: per launch
    imported: tuple[str, ...] = ()  # columns of another tool's figures (mpiscope import)
    marks: dict[tuple[int, str], str] = field(default_factory=dict)  # (size, column) -> hung / skipped
    above_copy: pd.DataFrame | None = None  # sizes x columns: faster than the run's memcpy (analysis.cache)
    buffers: tuple[str, ...] = ()  # the streaming rows' buffer layouts (--buffers, --rma-buffers) per column

    def heading(self, col: str, sep: str = "\n") -> str:
        return col.replace("\n", sep) + (" *" if col in self.oversubscribed else "")

    @property
    def level(self) -> str:
        """What a cell is: a launch-level estimate over how many launches, or one launch's median."""
        tool = ("the tool's own figure (its mean unless the column says median), with no interval"
                if self.imported else "")
        if self.imported and len(self.imported) == len(self.columns):
            return f"imported: {tool}"
        if self.launches is None:
            text = "one launch's median per column"
        elif self.launches[1] <= 1:
            text = "one launch per point: its own median"
        else:
            lo, hi = self.launches
            text = f"launch-level estimates over {lo}{f'-{hi}' if hi != lo else ''} launches per point"
        return f"{text}; imported columns ({', '.join(c.replace(chr(10), ', ') for c in self.imported)}): {tool}" \
            if self.imported else text

    @property
    def note(self) -> str:
        notes = ["* more ranks than cores: ranks shared cores, so these timings are not trustworthy"
                 if self.oversubscribed else "", self.layout]
        if any(pd.isna(self.us.at[s, c]) and (s, c) not in self.marks for s in self.sizes for c in self.columns):
            notes.append("- not measured in that configuration")
        if self.marks:
            slowed = "slowed: stopped while it still progressed (a busy machine, not a deadlock); " \
                if any(m.startswith("slowed") for m in self.marks.values()) else ""
            notes.append("hung: a launch timed out at that size with no progress (a deadlock is a result); "
                         f"{slowed}skipped: the engine or mpiscope left the point out, `mpiscope show RUN` says why")
        if self.above_copy is not None and self.above_copy.any().any():
            notes.append(MARK_NOTE)
        return "\n".join(filter(None, notes))

    @property
    def layout(self) -> str:
        """Which buffer layout the figures used: 'buffers: single' or per column."""
        if not self.buffers:
            return ""
        if len(set(self.buffers)) == 1:
            return f"buffers: {self.buffers[0]}"
        return "buffers: " + "; ".join(f"{c.replace(chr(10), ', ')} {b}" for c, b in zip(self.columns, self.buffers))

    def size_label(self, size: int) -> str:
        if self.words:
            return str(size // 8) if size % 8 == 0 else f"{size / 8:g}"
        return str(size)

    @property
    def size_heading(self) -> str:
        return "size (8-byte words)" if self.words else "size (bytes)"

    def cell(self, size: int, col: str) -> str:
        bw, us = self.bw.at[size, col], self.us.at[size, col]
        mark = self.marks.get((size, col))
        if pd.isna(us):
            return mark or "-"
        text = "-" if pd.isna(bw) else cell(bw)
        if self.above_copy is not None and size in self.above_copy.index and bool(self.above_copy.at[size, col]):
            text += MARK
        text = f"{text} ({cell(us)})" if size <= self.latency_upto else text
        return f"{text} [{mark}]" if mark else text


def side_by_side(df: pd.DataFrame, benchmark: str | None = None, words: bool = False,
                 latency_upto: int = LATENCY_UPTO, per_launch: bool = False,
                 unmeasured: pd.DataFrame | None = None) -> list[SideBySide]:
    """One table per benchmark (or just `benchmark`) of the launch-level frame, or with
    `per_launch` of the tidy table's rows: a column per configuration and launch. `unmeasured`
    (results.table.unmeasured) marks the cells where a launch hung or a point was skipped."""
    if benchmark is not None:
        if benchmark not in set(df["benchmark"]):
            have = ", ".join(dict.fromkeys(df["benchmark"]))
            raise UsageError(f"no '{benchmark}' points in these runs: use --benchmark with one of {have}")
        df = df[df["benchmark"] == benchmark]
    df = with_config(df)
    if per_launch and "launch" in df and df["launch"].nunique() > 1:
        launch = "launch=" + df["launch"].astype(str)
        df["config"] = launch.where(df["config"] == "all runs", df["config"] + "\n" + launch)
    if "variant" in df:
        # a row's variants (RMA synchronisation modes, grid shapes) are columns side by side
        variant = df["variant"].map(lambda v: "" if v is None or (isinstance(v, float) and pd.isna(v)) else str(v))
        labelled = variant.where(df["config"] == "all runs", df["config"] + "\n" + variant)
        df["config"] = labelled.where(variant != "", df["config"])
    if "bw_median_MBps" not in df:
        df["bw_median_MBps"] = float("nan")
    df["above_copy"] = copy_rate_flags(df)
    if "estimate" in df:  # per launch, an imported point's figure is its tool's (e.g. its mean)
        for est in set(df["estimate"].dropna()) - {"median"}:
            rows = df["estimate"] == est
            for pre, unit in (("time", "us"), ("bw", "MBps")):
                if f"{pre}_{est}_{unit}" in df:
                    df.loc[rows, f"{pre}_median_{unit}"] = df.loc[rows, f"{pre}_{est}_{unit}"]
    order = list(dict.fromkeys(df["config"]))
    out = []
    for bench in dict.fromkeys(df["benchmark"]):
        part = df[df["benchmark"] == bench]
        # several runs of one configuration outside a sweep: the median of their estimates
        agg = part.groupby(["size", "config"]).agg(bw=("bw_median_MBps", "median"), us=("time_median_us", "median"),
                                                   above=("above_copy", "any"))
        cols = [c for c in order if c in set(part["config"])]
        bw = agg["bw"].unstack("config").reindex(columns=cols)
        us = agg["us"].unstack("config").reindex(columns=cols)
        above = agg["above"].unstack("config").reindex(columns=cols).fillna(False).astype(bool)
        layouts = part.groupby("config")["buffers"].agg(lambda v: "/".join(sorted(set(v.dropna())))) \
            if "buffers" in part else None
        buffers = tuple(layouts.get(c, "") or "-" for c in cols) if layouts is not None and layouts.any() else ()
        sizes = sorted(int(s) for s in bw.index)
        over = frozenset(part.loc[part["oversubscribed"] == True, "config"]) if "oversubscribed" in part else frozenset()  # noqa: E712
        launches = ((int(part["launches"].min()), int(part["launches"].max())) if "launches" in part
                    else None if per_launch else (1, 1))
        imported = tuple(c for c in cols if c in set(part.loc[part["tool"].notna(), "config"])) \
            if "tool" in part else ()
        marks = _marks(part, unmeasured, per_launch)
        extra = sorted({s for s, c in marks if c in cols} - set(sizes))
        if extra:  # sizes where nothing was measured at all: a row that says why
            sizes = sorted(sizes + extra)
            bw, us = bw.reindex(sizes), us.reindex(sizes)
        out.append(SideBySide(bench, words, cols, sizes, bw, us, latency_upto, over, launches, imported,
                              {k: v for k, v in marks.items() if k[1] in cols}, above, buffers))
    return out


def _marks(part: pd.DataFrame, unmeasured: pd.DataFrame | None, per_launch: bool) -> dict[tuple[int, str], str]:
    """(size, column) -> "hung" / "slowed" / "skipped", or "hung in N launch(es)" where other launches measured
    the point; the column of an unmeasured point is the column of its run (and launch, and variant)."""
    if unmeasured is None or unmeasured.empty:
        return {}
    by_launch = per_launch and "launch" in part

    def key(run_id: str, launch: int, variant: object) -> tuple:
        return run_id, launch if by_launch else 0, "" if variant is None or variant != variant else str(variant)

    column = {key(r.run_id, getattr(r, "launch", 0), getattr(r, "variant", None)): r.config
              for r in part.itertuples()}
    measured = set(zip(part["size"].astype(int), part["config"]))
    found: dict[tuple[int, str], list[str]] = {}
    for e in unmeasured[unmeasured["benchmark"] == part["benchmark"].iloc[0]].itertuples():
        config = column.get(key(e.run_id, e.launch, e.variant))
        if config is not None:
            found.setdefault((int(e.size), config), []).append(e.what)
    marks = {}
    for (size, config), whats in found.items():
        what = next(w for w in ("hung", "slowed", "skipped") if w in whats)
        n = whats.count(what)
        marks[(size, config)] = f"{what} in {n} launch{'es' if n > 1 else ''}" if (size, config) in measured else what
    return marks


def render_terminal(t: SideBySide) -> Table:
    table = Table(title=f"{t.benchmark}: MB/s (latency us up to {human_size(t.latency_upto)})",
                  title_justify="left", caption="\n".join(filter(None, (t.level, t.note))),
                  caption_justify="left")
    table.add_column(t.size_heading, justify="right")
    for col in t.columns:
        table.add_column(t.heading(col), justify="right")
    for size in t.sizes:
        table.add_row(t.size_label(size), *(t.cell(size, c) for c in t.columns))
    return table


def render_markdown(t: SideBySide) -> str:
    heads = [t.size_heading] + [t.heading(c, ", ") for c in t.columns]
    lines = [f"**{t.benchmark}**: MB/s (latency in us) per configuration, {t.level}", "",
             "| " + " | ".join(heads) + " |", "|" + "---:|" * len(heads)]
    for size in t.sizes:
        lines.append("| " + " | ".join([t.size_label(size), *(t.cell(size, c) for c in t.columns)]) + " |")
    if t.note:
        lines += ["", t.note]
    return "\n".join(lines) + "\n"


def render_csv(tables: list[SideBySide]) -> str:
    """Long-wide CSV: one row per benchmark and size, an MB/s and a us column per configuration."""
    frames = []
    for t in tables:
        f = pd.DataFrame({"benchmark": t.benchmark, "size_bytes": t.sizes})
        if t.words:
            f["size_words"] = [s / 8 for s in t.sizes]
        for col in t.columns:
            name = col.replace("\n", ", ")
            f[f"{name} MB/s"] = [t.bw.at[s, col] for s in t.sizes]
            f[f"{name} us"] = [t.us.at[s, col] for s in t.sizes]
        frames.append(f)
    buf = io.StringIO()
    pd.concat(frames, ignore_index=True).to_csv(buf, index=False)
    return buf.getvalue()


def sweep_status_table(sd: SweepDir) -> Table:
    """Which run each configuration produced, how it ended, and how many launches it made."""
    plan = sd.plan()
    last = {e.config: e for e in sd.entries() if e.event == "finished"}
    runs = {e.config: run for e, run in sd.runs()}
    table = Table(title=f"sweep {plan.name}", title_justify="left")
    for col in ("config", "factors", "status", "launches", "run"):
        table.add_column(col, overflow="fold")
    for c in plan.configurations:
        label = ", ".join(f"{n}={_value(c.factors.get(n))}" for n in plan.varying) or "-"
        e = last.get(c.id)
        run = runs.get(c.id)
        made = str(launches_made(run.meta())) if run is not None else ""
        table.add_row(c.id, label, (e.status or "?") if e else "not run", made, (e.run or "") if e else "")
    return table


def launches_made(meta: RunMeta) -> int:
    """The launches a run made: its parts carry their launch's number (one launch: no number)."""
    return len({p.tag["launch"] for p in meta.parts if "launch" in p.tag}) or (1 if meta.parts else 0)


@dataclass(frozen=True)
class SideBySideTables:
    """The side-by-side reporter (`mpiscope table`, the API's `side_by_side`): a table per
    benchmark of the results' launch-level frame, or with `per_launch` a column per launch."""
    benchmark: str | None = None
    words: bool = False
    latency_upto: int = LATENCY_UPTO
    per_launch: bool = False

    def render(self, results: Results) -> list[SideBySide]:
        measured(results)
        return side_by_side(results.table(self.per_launch), self.benchmark, self.words, self.latency_upto,
                            per_launch=self.per_launch, unmeasured=unmeasured(results.runs))
