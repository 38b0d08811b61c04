"""The one tidy table of a set of runs: a row per measured point and launch (`launch`, from the
record's tag; 0 in runs of one launch), every factor of its run and launch a column (library,
ranks, hosts, options, tuning variables, sweep factors, study tags), every figure of the point a
column, and the typed point itself in `point` for the analysis. The launch-level frame built on
it (one row per point over its launches) is `results.frame.launch_frame`."""
from __future__ import annotations

from collections import deque
from dataclasses import fields
from functools import lru_cache
from operator import attrgetter
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from mpiscope.results.points import Drift, configuration_of, drifts_kept
from mpiscope.results.states import unmet_kept
from mpiscope.records.model import Context, Point, Skip, Stats, Timeout
from mpiscope.records.run import MetaView, RunView
from mpiscope.util import gcpause
from mpiscope.results.disturbance import disturbed

# Nested point objects whose fields become columns under these names; lists (samples,
# pairs, participants, a grid's rows) stay in records.jsonl.
_RENAME = {"time_us": "time_{}_us", "bw_MBps": "bw_{}_MBps", "busbw_MBps": "busbw_{}_MBps"}
STATS_FIELDS = tuple(f.name for f in fields(Stats))
# The columns of a point's statistics and rates, named once (not per point)
_TIME_COLUMNS = tuple("samples" if name == "n" else _RENAME["time_us"].format(name) for name in STATS_FIELDS)
_time_values = attrgetter(*STATS_FIELDS)  # a point's statistics read in one call, in the columns' order
# The point's own fields that lead its columns, in their order, read in one call
_HEAD = ("benchmark", "family", "size", "ranks", "variant", "order", "sample_from", "sync", "invalid",
         "ops_per_event", "bytes_per_op")
_head_values = attrgetter(*_HEAD)
_OPTIONAL = ("busbw_factor", "msg_rate", "window_us")  # columns only where the point has them
_optional_values = attrgetter(*_OPTIONAL)
_TAIL = ("converged", "stop_reason", "warmup", "elapsed_s", "estimate")  # after the clock sync's columns
_tail_values = attrgetter(*_TAIL)
_RATE_COLUMNS = tuple((key, *(_RENAME[key].format(x) for x in ("median", "max", "mean")))
                      for key in ("bw_MBps", "busbw_MBps"))
_PLAIN = frozenset({str, int, float, bool, type(None)})  # values that are never nested: a column each
_TYPED = {float: np.float64, int: np.int64, bool: np.bool_}  # columns of these alone are typed without inference
# Columns that hold objects, not figures: exports leave them out.
OBJECT_COLUMNS = ("point", "drift")


def column_id(run_id: str) -> str:
    """A run's id as the table's run_id column holds it: a directory name that is not UTF-8
    (surrogate escapes) cannot be a column of text, so it is shown with U+FFFD."""
    return run_id.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def run_columns(run: RunView, ctx: Context | None, meta: MetaView | None = None) -> dict[str, Any]:
    """What is the same for every point of one launch of a run (`meta`: its run.json, read once
    for a run of thousands of launches)."""
    meta = meta or run.meta()
    mpi = meta.mpi
    row: dict[str, Any] = {
        "run_id": column_id(run.id),
        "run_status": meta.status,
        # an imported run (mpiscope import) had no launcher of ours: say so rather than '?'
        "launcher": "imported" if "imported" in (meta.extra or {}) else Path((meta.launcher_command or ["?"])[0]).name,
        "mpi_name": getattr(mpi, "name", None),
        "mpi_vendor": getattr(mpi, "vendor", None),
        "mpi_version": getattr(mpi, "version", None),
        "mpi_library_version": ctx.mpi_library_version.splitlines()[0] if ctx and ctx.mpi_library_version else None,
        "engine_version": ctx.engine_version if ctx else None,
        # SMPI: the simulated platform (docs/simulation.md); None for a real run
        "simulated": (ctx.simulation.get("platform") or "a platform file") if ctx and ctx.simulation else None,
        "world_size": ctx.world_size if ctx else None,
        "hosts": len(ctx.hosts) or None if ctx else None,
        "cores_online": ctx.cores_online if ctx else None,
        "oversubscribed": ctx.oversubscribed if ctx else None,
        "start_time": ctx.start_time if ctx else None,
    }
    for k, v in (ctx.options if ctx else {}).items():
        if not isinstance(v, (list, dict)):
            row[f"opt_{k}"] = v
    for k, v in (ctx.env if ctx else {}).items():
        row[f"env_{k}"] = v
    for k, v in (meta.factors or {}).items():  # what a sweep or study varied, e.g. factor_algorithm
        row[f"factor_{k}"] = v
    if meta.sweep is not None:  # which configuration and launch of a sweep made the run
        row["sweep_config"] = meta.sweep.config
        row["sweep_launch"] = meta.sweep.launch
    unmet = unmet_kept(meta.extra or {})
    if unmet is not None:  # a state of the machine this run did not meet (results.states)
        row["unmet_machine_state"] = unmet.text()
    return row


