"""OSU Micro-Benchmarks 7.x text output: the title line names the benchmark, `# Size ...` the
columns (one table per file); `-z` adds P50/P90/P99 columns, `-f` Min, Max and Iterations."""
from __future__ import annotations

import re
from itertools import compress, islice
from pathlib import Path

from mpiscope.util.bounded import excerpt
from mpiscope.importers.common import (COLLECTIVES, NEIGHBOR, NONBLOCKING, PERSISTENT, RMA, Figure, ImportFailed,
                                       Parsed, Row, Table, number, of_table, rma_sync, settle, size_of,
                                       table_points)

TITLE = re.compile(r"#\s*OSU (?P<what>MPI.+?)\s+Test\s+v(?P<version>[\d.]+)\s*$")
# OSU 7.4's point-to-point titles (`BENCHMARK` in c/mpi/pt2pt and c/mpi/startup, without "OSU MPI"
# and "Test") -> (OSU program, mpiscope row): the same measurement in both
P2P = {
    "Latency": ("osu_latency", "pingpong"),
    "Bandwidth": ("osu_bw", "bw"),
    "Bi-Directional Bandwidth": ("osu_bibw", "bibw"),
    "Multiple Bandwidth / Message Rate": ("osu_mbw_mr", "msgrate"),
    "Latency Persistent": ("osu_latency_persistent", "pingpong_persistent"),
    "Bandwidth Persistent": ("osu_bw_persistent", "bw_persistent"),
    "Bi-Directional Bandwidth Persistent": ("osu_bibw_persistent", "osu_bibw_persistent"),
    "Multi Latency": ("osu_multi_lat", "multi_lat"),
    "Multi-process Latency": ("osu_latency_mp", "latency_mp"),
    "Multi-threaded Latency": ("osu_latency_mt", "latency_mt"),
}
# pair benchmarks that run on any even number of ranks (OSU does not print how many)
ANY_PAIRS = ("msgrate", "multi_lat")
# start-up programs print a line of figures, not a table
NO_TABLE = {"Init": "osu_init", "Hello World": "osu_hello"}
ONE_SIDED = re.compile(r"MPI_(?P<op>\w+?)\s+(?P<kind>Latency|Bandwidth|Bi-directional Bandwidth|latency|bandwidth)",
                       re.IGNORECASE)
# a collective's title: "[Non-blocking ][Neighborhood ]OP [Persistent ]Latency"
COLLECTIVE = re.compile(r"(?P<nb>Non-blocking\s+)?(?P<neighbor>Neighborhood\s+)?(?P<op>.+?)\s+"
                        r"(?P<persistent>Persistent\s+)?Latency", re.IGNORECASE)
# OSU's words for an operation that are not the MPI call's name in lower case
OPERATIONS = {"all-to-all personalized exchange": "alltoall", "all-to-allv personalized exchange": "alltoallv",
              "all-to-allw personalized exchange": "alltoallw", "all-to-all": "alltoall",
              "all-to-allv": "alltoallv", "broadcast": "bcast"}
ENGINE_COLLECTIVES = frozenset(COLLECTIVES + NONBLOCKING + PERSISTENT + NEIGHBOR)

# The tool's columns, and the record field each holds. Avg is the mean over ranks of each
# rank's average (collectives) or of the loop (point-to-point); Min and Max (-f) are over ranks
# of those averages, the engine's t_min_us / t_max_us (docs/engine.md, IMB's and OSU's figures).
COLUMNS = {
    "Avg Latency(us)": Figure("time_us.mean"),
    "Latency (us)": Figure("time_us.mean"),
    "Min Latency(us)": Figure("details.t_min_us"),
    "Max Latency(us)": Figure("details.t_max_us"),
    "Iterations": Figure("time_us.n"),
    "P50 Tail Lat(us)": Figure("time_us.median"),
    "P90 Tail Lat(us)": Figure("time_us.p90"),
    "P99 Tail Lat(us)": Figure("time_us.p99"),
    "Bandwidth (MB/s)": Figure("bw_MBps.mean"),
    "MB/s": Figure("bw_MBps.mean"),
    "Messages/s": Figure("msg_rate"),
    "Pure Comm.(us)": Figure("time_us.mean", "overlap.pure_us"),
    "Overall(us)": Figure("overlap.ovrl_us"),
    "Compute(us)": Figure("overlap.cpu_us"),
    "Overlap(%)": Figure("overlap.overlap_pct"),
}
# one-sided operations as OSU's program names spell them (osu_acc_latency, osu_fop_latency)
_RMA_OPS = {"accumulate": "acc", "get_accumulate": "get_acc", "fetch_and_op": "fop", "compare_and_swap": "cas"}
COLL_AVG = Figure("time_us.mean", "details.osu_avg_us")
WORDS = {"Validation": ("Pass", "Fail")}  # -c: the columns that are words, and the words they hold


