"""What the importers share: the error that names a file and line, a parsed table of one of the
tool's benchmarks, the names and byte conventions of mpiscope's benchmarks the tools' names map
to, and the one function that turns a tool's row into a typed `Point` (docs/import.md)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

from mpiscope.util.bounded import excerpt
from mpiscope.util.errors import UsageError
from mpiscope.util.typed import fields_of, load
from mpiscope.records import Imported, Point, PointLines, Rate, Stats, json_cells, point_line
from mpiscope.records.model import Slot

if TYPE_CHECKING:  # numpy is imported where a table is read: `mpiscope --help` stays light
    import numpy as np

COLLECTIVES = ("barrier", "bcast", "reduce", "allreduce", "allgather", "allgatherv", "alltoall", "alltoallv",
               "alltoallw", "gather", "gatherv", "scatter", "scatterv", "reduce_scatter", "reduce_scatter_block",
               "scan", "exscan")
NONBLOCKING = ("ibarrier", "ibcast", "ireduce", "iallreduce", "iallgather", "ialltoall", "ireduce_scatter",
               "igather", "igatherv", "iscatter", "iscatterv", "iallgatherv", "ialltoallv", "ialltoallw",
               "ireduce_scatter_block", "iscan", "iexscan")
# the engine's neighbourhood collectives (docs/benchmarks.md, Neighbourhood), blocking and not
NEIGHBOR = tuple(f"{i}neighbor_{c}" for i in ("", "i")
                 for c in ("allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw"))
# the engine's persistent collectives: <collective>_persistent (docs/benchmarks.md, Persistent)
PERSISTENT = tuple(f"{c}_persistent" for c in COLLECTIVES)
# the engine's one-sided rows (docs/benchmarks-rma.md); each point's variant is its synchronisation
RMA = ("put_latency", "get_latency", "put_bw", "get_bw", "put_bibw", "get_bibw", "acc_latency", "get_acc_latency",
       "fop_latency", "cas_latency", "one_put_all", "one_get_all", "all_put_all", "all_get_all", "exchange_put",
       "exchange_get", "truly_passive_put")
# rows without a size: one 8-byte integer whatever the tool prints as its size
SIZELESS = ("fop_latency", "cas_latency")
# OSU's '# Synchronization:' text -> the engine's --rma-sync mode (the variant of its points)
RMA_SYNC = (("lock_all", "lock_all"), ("flush_local", "flush_local"), ("flush", "flush"), ("fence", "fence"),
            ("post", "pscw"), ("start", "pscw"), ("lock", "lock"))

# bytes one operation moves, as the engine's registry defines it (docs/engine.md, Benchmarks and
# Collectives): a function of the size and the ranks.
_BYTES: dict[str, Callable[[int, int], float]] = {
    "pingpong": lambda x, n: x, "pingping": lambda x, n: x, "bw": lambda x, n: x, "bibw": lambda x, n: 2 * x,
    "msgrate": lambda x, n: n // 2 * x, "sendrecv": lambda x, n: 2 * x, "exchange": lambda x, n: 4 * x,
    "barrier": lambda x, n: 0, "bcast": lambda x, n: x, "reduce": lambda x, n: x, "allreduce": lambda x, n: x,
    "reduce_scatter": lambda x, n: x, "reduce_scatter_block": lambda x, n: x, "scan": lambda x, n: x,
    "exscan": lambda x, n: x,
}
for _name in ("allgather", "allgatherv", "alltoall", "alltoallv", "gather", "gatherv", "scatter", "scatterv"):
    _BYTES[_name] = lambda x, n: n * x
_BYTES["alltoallw"] = _BYTES["alltoall"]
for _name in NEIGHBOR:  # per neighbour, as the collectives per peer
    _BYTES[_name] = lambda x, n: x
for _name in NONBLOCKING:
    _BYTES[_name] = _BYTES[_name[1:]]
for _name in PERSISTENT:
    _BYTES[_name] = _BYTES[_name[:-len("_persistent")]]
for _name in RMA:  # rma.c's rma_bytes: what the origin moves to all its targets per operation
    _BYTES[_name] = lambda x, n: x
for _name in ("put_bibw", "get_bibw", "exchange_put", "exchange_get"):
    _BYTES[_name] = lambda x, n: 2 * x
for _name in ("one_put_all", "one_get_all", "all_put_all", "all_get_all"):
    _BYTES[_name] = lambda x, n: max(1, n - 1) * x
for _name in SIZELESS:
    _BYTES[_name] = lambda x, n: 8


MAX_SIZE = 2**31 - 1  # an MPI count


class ImportFailed(UsageError):
    """A file that is not the tool's output, or is damaged: the message names the file and line."""

    def __init__(self, path: Path | str, line: int, what: str):
        what = excerpt(what, 1000)  # whatever part of the file the message quotes, one screen at most
        super().__init__(f"{path} line {line}: {what}" if line > 0 else f"{path}: {what}")  # 0: the whole file
        self.path, self.line = str(path), line