def point_columns(p: Point) -> dict[str, Any]:
    """Every scalar of a point as a column, nested objects as parent_child (one level), so a new
    engine field reaches the table without code here."""
    # variant always: a tidy table has the same columns whatever the runs hold
    row: dict[str, Any] = dict(zip(_HEAD, _head_values(p)))
    row.update(zip(_TIME_COLUMNS, _time_values(p.time_us)))
    for key, median, most, mean in _RATE_COLUMNS:
        rate = getattr(p, key)
        if rate is not None:
            row[median] = rate.median
            row[most] = rate.max
            if rate.mean is not None:  # an imported tool's average rate
                row[mean] = rate.mean
    for key, value in zip(_OPTIONAL, _optional_values(p)):
        if value is not None:
            row[key] = value
    if p.clock_sync:
        _nested(row, "clock_sync", p.clock_sync)
    # estimate: which figure is the point's estimate, the median or a tool's mean
    row.update(zip(_TAIL, _tail_values(p)))
    if p.imported is not None:  # read from another tool's output (mpiscope import)
        row.update(tool=p.imported.tool, tool_version=p.imported.tool_version,
                   tool_benchmark=p.imported.tool_benchmark, source_file=p.imported.file,
                   source_line=p.imported.line)
    if p.check is not None:
        row.update(check_errors=p.check.errors, check_verified_bytes=p.check.verified_bytes)
    details = p.details
    if _PLAIN.issuperset(map(type, details.values())):  # most points: every detail a column as it is
        row.update(details)
    else:
        for key, value in details.items():
            if isinstance(value, dict):
                _nested(row, key, value)
            elif not isinstance(value, list):
                row[key] = value
    tag = p.tag
    row.update(tag if _PLAIN.issuperset(map(type, tag.values()))
               else {k: v for k, v in tag.items() if not isinstance(v, (list, dict))})
    launch = p.tag.get("launch", 0)
    row["launch"] = launch if isinstance(launch, int) else 0  # runs of one launch have no tag: launch 0
    row["placement"] = p.placement
    return row


def _nested(row: dict[str, Any], parent: str, values: Mapping[str, Any]) -> None:
    if _PLAIN.issuperset(map(type, values.values())):  # the usual clock sync: every value, columns named once
        row.update(zip(_nested_names(parent, tuple(values)), values.values()))
        return
    for sub, x in values.items():
        if not isinstance(x, (list, dict)):
            row[f"{parent}_{sub}"] = x


