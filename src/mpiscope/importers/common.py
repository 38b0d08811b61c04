"""What the importers share: the error that names a file and line, a parsed table of one of the
tool's benchmarks, the names and byte conventions of mpiscope's benchmarks the tools' names map
to, and the one function that turns a tool's row into a typed `Point` (docs/import.md)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from mpiscope.util.errors import UsageError
from mpiscope.util.typed import fields_of, load
from mpiscope.records import Imported, Point, Rate, Stats

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


class ImportFailed(UsageError):
    """A file that is not the tool's output, or is damaged: the message names the file and line."""

    def __init__(self, path: Path | str, line: int, what: str):
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


def bytes_per_op(benchmark: str, size: int, ranks: int) -> float:
    """The engine's bytes per operation for a mapped benchmark; the size for the tool's own."""
    return float(_BYTES.get(benchmark, lambda x, n: x)(size, ranks))


def number(text: str, path: Path | str, line: int, column: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ImportFailed(path, line, f"'{text}' in column '{column}' is not a number") from None
    if v != v or v in (float("inf"), float("-inf")):
        raise ImportFailed(path, line, f"'{text}' in column '{column}' is not a finite number")
    return v


def size_of(text: str, path: Path | str, line: int) -> int:
    if not text.isdecimal():  # what re's \d+ matches, without a regular expression per row
        raise ImportFailed(path, line, f"message size '{text}' is not a whole number of bytes")
    size = int(text)
    if size > 2**31 - 1:
        raise ImportFailed(path, line, f"message size {size} is beyond an MPI count")
    return size


@dataclass(slots=True)  # a file of a million rows holds a million of these
class Row:
    """One data line of a tool's table: its line number and its figures by column heading."""
    line: int
    size: int
    figures: dict[str, float]
    text: dict[str, str] = field(default_factory=dict)  # columns that are words (OSU -c: Validation)


@dataclass
class Table:
    """One benchmark's table in a tool's output."""
    tool: str                       # osu | imb
    tool_version: str
    tool_benchmark: str             # the tool's own name: osu_latency, PingPong
    benchmark: str                  # mpiscope's name where the measurement is the same, else the tool's
    ranks: int
    columns: list[str]
    rows: list[Row] = field(default_factory=list)
    variant: str | None = None      # one-sided: the engine's sync mode, IMB-RMA's other mode marked
    line: int = 0                   # where the table's heading is
    facts: dict[str, Any] = field(default_factory=dict)  # what the file says besides (date, datatype)


@dataclass(frozen=True)
class Figure:
    """How one of the tool's columns lands in a point: the record fields it fills ('time_us.mean',
    'bw_MBps.mean', 'msg_rate', 'details.t_min_us', 'overlap.cpu_us', 'time_us.n')."""
    targets: tuple[str, ...]

    def __init__(self, *targets: str):
        object.__setattr__(self, "targets", targets)


@dataclass
class Parsed:
    """One file: its tables, every line checked, and its points' fields (`point_fields`) made one
    at a time as they are taken (a file of a million rows is never a million points at once)."""
    tables: list[Table]
    fields: Iterator[dict[str, Any]]

    @property
    def points(self) -> Iterator[Point]:
        return (load(Point, f, "imported point") for f in self.fields)


# A column's targets taken apart once per table: (record part, field name, target as written)
Targets = tuple[tuple[str, str, str], ...]


def of_table(mapping: Mapping[str, Figure], t: Table) -> dict[str, Targets]:
    """The part of `mapping` that names the table's columns, in the mapping's order, each target
    taken apart: what `point_fields` looks at for each of the table's rows."""
    return {col: tuple((*target.partition(".")[::2], target) for target in fig.targets)
            for col, fig in mapping.items() if col in t.columns}


def point_fields(t: Table, row: Row, path: Path | str, mapping: Mapping[str, Targets],
                 time_from_rate: str | None = None, time_from_msgs: str | None = None,
                 extra: Mapping[str, Any] | None = None, source: str | None = None) -> dict[str, Any]:
    """The fields of the point of one row (load(Point, fields); the import writes them as they are,
    `records.model.point_line`): the tool's figures in the fields that hold the same figure (`mapping`,
    by column), the estimate the tool's mean (its median when it gives one), the bandwidth derived
    from it where the tool gave none. `time_from_rate`/`time_from_msgs`: the column (MB/s, messages/s) a time per operation
    is derived from when the tool reports only a rate. `extra`: what the file says of the whole
    table (a datatype), added to the details; `source`: the file as the point names it (default `path`)."""
    size, ranks = row.size, t.ranks
    per_op = bytes_per_op(t.benchmark, size, ranks)
    stats: dict[str, float | int] = {}
    rate: dict[str, float] = {}
    details: dict[str, Any] = {}
    if t.benchmark in SIZELESS:  # the engine's row is sizeless (size 0): the tool's size stays in details
        details["tool_size"] = size
        size = 0
    overlap: dict[str, float] = {}
    fields: dict[str, str] = {}
    msg_rate = None
    figures = row.figures
    for col, targets in mapping.items():
        if col not in figures:
            continue
        v = figures[col]
        for where, name, target in targets:
            if where == "time_us":
                stats[name] = int(v) if name == "n" else v
            elif where == "bw_MBps":
                rate[name] = v
            elif where == "details":
                details[name] = v
            elif where == "overlap":
                overlap[name] = v
            elif target == "msg_rate":
                msg_rate = v
            fields[target] = col
    if "mean" not in stats and time_from_msgs and row.figures.get(time_from_msgs, 0) > 0:
        # messages/s over all pairs: one operation (a message of each pair) takes pairs / rate
        pairs = max(1, ranks // 2) if t.benchmark == "msgrate" else 1
        stats["mean"] = pairs * 1e6 / row.figures[time_from_msgs]
        fields["time_us.mean"] = f"derived: 10^6 x pairs / {time_from_msgs}"
    if "mean" not in stats and time_from_rate and row.figures.get(time_from_rate, 0) > 0 and per_op > 0:
        stats["mean"] = per_op / row.figures[time_from_rate]  # MB/s is bytes per µs
        fields["time_us.mean"] = f"derived: bytes_per_op / {time_from_rate}"
    if "mean" not in stats:
        raise ImportFailed(path, row.line, f"no time and no rate for size {size}: the line holds "
                                           + ", ".join(f"{k}={v:g}" for k, v in row.figures.items()))
    # OSU's -z P50 is the median of its per-iteration times: then the estimate is a median
    estimate = "median" if stats.get("median") is not None else "mean"
    if estimate not in rate and size > 0 and per_op > 0 and stats[estimate] > 0:
        rate[estimate] = per_op / stats[estimate]
        fields[f"bw_MBps.{estimate}"] = f"derived: bytes_per_op / time_us.{estimate}"
    if size == 0:  # no bandwidth of nothing (the engine writes none either)
        rate.clear()
        for k in [k for k in fields if k.startswith("bw_MBps.")]:
            del fields[k]
    if overlap:
        details["overlap"] = overlap
    details.update({k.lower(): v for k, v in row.text.items()})  # validation: Pass | Fail
    details.update(extra or {})
    # the nested records as the fields their classes would hold (typed.fields_of: defaults filled
    # in, None left out), not instances: a million rows are written, not kept
    imported = fields_of(Imported, dict(tool=t.tool, tool_benchmark=t.tool_benchmark, file=source or str(path),
                                        line=row.line, tool_version=t.tool_version, figures=dict(row.figures),
                                        fields=fields))
    return dict(benchmark=t.benchmark, size=size, ranks=ranks, time_us=fields_of(Stats, stats),
                family=family_of(t.benchmark), variant=t.variant, participants=list(range(ranks)),
                sample_from="imported", ops_per_event=1.0, bytes_per_op=per_op,
                bw_MBps=fields_of(Rate, rate) if rate else None,
                msg_rate=msg_rate, converged=False, stop_reason="imported", estimate=estimate, imported=imported,
                details=details)