@lru_cache(maxsize=None)  # asked once per row: a file of a million rows names a few benchmarks
def family_of(benchmark: str) -> str:
    """The engine family of a mapped benchmark; `rma` or the tool's own for the rest."""
    if benchmark in COLLECTIVES:
        return "coll"
    if benchmark in NEIGHBOR:
        return "neighbor"
    if benchmark in NONBLOCKING:
        return "nbc"
    if benchmark in PERSISTENT:
        return "persistent"
    if benchmark in RMA:
        return "rma"
    if benchmark in _BYTES:
        return "p2p"
    return "rma" if re.search(r"put|get|acc|fop|cas|rma", benchmark) else "imported"


def rma_sync(text: str) -> str | None:
    """The engine's sync mode of OSU's '# Synchronization: MPI_Win_flush' text; None if unknown."""
    low = text.lower()
    return next((mode for word, mode in RMA_SYNC if word in low), None)


def bytes_per_op(benchmark: str, sizes: Sequence[int], ranks: int) -> list[float]:
    """The engine's bytes per operation for a mapped benchmark at each size; the size for the tool's own."""
    per_op = _BYTES.get(benchmark, lambda x, n: x)
    return [float(per_op(x, ranks)) for x in sizes]


def number(text: str, path: Path | str, line: int, column: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ImportFailed(path, line, f"'{excerpt(text)}' in column '{excerpt(column)}' is not a number") from None
    if v != v or v in (float("inf"), float("-inf")):
        raise ImportFailed(path, line, f"'{excerpt(text)}' in column '{excerpt(column)}' is not a finite number")
    return v


def size_of(text: str, path: Path | str, line: int) -> int:
    if not text.isdecimal():  # what re's \d+ matches, without a regular expression per row
        raise ImportFailed(path, line, f"message size '{excerpt(text)}' is not a whole number of bytes")
    size = int(text)
    if size > MAX_SIZE:
        raise ImportFailed(path, line, f"message size {size} is beyond an MPI count")
    return size


@dataclass(slots=True)
class Row:
    """One data line of a tool's table, as a parser reads it line by line (`settle` when a line is
    damaged): its line number and its figures by column heading."""
    line: int
    size: int
    figures: dict[str, float]
    text: dict[str, str] = field(default_factory=dict)  # columns that are words (OSU -c: Validation)


@dataclass
class Table:
    """One benchmark's table in a tool's output; its data lines are kept as text while the file is
    read (`add`) and then as columns (`settle`): a file of a million rows is a few arrays."""
    tool: str                       # osu | imb
    tool_version: str
    tool_benchmark: str             # the tool's own name: osu_latency, PingPong
    benchmark: str                  # mpiscope's name where the measurement is the same, else the tool's
    ranks: int
    columns: list[str]
    variant: str | None = None      # one-sided: the engine's sync mode, IMB-RMA's other mode marked
    line: int = 0                   # where the table's heading is
    facts: dict[str, Any] = field(default_factory=dict)  # what the file says besides (date, datatype)
    lines: list[int] = field(default_factory=list)          # each data line's number
    cells: list[str] = field(default_factory=list)          # each data line's text, until settled
    sizes: list[int] = field(default_factory=list)          # each row's size (0 without a size column)
    figures: dict[str, np.ndarray] = field(default_factory=dict)  # the numeric columns, by heading
    text: dict[str, list[str]] = field(default_factory=dict)      # the columns of words

    def add(self, lines: Iterable[int], texts: Iterable[str]) -> None:
        """Data lines (their numbers, their text), in the file's order."""
        self.lines += lines
        self.cells += texts

    @property
    def rows(self) -> int:
        return len(self.lines)


RowReader = Callable[[Path, int, str, list[str]], Row]  # a parser's reading of one line: a Row or ImportFailed


def settle(path: Path | str, t: Table, size_column: str, words: Mapping[str, tuple[str, ...]],
           read_row: RowReader) -> None:
    """`t`'s data lines as its columns, each column read and checked at once (the cell count, a
    size, a number, finite, not negative, a word of `words`). When a check fails, the lines are
    read one by one with the parser's own `read_row`, which names the first damaged line with its
    message, as reading line by line always did."""
    import numpy as np
    if not t.cells:  # settled already (or no row)
        return
    texts, t.cells = t.cells, []
    split = list(map(str.split, texts))
    if not _columns(t, split, size_column, words):
        rows = [read_row(Path(path), line, s, t.columns) for line, s in zip(t.lines, texts)]
        # past here only if a check above were stricter than read_row's: the rows as it read them
        t.sizes = [r.size for r in rows]
        t.figures = {c: np.array([r.figures[c] for r in rows], dtype=float) for c in rows[0].figures} if rows else {}
        t.text = {c: [r.text[c] for r in rows] for c in words if c in t.columns}


def _columns(t: Table, split: list[list[str]], size_column: str, words: Mapping[str, tuple[str, ...]]) -> bool:
    """Fill `t`'s columns from its lines' cells; False where a cell fails its check."""
    import numpy as np
    if any(n != len(t.columns) for n in set(map(len, split))):
        return False
    by_column = list(zip(t.columns, zip(*split))) if split else [(c, ()) for c in t.columns]
    sizes: list[int] = [0] * len(split)
    figures: dict[str, np.ndarray] = {}
    text: dict[str, list[str]] = {}
    for col, cells in by_column:  # a column named twice: the last one's cells, as read_row keeps them
        if col == size_column:
            if not all(map(str.isdecimal, cells)):
                return False
            sizes = list(map(int, cells))
            if sizes and max(sizes) > MAX_SIZE:
                return False
        elif col in words:
            if not set(cells) <= set(words[col]):
                return False
            text[col] = list(cells)
        else:
            try:
                v = np.fromiter(map(float, cells), dtype=float, count=len(cells))
            except ValueError:
                return False
            if not np.isfinite(v).all() or (v < 0).any():
                return False
            figures[col] = v
    t.sizes, t.figures, t.text = sizes, figures, text
    return True


@dataclass(frozen=True)
class Figure:
    """How one of the tool's columns lands in a point: the record fields it fills ('time_us.mean',
    'bw_MBps.mean', 'msg_rate', 'details.t_min_us', 'overlap.cpu_us', 'time_us.n')."""
    targets: tuple[str, ...]

    def __init__(self, *targets: str):
        object.__setattr__(self, "targets", targets)


# rows worked out and written at once: a MB or two of lines (bigger writes cost the kernel more in
# fresh pages than they save)
CHUNK = 1 << 11


@dataclass
class Parsed:
    """One file: its tables, every line checked, and its points (`Points`) worked out a chunk of
    rows at a time as they are taken (a file of a million rows is never a million points at once)."""
    tables: list[Table]
    chunks: Iterator[Points]

    @property
    def fields(self) -> Iterator[dict[str, Any]]:
        return (c.fields(i) for c in self.chunks for i in range(c.rows))

    @property
    def points(self) -> Iterator[Point]:
        return (load(Point, f, "imported point") for f in self.fields)


# A column's targets taken apart once per table: (record part, field name, target as written)
Targets = tuple[tuple[str, str, str], ...]


def of_table(mapping: Mapping[str, Figure], t: Table) -> dict[str, Targets]:
    """The part of `mapping` that names the table's columns, in the mapping's order, each target
    taken apart: what `Points` looks at for each of the table's rows."""
    return {col: tuple((*target.partition(".")[::2], target) for target in fig.targets)
            for col, fig in mapping.items() if col in t.columns}


def table_points(t: Table, path: Path | str, mapping: Mapping[str, Targets], **how: Any) -> Iterator[Points]:
    """The points of a table's rows, a chunk at a time (`Points`; `how`: its keywords)."""
    for lo in range(0, t.rows, CHUNK):
        yield Points(t, lo, lo + CHUNK, path, mapping, **how)


class Points:
    """The points of rows lo to hi of a table, worked out column by column: the tool's figures in
    the fields that hold the same figure (`mapping`, by column), the estimate the tool's mean (its
    median when it gives one), the bandwidth derived from it where the tool gave none.
    `time_from_rate`/`time_from_msgs`: the column (MB/s, messages/s) a time per operation is derived
    from when the tool reports only a rate. `extra`: what the file says of the whole table (a
    datatype), added to the details; `source`: the file as the points name it (default `path`).
    `fields(i)` is the i-th row's point as its fields (load(Point, fields)); `text()` the lines of
    all of them (`records.PointLines`: point_line's bytes, the rows' values written column-wise)."""

    def __init__(self, t: Table, lo: int, hi: int, path: Path | str, mapping: Mapping[str, Targets],
                 time_from_rate: str | None = None, time_from_msgs: str | None = None,
                 extra: Mapping[str, Any] | None = None, source: str | None = None):
        import numpy as np
        self.t, self.path, self.source, self.extra = t, path, source or str(path), dict(extra or {})
        self.lines = t.lines[lo:hi]
        self.rows = len(self.lines)
        tool_sizes = t.sizes[lo:hi]
        # the engine's row is sizeless (size 0): the tool's size stays in details
        self.sizeless = t.benchmark in SIZELESS
        self.sizes = [0] * self.rows if self.sizeless else tool_sizes
        per_op_list = bytes_per_op(t.benchmark, tool_sizes, t.ranks)
        per_op = np.array(per_op_list, dtype=float)
        figures = {c: a[lo:hi] for c, a in t.figures.items()}
        listed = {c: a.tolist() for c, a in figures.items()}  # one list per column, whatever slots it fills
        self.words = {c: words[lo:hi] for c, words in t.text.items()}
        # every value that differs from row to row, by where it is in the point's fields
        values: dict[Slot, list[Any]] = {("size",): self.sizes, ("bytes_per_op",): per_op_list,
                                          ("imported", "line"): self.lines}
        if self.sizeless:
            values["details", "tool_size"] = tool_sizes
        stats: dict[str, np.ndarray] = {}
        self.rate_names: list[str] = []
        self.detail_names: list[str] = []
        self.overlap_names: list[str] = []
        self.msg_rate = False
        self.fields_map: dict[str, str] = {}
        named: dict[str, list[str]] = {"bw_MBps": self.rate_names, "details": self.detail_names,
                                       "overlap": self.overlap_names}
        for col, targets in mapping.items():
            if col not in figures:
                continue
            for where, name, target in targets:
                if where == "time_us":
                    stats[name] = figures[col]
                    values["time_us", name] = list(map(int, listed[col])) if name == "n" else listed[col]
                elif where in named:
                    if name not in named[where]:
                        named[where].append(name)
                    values[("details", "overlap", name) if where == "overlap" else (where, name)] = listed[col]
                elif target == "msg_rate":
                    self.msg_rate = True
                    values["msg_rate",] = listed[col]
                self.fields_map[target] = col
        self.stat_names = list(stats)
        self.src = np.zeros(self.rows, dtype=np.int64)  # where the time comes from: 0 a column, 1 msgs, 2 a rate
        self.derived_time = {1: f"derived: 10^6 x pairs / {time_from_msgs}",
                             2: f"derived: bytes_per_op / {time_from_rate}"}
        timed = "mean" in stats  # by a column: else a row whose time cannot be derived is refused
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # lanes np.where leaves out
            if not timed:
                mean = np.full(self.rows, np.nan)
                if time_from_msgs and time_from_msgs in figures:
                    # messages/s over all pairs: one operation (a message of each pair) takes pairs / rate
                    pairs = max(1, t.ranks // 2) if t.benchmark == "msgrate" else 1
                    msgs = figures[time_from_msgs]
                    use = msgs > 0
                    mean = np.where(use, pairs * 1e6 / msgs, mean)
                    self.src[use] = 1
                if time_from_rate and time_from_rate in figures:
                    rate = figures[time_from_rate]
                    use = (self.src == 0) & (rate > 0) & (per_op > 0)
                    mean = np.where(use, per_op / rate, mean)  # MB/s is bytes per µs
                    self.src[use] = 2
                stats["mean"] = mean
                self.stat_names.append("mean")
                values["time_us", "mean"] = mean.tolist()
            self.untimed = None if timed else self.src == 0
            # OSU's -z P50 is the median of its per-iteration times: then the estimate is a median
            self.estimate = "median" if "median" in stats else "mean"
            size = np.array(self.sizes, dtype=np.int64)
            est = stats[self.estimate]
            if self.estimate in self.rate_names:
                self.derive = np.zeros(self.rows, dtype=bool)
            else:
                self.derive = (size > 0) & (per_op > 0) & (est > 0)
                values["bw_MBps", self.estimate] = (per_op / est).tolist()
        self.cleared = size == 0  # no bandwidth of nothing (the engine writes none either)
        code = self.src * 4 + self.derive * 2 + self.cleared
        for words in self.words.values():
            kinds, which = np.unique(np.array(words), return_inverse=True)
            code = code * len(kinds) + which
        self.code = code  # rows of one code differ only in their values
        self.values = values
        self.figure_columns = list(figures)
        for c in self.figure_columns:
            values["imported", "figures", c] = listed[c]

    @property
    def ok(self) -> bool:
        """Every row has a time (`fields` of one without refuses it)."""
        return self.untimed is None or not self.untimed.any()

    def fields(self, i: int) -> dict[str, Any]:
        """The i-th row's point as its fields, the nested records as the fields their classes would
        hold (typed.fields_of: defaults filled in, None left out): written (`point_line`), not kept."""
        t, at = self.t, {slot: col[i] for slot, col in self.values.items()}
        figures = {c: at["imported", "figures", c] for c in self.figure_columns}
        if self.untimed is not None and self.untimed[i]:
            raise ImportFailed(self.path, self.lines[i], f"no time and no rate for size {self.sizes[i]}: the line "
                                                         "holds " + ", ".join(f"{k}={v:g}" for k, v in figures.items()))
        stats = {name: at["time_us", name] for name in self.stat_names}
        fields = dict(self.fields_map)
        if self.src[i]:
            fields["time_us.mean"] = self.derived_time[int(self.src[i])]
        rate = {name: at["bw_MBps", name] for name in self.rate_names}
        if self.derive[i]:
            rate[self.estimate] = at["bw_MBps", self.estimate]
            fields[f"bw_MBps.{self.estimate}"] = f"derived: bytes_per_op / time_us.{self.estimate}"
        if self.cleared[i]:
            rate.clear()
            for k in [k for k in fields if k.startswith("bw_MBps.")]:
                del fields[k]
        details: dict[str, Any] = {"tool_size": at["details", "tool_size"]} if self.sizeless else {}
        details.update({name: at["details", name] for name in self.detail_names})
        if self.overlap_names:
            details["overlap"] = {name: at["details", "overlap", name] for name in self.overlap_names}
        details.update({k.lower(): words[i] for k, words in self.words.items()})  # validation: Pass | Fail
        details.update(self.extra)
        imported = fields_of(Imported, dict(tool=t.tool, tool_benchmark=t.tool_benchmark, file=self.source,
                                            line=self.lines[i], tool_version=t.tool_version, figures=figures,
                                            fields=fields))
        return dict(benchmark=t.benchmark, size=self.sizes[i], ranks=t.ranks, time_us=fields_of(Stats, stats),
                    family=family_of(t.benchmark), variant=t.variant, participants=list(range(t.ranks)),
                    sample_from="imported", ops_per_event=1.0, bytes_per_op=at["bytes_per_op",],
                    bw_MBps=fields_of(Rate, rate) if rate else None,
                    msg_rate=at["msg_rate",] if self.msg_rate else None, converged=False, stop_reason="imported",
                    estimate=self.estimate, imported=imported, details=details)

    def text(self) -> bytes:
        """The lines of records.jsonl of these rows' points (every row has its time: `ok`)."""
        import numpy as np
        cells = {id(col): json_cells(col) for col in self.values.values()}  # a column in two slots written once
        starts = [0, *(np.flatnonzero(np.diff(self.code)) + 1).tolist()]
        templates: dict[int, PointLines | None] = {}
        out = []
        for a, b in zip(starts, [*starts[1:], self.rows]):
            code = int(self.code[a])
            if code not in templates:
                templates[code] = self.template(a)
            template = templates[code]
            if template is None:
                out += [point_line(self.fields(i)) for i in range(a, b)]
            else:
                out.append(template.lines([cells[id(self.values[slot])][a:b] for slot in template.slots]))
        return b"".join(out)

    def template(self, i: int) -> PointLines | None:
        """The lines of the rows of row i's code: its point with its values in slots; None when that
        does not write row i's own line (a value of the table's that shares a slot's place)."""
        given = self.fields(i)
        slots = [slot for slot in self.values if _holds(given, slot)]
        try:
            template = PointLines(given, slots)
        except ValueError:
            return None
        own = template.lines([json_cells([self.values[slot][i]]) for slot in slots])
        return template if own == point_line(given) else None


def _holds(fields: Mapping[str, Any], slot: Slot) -> bool:
    """Whether the fields have a value at `slot` (a rate of size 0 has none)."""
    for name in slot:
        if not isinstance(fields, Mapping) or fields.get(name) is None:
            return False
        fields = fields[name]
    return True
