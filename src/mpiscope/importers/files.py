"""Another tool's output files as one mpiscope run: which tool wrote a file (`detect`), its
typed `Point` records (`parse_file`, by the tool's parser), and `import_files`, which writes each
point as it is made (a file of a million rows is never held whole) into a directory renamed into
place once every file has parsed."""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from itertools import islice, repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Sequence

import orjson

from mpiscope.util import bounded, gcpause
from mpiscope.importers import imb, osu
from mpiscope.importers.common import ImportFailed, Parsed, Table
from mpiscope.records import Context, End, Point, Record, point_line, to_json

if TYPE_CHECKING:
    from mpiscope.store.runs import RunMeta

FORMATS = ("osu", "imb")
MAX_IMPORT_BYTES = 1 << 30  # a tool's text output of a whole campaign stays far below
_PARSERS = {"osu": osu, "imb": imb}
TOOL_NAMES = {"osu": "OSU Micro-Benchmarks", "imb": "Intel MPI Benchmarks"}

__all__ = ["FORMATS", "ImportFailed", "ImportedRun", "detect", "import_files", "import_run", "parse_file"]


def _read(path: Path) -> str:
    try:
        data = bounded.read_regular(path, MAX_IMPORT_BYTES, "a benchmark's output")
    except OSError as e:
        raise ImportFailed(path, 0, f"cannot read it ({e.strerror or e})") from None
    try:
        return data.decode("utf-8-sig")  # an editor's byte-order mark is not part of the output
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ImportFailed(path, line, "not text (bytes that are not UTF-8): not a benchmark's output") from None


def detect(path: Path, text: str | None = None) -> str:
    """'osu' or 'imb' from the file's first lines; ImportFailed when it is neither."""
    text = _read(path) if text is None else text
    lines = _head(text)
    for fmt, parser in _PARSERS.items():
        if parser.looks_like(lines):
            return fmt
    first = next((i for i, x in enumerate(text.splitlines(), 1) if x.strip()), 1)
    raise ImportFailed(path, first, "neither OSU Micro-Benchmarks 7.x nor Intel MPI Benchmarks 2021 output "
                                    "(no '# OSU MPI ... Test' title, no 'Intel(R) MPI Benchmarks' header)")


def _head(text: str) -> list[str]:
    """The first five lines that are not blank, as text.splitlines() has them (what the tools'
    titles are looked for in), split from as little of the text as holds them: a file of a
    million lines is split once, by its parser."""
    end = 0
    while True:
        end = min(len(text), max(2 * end, 4096))
        cut = text.rfind("\n", 0, end) + 1 if end < len(text) else end  # whole lines only
        head = list(islice(filter(str.strip, text[:cut].splitlines()), 5))
        if len(head) == 5 or end == len(text):
            return head


def parse_file(path: Path | str, fmt: str | None = None, ranks: int | None = None) -> list[Point]:
    """The points of one file of `fmt` (detected when None), each with its `imported` source."""
    return list(_parse(Path(path), fmt, ranks).points)


def _parse(path: Path, fmt: str | None, ranks: int | None, source: str | None = None) -> Parsed:
    """One file's tables, read and checked whole, and its points to be made one at a time."""
    text = _read(path)
    if not text.strip():
        raise ImportFailed(path, 1, "the file is empty")
    if not text.endswith("\n"):  # the tools end every line: a file cut while it was written
        last = text.count("\n") + 1
        raise ImportFailed(path, last, "the last line has no newline: the file was cut short (add the newline "
                                       "if the line is complete)")
    if fmt is not None and fmt not in _PARSERS:
        raise ImportFailed(path, 0, f"unknown format '{fmt}' (known: {', '.join(FORMATS)})")
    head = _head(text)
    other = [f for f, parser in _PARSERS.items() if f != fmt and parser.looks_like(head)]
    if fmt is not None and other:
        raise ImportFailed(path, 1, f"--format {fmt}, but this is {TOOL_NAMES[other[0]]} output")
    found = fmt or detect(path, text)  # with --format, its parser names the first line it cannot read
    if ranks is not None and ranks < 1:
        raise ImportFailed(path, 0, f"--ranks {ranks}: at least 1")
    return _PARSERS[found].parse(path, text, ranks, source)


def _context(tables: list[Table], path: Path, mpi_label: str | None, ranks: int | None) -> Context:
    """A file's context record: the job's size, the MPI as the user labels it, the tool."""
    tool = f"{TOOL_NAMES[tables[0].tool]} {tables[0].tool_version}"
    return Context(world_size=max([t.ranks for t in tables] + [ranks or 1]), mpi_library_version=mpi_label or "",
                   options={"tool": tool}, argv=(str(path),))


@dataclass(frozen=True)
class ImportedRun:
    """What `import_run` stored: the run's directory, how many points, and each (tool's benchmark,
    mpiscope's row and variant) among them."""
    path: Path
    points: int
    names: tuple[tuple[str, str], ...]


def import_files(paths: Sequence[Path | str], fmt: str | None = None, mpi_label: str | None = None,
                 ranks: int | None = None, runs_dir: Path | str | None = None) -> Path:
    """Read every file (OSU 7.x or IMB 2021 text; `fmt` detected per file when None) and store them as
    one run; returns its directory. Nothing is stored unless every file parsed: a file that is
    not one, or is damaged, is an ImportFailed naming the file and line."""
    return import_run(paths, fmt, mpi_label, ranks, runs_dir).path