@lru_cache(maxsize=1024)
def _nested_names(parent: str, subs: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{parent}_{sub}" for sub in subs)


def tidy(runs: Iterable[RunView]) -> pd.DataFrame:
    """One row per point and launch of every run; each point takes the context of the launch it
    came from. `disturbed` is "" or what disturbed the point in that launch (results.disturbance)."""
    columns = _Columns()
    with gcpause.paused():
        _gather(runs, columns)
        return columns.frame()


def _gather(runs: Iterable[RunView], columns: "_Columns") -> None:
    for run in runs:
        ctx: Context | None = None
        meta = run.meta()
        base = run_columns(run, None, meta)
        drift = drifts_kept(meta.extra)
        batch = _Batch(columns)
        for rec in run.records():
            if isinstance(rec, Context):
                batch.flush()
                ctx = rec
                base = run_columns(run, ctx, meta)
            elif isinstance(rec, Point) and (drift or not batch.took(rec, base, ctx)):
                row = point_columns(rec)  # a fresh dict: the drift, cause and record set in it, not copied
                row.update(_drift_columns(drift.get((rec.key, configuration_of(rec))) if drift else None))
                row["disturbed"], row["point"] = disturbed(rec, ctx), rec
                columns.add(base, row)
        batch.flush()


class _Batch:
    """The points of one launch whose columns `point_columns` would name alike (`_shape`), each
    with its row, gathered a column at a time: a column's values read off every point in one
    pass in C (an attribute getter), not a dict per point. Each column's getter reads what
    `point_columns` writes into it last, so the rows are those of its dicts; points of other
    shapes (a clock sync, an import, a nested detail) take the dict path."""

    def __init__(self, columns: "_Columns") -> None:
        self.columns = columns
        self.base: Mapping[str, Any] | None = None
        self.ctx: Context | None = None
        self.open: dict[tuple, tuple[list[Point], list[int]]] = {}  # shape -> its points and their rows
        self.names: dict[tuple, tuple[str, ...]] = {}  # shape -> its columns

    def took(self, p: Point, base: Mapping[str, Any], ctx: Context | None) -> bool:
        """Whether `p` is of a shape this takes; then its row is kept for it."""
        shape = _shape(p)
        if shape is None:
            return False
        if base is not self.base:
            self.flush()
            self.base, self.ctx = base, ctx
        got = self.open.get(shape)
        if got is None:
            got = self.open[shape] = ([], [])
            names = self.names.get(shape)
            if names is None:
                row = point_columns(p)
                row["disturbed"] = row["point"] = None
                names = self.names[shape] = tuple(row)
            self.columns.first(base, names)  # a table's columns are in the order they first appear
        got[0].append(p)
        got[1].append(self.columns.next_row())
        return True

    def flush(self) -> None:
        for shape, (pts, rows) in self.open.items():
            names = self.names[shape]
            causes = [disturbed(p, self.ctx) for p in pts]
            values = [causes if g is _CAUSE else pts if g is _SELF else list(map(g, pts))
                      for g in _getters_of(shape, names)]
            self.columns.add_many(names, values, rows)
        self.open.clear()


_CAUSE, _SELF = object(), object()  # the `disturbed` and `point` columns' getters: worked out per batch


def _shape(p: Point) -> tuple | None:
    """What decides the columns `point_columns` makes of a point `_Batch` takes (no clock sync,
    import or check; details and tag of plain values): which rates and optional fields it has,
    its details' and tag's keys. None for the other points."""
    if p.clock_sync or p.imported is not None or p.check is not None:
        return None
    details, tag = p.details, p.tag
    if details and not _PLAIN.issuperset(map(type, details.values())):
        return None
    if tag and not _PLAIN.issuperset(map(type, tag.values())):
        return None
    bw, busbw = p.bw_MBps, p.busbw_MBps
    return (bw is not None, bw is not None and bw.mean is not None, busbw is not None,
            busbw is not None and busbw.mean is not None, *(v is not None for v in _optional_values(p)),
            tuple(details), tuple(tag))


@lru_cache(maxsize=256)
def _getters_of(shape: tuple, names: tuple[str, ...]) -> tuple[Any, ...]:
    """Each column's getter for points of `shape`: the source `point_columns` writes the column
    from last (a tag key that names a field of the point wins over the field, as in its dict)."""
    details, tag = set(shape[7]), set(shape[8])
    optional = {k for k, there in zip(_OPTIONAL, shape[4:7]) if there}
    rates: dict[str, Any] = {}
    for (key, median, most, mean), there, mean_there in zip(_RATE_COLUMNS, shape[0:4:2], shape[1:4:2]):
        if there:
            rates.update({median: attrgetter(f"{key}.median"), most: attrgetter(f"{key}.max")})
        if mean_there:
            rates[mean] = attrgetter(f"{key}.mean")
    time_of = {col: attrgetter(f"time_us.{name}") for col, name in zip(_TIME_COLUMNS, STATS_FIELDS)}

    def getter(name: str) -> Any:
        if name in ("point", "disturbed"):
            return _SELF if name == "point" else _CAUSE
        if name in ("placement", "launch"):
            return attrgetter("placement") if name == "placement" else _launch_column
        if name in tag:
            return lambda p: p.tag[name]
        if name in details:
            return lambda p: p.details[name]
        if name in _TAIL or name in optional:
            return attrgetter(name)
        if name in rates:
            return rates[name]
        return time_of[name] if name in time_of else attrgetter(name)  # the point's head
    return tuple(map(getter, names))


def _launch_column(p: Point) -> int:
    launch = p.tag.get("launch", 0)
    return launch if isinstance(launch, int) else 0


class _Columns:
    """The tidy table gathered a column at a time in blocks of rows that have the same columns
    (most points of a run do); a launch's own columns (`base`) are kept once per launch, not once
    per row. No dict per point outlives its row, no row number is kept per value, and a 200 MB
    records file is not a Python loop over every value."""

    def __init__(self) -> None:
        self.rows = 0
        self.names: dict[str, None] = {}  # every column, in the order columns first appear
        # each launch's columns: their values, and where each column's value is among them (one
        # dict per set of columns, not per launch: a run of 5,000 launches)
        self.bases: list[tuple[tuple[Any, ...], Mapping[str, int]]] = []
        self._places: dict[tuple[str, ...], dict[str, int]] = {}
        self._last: Mapping[str, Any] | None = None  # the launch's columns the last row had, and their names
        self._last_names: tuple[str, ...] = ()
        # a block per set of columns (the launch's, then the point's): the rows it holds, each
        # row's launch (in `bases`), a list of values per point column
        self.blocks: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[list[int], list[int], list[list[Any]]]] = {}

    def add(self, base: Mapping[str, Any], row: Mapping[str, Any]) -> None:
        """One row: the launch's columns `base` (the same object for every point of a launch),
        then the point's own `row`, which wins where both name a column (as in {**base, **row})."""
        self._launch(base)
        at = len(self.bases) - 1
        names = tuple(row)
        key = (self._last_names, names)
        block = self.blocks.get(key)
        if block is None:
            block = self.blocks[key] = ([], [], [[] for _ in names])
            self.names.update(dict.fromkeys(base))
            self.names.update(dict.fromkeys(names))
        block[0].append(self.rows)
        block[1].append(at)
        deque(map(list.append, block[2], row.values()), maxlen=0)  # each value onto its column, in C
        self.rows += 1

    def first(self, base: Mapping[str, Any], names: tuple[str, ...]) -> None:
        """Rows of the launch `base` with the columns `names` start here (`add_many` adds them)."""
        self._launch(base)
        self.names.update(dict.fromkeys(base))
        self.names.update(dict.fromkeys(names))

    def next_row(self) -> int:
        self.rows += 1
        return self.rows - 1

    def add_many(self, names: tuple[str, ...], values: list[list[Any]], rows: list[int]) -> None:
        """Rows of the last launch (`first`) whose numbers `next_row` gave, a list of values per
        column: as `add` of each row in turn."""
        key = (self._last_names, names)
        block = self.blocks.get(key)
        if block is None:
            block = self.blocks[key] = ([], [], [[] for _ in names])
        block[0].extend(rows)
        block[1].extend([len(self.bases) - 1] * len(rows))
        deque(map(list.extend, block[2], values), maxlen=0)

    def _launch(self, base: Mapping[str, Any]) -> None:
        if base is not self._last:  # the first row of a launch
            self._last, self._last_names = base, tuple(base)
            places = self._places.setdefault(self._last_names, {name: k for k, name in enumerate(self._last_names)})
            self.bases.append((tuple(base.values()), places))

    def frame(self) -> pd.DataFrame:
        """As pd.DataFrame(rows) makes it: a missing value is NaN, each column's type inferred."""
        blocks = [(frozenset(base_names), np.asarray(rows), np.asarray(launch), dict(zip(names, cols)))
                  for (base_names, names), (rows, launch, cols) in self.blocks.items()]
        self.blocks.clear()
        spread: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray, bool]] = {}
        data = {}
        for name in self.names:
            if any(name in cols for _, _, _, cols in blocks):
                # each list goes as soon as it is in its column
                parts = [(rows, cols.pop(name) if name in cols else [self._value(k, name) for k in launch])
                         for base_names, rows, launch, cols in blocks if name in cols or name in base_names]
                data[name] = self._column(parts)
                continue
            # a column only launches give: its type inferred from each launch's value once (and
            # NaN for rows without it), then spread over the rows; a type depends on which values
            # occur, not how often, so it is the type the whole column would have
            having = tuple(i for i, block in enumerate(blocks) if name in block[0])
            if having not in spread:  # the same for most such columns
                spread[having] = self._spread([blocks[i] for i in having])
            used, at, missing = spread[having]
            values = [self._value(k, name) for k in used] + ([np.nan] if missing else [])
            data[name] = pd.Series(_objects(values), copy=False).infer_objects().take(at).reset_index(drop=True)
        return pd.DataFrame(data, index=pd.RangeIndex(self.rows))

    def _column(self, parts: list[tuple[np.ndarray, list[Any]]]) -> pd.Series:
        """One column from its values in the rows they belong to (NaN in the others): floats, whole
        numbers or booleans alone are read into their array in C, as inference would type them (a
        missing value makes whole numbers floats: those are inferred); anything else is inferred
        from objects."""
        filled = sum(len(rows) for rows, _ in parts)
        kinds = set().union(*(map(type, values) for _, values in parts))
        kind = kinds.pop() if len(kinds) == 1 else None
        if kind in _TYPED and (kind is float or filled == self.rows):
            try:
                typed = [(rows, np.array(values, dtype=_TYPED[kind])) for rows, values in parts]
            except OverflowError:  # a whole number beyond 64 bits: inferred as before
                pass
            else:
                if len(typed) == 1 and filled == self.rows and (typed[0][0][1:] > typed[0][0][:-1]).all():
                    return pd.Series(typed[0][1], copy=False)  # one block holds every row, in order
                out = np.full(self.rows, np.nan) if kind is float else np.empty(self.rows, _TYPED[kind])
                for rows, values in typed:
                    out[rows] = values
                return pd.Series(out, copy=False)
        out = np.full(self.rows, np.nan, dtype=object)
        for rows, values in parts:
            out[rows] = _objects(values)
        return pd.Series(out, copy=False).infer_objects()

    def _value(self, launch: int, name: str) -> Any:
        values, places = self.bases[launch]
        return values[places[name]]

    def _spread(self, blocks: list) -> tuple[np.ndarray, np.ndarray, bool]:
        """The launches that `blocks` hold rows of, for each row of the table its launch's place
        among them (one past the last for rows of other blocks: their NaN), and whether there are
        such rows."""
        rows = np.concatenate([r for _, r, _, _ in blocks])
        used, which = np.unique(np.concatenate([k for _, _, k, _ in blocks]), return_inverse=True)
        at = np.full(self.rows, len(used))
        at[rows] = which
        return used, at, len(rows) < self.rows