def looks_like(lines: list[str]) -> bool:
    return any(TITLE.match(x) for x in lines[:5])


def _names(what: str, path: Path, line: int) -> tuple[str, str, str]:
    """(tool benchmark, mpiscope benchmark, kind) of a title's middle part; a title mpiscope has no
    row for keeps the tool's name (`osu_...`)."""
    if what in P2P:
        return (*P2P[what], "p2p")
    if what in NO_TABLE:
        raise ImportFailed(path, line, f"{NO_TABLE[what]} prints one line of start-up times, not a table: "
                                       f"measure them with `mpiscope run -b init,hello`")
    m = ONE_SIDED.fullmatch(what)
    if m:
        kind = {"latency": "latency", "bandwidth": "bw", "bi-directional bandwidth": "bibw"}[m["kind"].lower()]
        op = m["op"].lower()
        row = f"{_RMA_OPS.get(op, op)}_{kind}"
        return f"osu_{row}", row if row in RMA else f"osu_{row}", "rma"
    m = COLLECTIVE.fullmatch(what)
    if m and re.fullmatch(r"[\w-]+( [\w-]+)*", m["op"]):
        op = m["op"].lower()
        op = OPERATIONS.get(op, op.replace("-", "_").replace(" ", "_"))
        name = ("i" if m["nb"] else "") + ("neighbor_" if m["neighbor"] else "") + op \
            + ("_persistent" if m["persistent"] else "")
        kind = "nbc" if m["nb"] else "coll"
        return f"osu_{name}", name if name in ENGINE_COLLECTIVES else f"osu_{name}", kind
    raise ImportFailed(path, line, f"OSU benchmark '{excerpt(what)}' is not one mpiscope imports "
                                   f"(point-to-point, collectives, one-sided; docs/import.md)")


def split_heading(text: str) -> list[str]:
    """'# Size       Avg Latency(us)   P50 Tail Lat(us)' -> ['Size', 'Avg Latency(us)', ...]."""
    return [c for c in re.split(r"\s{2,}", text.lstrip("#").strip()) if c]