def import_run(paths: Sequence[Path | str], fmt: str | None = None, mpi_label: str | None = None,
               ranks: int | None = None, runs_dir: Path | str | None = None) -> ImportedRun:
    """`import_files`, saying what it stored. Each point is written as it is made, into a directory
    renamed into place only when every file has parsed (a failure removes it)."""
    from mpiscope.util import paths as mpaths
    from mpiscope.store.runs import RECORDS, new_run_id
    if not paths:
        raise ImportFailed("(no file)", 0, "give at least one file to import")
    base = Path(runs_dir) if runs_dir is not None else mpaths.runs_dir(None)
    base.mkdir(parents=True, exist_ok=True)
    run_id = new_run_id()
    tmp = base / f".import-{run_id}.tmp"
    stored = _Stored()
    try:
        tmp.mkdir()
        with open(tmp / RECORDS, "wb") as out, gcpause.paused():  # a file's rows and points hold no cycles
            for p in paths:
                _store_file(Path(p), fmt, mpi_label, ranks, out, stored)
        (tmp / "run.json").write_text(json.dumps(stored.meta(run_id, mpi_label).to_json(), indent=1) + "\n")
        os.rename(tmp, base / run_id)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ImportedRun(base / run_id, stored.points, tuple(sorted(stored.names)))


@dataclass
class _Stored:
    """What the files stored so far hold, for run.json and the summary."""
    points: int = 0
    keys: set[tuple] = field(default_factory=set)  # every point's key, to tell a later file's apart
    tools: set[str] = field(default_factory=set)
    benchmarks: dict[str, None] = field(default_factory=dict)
    ranks: set[int] = field(default_factory=set)
    names: set[tuple[str, str]] = field(default_factory=set)
    files: list[dict[str, Any]] = field(default_factory=list)

    def note(self, tool_benchmark: str, benchmark: str, ranks: int, variant: str | None) -> None:
        """A point of the tool's benchmark stored as mpiscope's `benchmark` on `ranks`."""
        self.benchmarks[benchmark] = None
        self.ranks.add(ranks)
        self.names.add((tool_benchmark, benchmark + (f" {variant}" if variant else "")))

    def meta(self, run_id: str, mpi_label: str | None) -> "RunMeta":
        from mpiscope import __version__
        from mpiscope.store.runs import RunMeta, utc_now
        now = utc_now()
        return RunMeta(id=run_id, status="ok", started=now, finished=now, mpiscope_version=__version__,
                       points=self.points, exit_code=0,
                       extra={"imported": {"tools": sorted(self.tools), "mpi_label": mpi_label,
                                           "benchmarks": list(self.benchmarks), "ranks": sorted(self.ranks),
                                           "files": self.files}})


def _line(rec: Record) -> bytes:
    """A record as its line of records.jsonl (orjson: a million imported points in seconds)."""
    return orjson.dumps(to_json(rec)) + b"\n"


def _store_point(path: Path, p: dict[str, Any], first: dict[tuple, tuple[str, int]], out: BinaryIO,
                 stored: _Stored) -> None:
    """One point written to `out`, tagged when an earlier file or another of the tool's benchmarks
    holds its key; ImportFailed when the file repeats a row."""
    key = (p["benchmark"], p["size"], p["ranks"], p.get("variant"))
    tool_bench, line = p["imported"]["tool_benchmark"], p["imported"]["line"]
    earlier = first.setdefault(key, (tool_bench, line))
    if earlier[0] == tool_bench and earlier[1] != line:  # one row would silently hide the other
        raise ImportFailed(path, line, f"{tool_bench} at {p['size']} B appears twice (lines {earlier[1]} and "
                                       f"{line}): a file holds one row per size; split the runs into "
                                       f"files of their own and import each")
    if key in stored.keys:  # an earlier file holds this point too: a configuration of its own
        p = {**p, "tag": {**p.get("tag", {}), "file": path.name}}
    elif earlier[0] != tool_bench:
        # two of the tool's benchmarks map to one row (IMB-NBC's Ibcast and Ibcast_pure)
        p = {**p, "tag": {**p.get("tag", {}), "tool_benchmark": tool_bench}}
    out.write(point_line(p))
    stored.note(tool_bench, p["benchmark"], p["ranks"], p.get("variant"))


def _store_file(path: Path, fmt: str | None, mpi_label: str | None, ranks: int | None, out: BinaryIO,
                stored: _Stored) -> None:
    """One file's context, points and end record written to `out` as each point is made."""
    try:
        where = str(path.resolve())  # the stored run names the file wherever it is read from
    except RuntimeError:  # a link that leads back to itself (Python before 3.13: not an OSError)
        raise ImportFailed(path, 0, "cannot read it (a symbolic link that loops)") from None
    parsed = _parse(path, fmt, ranks, source=where)
    out.write(_line(_context(parsed.tables, path, mpi_label, ranks)))
    first: dict[tuple, tuple[str, int]] = {}  # this file's keys: the tool benchmark and line of each first
    count = 0
    for chunk in parsed.chunks:
        t = chunk.t
        keys = list(zip(repeat(t.benchmark), chunk.sizes, repeat(t.ranks), repeat(t.variant)))
        if (chunk.ok and len(set(keys)) == len(keys) and first.keys().isdisjoint(keys)
                and stored.keys.isdisjoint(keys)):  # no row repeats a point, none needs a tag: the lines at once
            first.update(zip(keys, zip(repeat(t.tool_benchmark), chunk.lines)))
            out.write(chunk.text())
            stored.note(t.tool_benchmark, t.benchmark, t.ranks, t.variant)
            count += chunk.rows
            continue
        for i in range(chunk.rows):
            _store_point(path, chunk.fields(i), first, out, stored)
            count += 1
    out.write(_line(End(points=count)))
    stored.keys.update(first)
    stored.points += count
    stored.tools.add(f"{TOOL_NAMES[parsed.tables[0].tool]} {parsed.tables[0].tool_version}")
    stored.files.append({"path": where, "format": parsed.tables[0].tool, "points": count})