def _objects(values: Sequence[Any]) -> np.ndarray:
    """`values` as a 1-d object array, each value one element (a tuple or list stays whole)."""
    out = np.empty(len(values), dtype=object)
    kinds = set(map(type, values))  # the types found in C: a Python loop per value is slow at 300,000 rows
    if any(issubclass(k, (list, tuple)) for k in kinds):  # numpy would spread these over elements
        for i, v in enumerate(values):
            out[i] = v
    else:
        out[:] = values
    return out


def unmeasured(runs: Iterable[RunView]) -> pd.DataFrame:
    """A row per point a launch did not measure: `what` is "hung" (a time-out), "slowed" (a
    time-out while the point still progressed: not a deadlock) or "skipped",
    with the reason; the same keys as the tidy table (run_id, benchmark, size, variant, launch)."""
    rows = []
    for run in runs:
        for rec in run.records():
            if isinstance(rec, (Timeout, Skip)):
                launch = rec.tag.get("launch", 0)
                rows.append({"run_id": run.id, "benchmark": rec.benchmark, "size": rec.size, "ranks": rec.ranks,
                             "variant": rec.variant, "launch": launch if isinstance(launch, int) else 0,
                             "what": ("hung" if rec.hung else "slowed") if isinstance(rec, Timeout) else "skipped",
                             "reason": getattr(rec, "reason", None) or "a time-out"})
    # object columns: a run id need not be valid UTF-8 (a string column of pandas would refuse it)
    return pd.DataFrame(rows, columns=["run_id", "benchmark", "size", "ranks", "variant", "launch", "what",
                                       "reason"], dtype=object)


def _drift_columns(drift: Drift | None) -> dict[str, Any]:
    """The run-to-run drift run.json keeps for the point (docs/statistics.md), for the launch-level
    frame to apply (`results.frame`), or nothing."""
    return {} if drift is None else {"drift": drift}


def points_of(rows: pd.DataFrame) -> list[Point]:
    """The typed points behind rows of the tidy table."""
    return list(rows["point"]) if "point" in rows else []