def parse(path: Path, text: str, ranks: int | None = None, source: str | None = None) -> Parsed:
    """The table of one OSU output file and its points (each naming `source` as its file, default
    `path`); ImportFailed naming the line when it is not one."""
    lines = text.splitlines()
    table: Table | None = None
    facts: dict[str, str] = {}
    numbered = enumerate(lines, 1)
    for number_, raw in numbered:
        s = raw.strip()
        if not s:
            continue
        if table is None:
            m = TITLE.match(s)
            if m:
                what = re.sub(r"^MPI\s+", "", m["what"].strip())  # "MPI Latency", "MPI_Put Latency"
                tool_name, name, kind = _names(what, path, number_)
                table = Table("osu", m["version"], tool_name, name, 0, [], line=number_, facts=facts)
                facts["kind"] = kind
                continue
            raise ImportFailed(path, number_, "not OSU Micro-Benchmarks output: expected a title such as "
                                              "'# OSU MPI Latency Test v7.4' first")
        if s.startswith("#"):
            body = s.lstrip("#").strip()
            pairs = re.search(r"pairs:\s*(\d+)", body)
            if pairs:
                facts["pairs"] = pairs[1]
            key, sep, value = body.partition(":")
            if sep and not table.columns and key.strip() in ("Datatype", "Window creation", "Synchronization"):
                facts[key.strip().lower().replace(" ", "_")] = value.strip().rstrip(".")
            cols = split_heading(body)
            known = all(c in COLUMNS or c in ("Size", "Validation") for c in cols)
            if not table.columns and cols and (cols[0] == "Size" or known):  # sizeless: barrier
                table.columns = cols
                unknown = [c for c in table.columns if c != "Size" and c not in COLUMNS and c != "Validation"]
                if unknown:
                    raise ImportFailed(path, number_,
                                       f"unknown OSU column(s) {excerpt(', '.join(map(repr, unknown)), 200)}")
                table.facts["heading_line"] = number_
            elif table.lines:
                settle(path, table, "Size", WORDS, _row)  # a damaged data line above is the file's first error
                raise ImportFailed(path, number_, f"a comment inside the table: '{excerpt(s)}' (a second benchmark in "
                                                  f"one file? import one OSU output per file)")
            continue
        if not table.columns:
            raise ImportFailed(path, number_, f"a data line before the column heading: '{excerpt(s)}'")
        # the table's data lines, taken at once up to the next comment (or the end): blank lines left
        # out, their cells read column by column (`settle`) once the table is whole
        rest = list(map(str.strip, lines[number_ - 1:]))
        end = next((j for j, x in enumerate(rest) if x.startswith("#")), len(rest))
        table.add(compress(range(number_, number_ + end), rest[:end]), compress(rest[:end], rest[:end]))
        next(islice(numbered, end - 1, end - 1), None)  # on at the comment, which the loop reads
    if table is None:
        raise ImportFailed(path, 1, "empty file: not OSU Micro-Benchmarks output")
    settle(path, table, "Size", WORDS, _row)
    if not table.lines:
        raise ImportFailed(path, len(lines), f"{table.tool_benchmark}: no data line (a run cut short?)")
    table.ranks = _ranks(table, path, ranks)
    if table.benchmark in RMA and "synchronization" in table.facts:  # the engine's points of that mode
        table.variant = rma_sync(table.facts["synchronization"])
    mapping = dict(COLUMNS)
    if table.facts["kind"] in ("coll", "nbc") and "Avg Latency(us)" in table.columns:
        mapping["Avg Latency(us)"] = COLL_AVG  # also the engine's osu_avg_us
    extra = {k: v for k, v in table.facts.items() if k in ("datatype", "window_creation", "synchronization")}
    rate = "Bandwidth (MB/s)" if "Bandwidth (MB/s)" in table.columns else "MB/s"
    mapping = of_table(mapping, table)
    return Parsed([table], table_points(table, path, mapping, time_from_rate=rate, time_from_msgs="Messages/s",
                                        extra=extra, source=source))


def _row(path: Path, line: int, s: str, columns: list[str]) -> Row:
    cells = s.split()
    if len(cells) != len(columns):
        raise ImportFailed(path, line, f"{len(cells)} value(s) where the heading names {len(columns)} columns "
                                       f"({excerpt(', '.join(columns), 200)}): the line is cut or damaged")
    figures: dict[str, float] = {}
    text: dict[str, str] = {}
    size = 0
    for col, cell in zip(columns, cells):
        if col == "Size":
            size = size_of(cell, path, line)
        elif col == "Validation":
            if cell not in ("Pass", "Fail"):
                raise ImportFailed(path, line, f"validation '{excerpt(cell)}' is neither Pass nor Fail")
            text[col] = cell
        else:
            figures[col] = number(cell, path, line, col)
            if figures[col] < 0:
                raise ImportFailed(path, line, f"negative figure {excerpt(cell)} in column '{excerpt(col)}'")
    return Row(line, size, figures, text)


def _ranks(t: Table, path: Path, given: int | None) -> int:
    """OSU does not print the job's size: 2 for point-to-point and one-sided, 2 x pairs for
    mbw_mr, --ranks for collectives."""
    if t.benchmark == "msgrate" and "pairs" in t.facts:
        implied = 2 * int(t.facts["pairs"])
        if given is not None and given != implied:
            raise ImportFailed(path, t.line, f"--ranks {given}, but the file says {t.facts['pairs']} pair(s), "
                                             f"that is {implied} ranks")
        return implied
    if t.facts["kind"] in ("p2p", "rma"):
        if given is not None and given != 2 and t.benchmark not in ANY_PAIRS:
            raise ImportFailed(path, t.line, f"--ranks {given}: {t.tool_benchmark} runs on 2 ranks")
        return given or 2
    if given is None:
        raise ImportFailed(path, t.line, f"{t.tool_benchmark}: OSU output does not say how many ranks ran it: "
                                         f"give --ranks N")
    return given
