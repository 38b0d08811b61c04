"""Intel MPI Benchmarks 2021 text output (IMB-MPI1, IMB-NBC, IMB-RMA): a header naming the part
and version, then per benchmark and process count a `# Benchmarking NAME` block, `#processes =
N`, an optional `MODE:` (IMB-RMA), a column heading and data lines up to a blank line."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from mpiscope.util.bounded import excerpt
from mpiscope.importers.common import (COLLECTIVES, NONBLOCKING, Figure, ImportFailed, Parsed, Points, Row,
                                       Table, number, of_table, settle, size_of, table_points)

HEADER = re.compile(r"#\s*Intel\(R\) MPI Benchmarks\s+(?P<version>[\d.]+)(?:\s*,\s*(?P<part>.+?)\s*)?$")
BENCH = re.compile(r"#\s*Benchmarking\s+(?P<name>\S+)\s*$")
PROCS = re.compile(r"#\s*#processes\s*=\s*(?P<n>\d+)")
MODE = re.compile(r"#\s*MODE:\s*(?P<mode>[\w-]+)")
# IMB-MPI1 point-to-point names whose measurement is mpiscope's (docs/import.md)
P2P = {"PingPong": "pingpong", "PingPing": "pingping", "Sendrecv": "sendrecv", "Exchange": "exchange",
       "Uniband": "msgrate", "Biband": "bibw"}

# IMB-RMA's benchmarks and (engine row in NON-AGGREGATE mode, in AGGREGATE mode, sync mode): IMB
# holds one MPI_Win_lock for the loop and completes each operation (non-aggregate) or the whole loop
# (aggregate) with MPI_Win_flush, the _local ones with MPI_Win_flush_local (docs/benchmarks-rma.md).
# The mode that is not the row's own definition keeps a variant of its own: '<sync>_aggregate' or
# '<sync>_nonaggregate', so the two never line up with each other or with the wrong engine point.
RMA = {
    "Unidir_put": ("put_latency", "put_bw", "flush"), "Unidir_get": ("get_latency", "get_bw", "flush"),
    "Put_local": ("put_latency", "put_bw", "flush_local"), "Get_local": ("get_latency", "get_bw", "flush_local"),
    "Bidir_put": ("put_bibw", "put_bibw", "flush"), "Bidir_get": ("get_bibw", "get_bibw", "flush"),
    "Accumulate": ("acc_latency", "acc_latency", "flush"),
    "Get_accumulate": ("get_acc_latency", "get_acc_latency", "flush"),
    "Fetch_and_op": ("fop_latency", "fop_latency", "flush"),
    "Compare_and_swap": ("cas_latency", "cas_latency", "flush"),
    "One_put_all": ("one_put_all", "one_put_all", "flush"), "One_get_all": ("one_get_all", "one_get_all", "flush"),
    "All_put_all": ("all_put_all", "all_put_all", "flush"), "All_get_all": ("all_get_all", "all_get_all", "flush"),
    "Put_all_local": ("one_put_all", "one_put_all", "flush_local"),
    "Get_all_local": ("one_get_all", "one_get_all", "flush_local"),
    "Exchange_put": ("exchange_put", "exchange_put", "flush"),
    "Exchange_get": ("exchange_get", "exchange_get", "flush"),
    "Truly_passive_put": ("truly_passive_put", "truly_passive_put", "flush"),
}
# rows whose own definition is the aggregate stream (many operations, one completion)
_STREAMING = ("put_bw", "get_bw", "put_bibw", "get_bibw")


def rma_row(imb: str, mode: str | None) -> tuple[str, str] | None:
    """(engine row, variant) of an IMB-RMA benchmark in `mode` (aggregate, non-aggregate, None)."""
    if imb not in RMA:
        return None
    plain, aggregate, sync = RMA[imb]
    row = aggregate if mode == "aggregate" else plain
    if mode is None or (mode == "aggregate") == (row in _STREAMING):
        return row, sync
    return row, f"{sync}_{mode.replace('-', '')}"


# t[usec] is the mean time per call (PingPong: half the round trip); t_min/t_max/t_avg are
# over ranks of each rank's mean, the engine's t_min_us / t_max_us / t_avg_us.
COLUMNS = {
    "#repetitions": Figure("time_us.n"),
    "t[usec]": Figure("time_us.mean"),
    "t_avg[usec]": Figure("time_us.mean", "details.t_avg_us"),
    "t_min[usec]": Figure("details.t_min_us"),
    "t_max[usec]": Figure("details.t_max_us"),
    "Mbytes/sec": Figure("bw_MBps.mean"),
    "Msg/sec": Figure("msg_rate"),
    "t_pure[usec]": Figure("time_us.mean", "overlap.pure_us"),
    "t_ovrl[usec]": Figure("overlap.ovrl_us"),
    "t_CPU[usec]": Figure("overlap.cpu_us"),
    "overlap[%]": Figure("overlap.overlap_pct"),
    "defects": Figure("details.defects"),
}


def looks_like(lines: list[str]) -> bool:
    return any(HEADER.match(x.strip()) for x in lines[:5])


def mpiscope_name(imb: str, ranks: int) -> str:
    """mpiscope's benchmark where IMB's measures the same, else imb_<name>."""
    if imb in P2P and not (imb == "Biband" and ranks != 2):  # Biband on N ranks is N/2 pairs
        return P2P[imb]
    low = imb.lower()
    if low in COLLECTIVES or low in NONBLOCKING:
        return low
    base = re.sub(r"_pure$", "", low)  # IMB-NBC's X_pure: the pure phase, the engine row's time_us
    if base in NONBLOCKING:
        return base
    base = re.sub(r"_persist(_pure)?$", "", low)  # IMB-MPI4's X_persist(_pure): pure Start + Wait
    if base != low and base in COLLECTIVES:
        return f"{base}_persistent"
    return f"imb_{low}"


def parse(path: Path, text: str, ranks: int | None = None, source: str | None = None) -> Parsed:
    """The tables of one IMB output file and their points (each naming `source` as its file,
    default `path`); ImportFailed naming the line when it is not one."""
    lines = text.splitlines()
    version = part = None
    facts: dict[str, str] = {}
    tables: list[Table] = []
    current: Table | None = None
    pending: dict[str, object] = {}
    in_rows = finished = False
    for n, raw in enumerate(lines, 1):
        s = raw.strip()
        if version is None:
            if not s:
                continue
            m = HEADER.match(s)
            if m:
                version, part = m["version"], m["part"] or ""
            elif not s.startswith("#"):
                raise ImportFailed(path, n, "not Intel MPI Benchmarks output: expected its header "
                                            "('#    Intel(R) MPI Benchmarks 2021.x, MPI-1 part') first")
            continue
        if not s:  # the end of a table: its lines read column by column (`settle`)
            _settle(path, current)
            in_rows = False
            continue
        m = BENCH.match(s)
        if m:
            _settle(path, current)
            pending = {"name": m["name"], "line": n}
            current, in_rows = None, False
            continue
        m = PROCS.match(s)
        if m and "name" in pending:
            pending["ranks"] = int(m["n"])
            continue
        m = MODE.match(s)
        if m and "name" in pending:
            pending["mode"] = m["mode"].lower()
            continue
        body = s.lstrip("#").strip()
        if s.startswith("#") and current is None and "name" in pending and ("#bytes" in s or "#repetitions" in s):
            current = _table(path, n, s, pending, version, ranks)
            tables.append(current)
            in_rows = True
            continue
        if s.startswith("#") and "entering MPI_Finalize" in s:
            finished = True
            continue
        if s.startswith("#"):
            key, sep, value = body.partition(":")
            if sep and key.strip() in ("Date", "MPI Version", "MPI_Datatype", "MPI_Datatype for reductions", "MPI_Op"):
                facts[key.strip()] = value.strip()
            if current is not None and in_rows:
                _settle(path, current)  # a damaged data line above is the file's first error
                raise ImportFailed(path, n, f"a comment inside {current.tool_benchmark}'s table: '{excerpt(s)}'")
            continue
        if current is None or not in_rows:
            raise ImportFailed(path, n, f"a data line outside a benchmark's table: '{excerpt(s)}'")
        current.add((n,), (s,))
    for t in tables:
        _settle(path, t)
    if version is None:
        raise ImportFailed(path, 1, "not Intel MPI Benchmarks output: no '# Intel(R) MPI Benchmarks' header")
    if not tables:
        raise ImportFailed(path, len(lines), f"IMB {part}: no benchmark table (a run cut short?)")
    if not finished:  # IMB writes it last: without it the last table may have lost lines
        raise ImportFailed(path, len(lines), "no '# All processes entering MPI_Finalize' at the end: the run "
                                             "was cut short, its last table may be incomplete")
    for t in tables:
        if not t.lines:
            raise ImportFailed(path, t.line, f"{t.tool_benchmark}: a heading without data lines (a run cut short?)")
        t.facts.update(facts, part=part or "")
    return Parsed(tables, _points(path, tables, facts, source))


def _points(path: Path, tables: list[Table], facts: dict[str, str], source: str | None) -> Iterator[Points]:
    for t in tables:
        extra = {}
        if t.benchmark in COLLECTIVES or t.benchmark in NONBLOCKING:
            dtype = facts.get("MPI_Datatype for reductions" if "reduce" in t.benchmark or "scan" in t.benchmark
                              else "MPI_Datatype")
            if dtype:
                extra["datatype"] = dtype
        if "mode" in t.facts:
            extra["mode"] = t.facts["mode"]
        mapping = of_table(COLUMNS, t)
        yield from table_points(t, path, mapping, time_from_rate="Mbytes/sec", time_from_msgs="Msg/sec",
                                extra=extra, source=source)


def _table(path: Path, n: int, heading: str, pending: dict, version: str, ranks: int | None) -> Table:
    name = str(pending["name"])
    procs = pending.get("ranks")
    if procs is None:
        raise ImportFailed(path, n, f"{name}: no '#processes = N' line before its table")
    if ranks is not None and ranks < procs:  # fewer processes than the job: IMB's -npmin groups
        raise ImportFailed(path, n, f"--ranks {ranks}, but IMB says {name} ran on {procs} processes")
    columns = heading.split()
    unknown = [c for c in columns if c not in COLUMNS and c != "#bytes"]
    if unknown:
        raise ImportFailed(path, n, f"unknown IMB column(s) {excerpt(', '.join(map(repr, unknown)), 200)}")
    mode = pending.get("mode")
    rma = rma_row(name, str(mode) if mode else None)
    bench, variant = rma if rma else (mpiscope_name(name, int(procs)), None)
    if mode and not rma:  # a mode of a benchmark without an engine row: the two stay apart
        bench += "_aggregate" if mode == "aggregate" else ""
    t = Table("imb", version, name, bench, int(procs), columns, line=int(pending["line"]), variant=variant)
    if mode:
        t.facts["mode"] = str(mode)
    return t


def _settle(path: Path, t: Table | None) -> None:
    if t is not None:
        settle(path, t, "#bytes", {}, _row)


def _row(path: Path, n: int, s: str, columns: list[str]) -> Row:
    cells = s.split()
    if len(cells) != len(columns):
        raise ImportFailed(path, n, f"{len(cells)} value(s) where the heading names {len(columns)} columns "
                                    f"({excerpt(', '.join(columns), 200)}): the line is cut or damaged")
    figures: dict[str, float] = {}
    size = 0
    for col, cell in zip(columns, cells):
        if col == "#bytes":
            size = size_of(cell, path, n)
        else:
            figures[col] = number(cell, path, n, col)
            if figures[col] < 0:
                raise ImportFailed(path, n, f"negative figure {excerpt(cell)} in column '{excerpt(col)}'")
    return Row(n, size, figures)
