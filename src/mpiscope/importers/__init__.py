"""Other tools' output as mpiscope runs (`mpiscope import`, docs/import.md): one parser per tool
(osu, imb) returning typed `Point` records, and `import_files`, which parses every file before it
writes anything and then renames one finished run directory into place."""
from __future__ import annotations

import json
import os
import secrets
import shutil
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from mpiscope.util import bounded
from mpiscope.importers import imb, osu
from mpiscope.importers.common import ImportFailed
from mpiscope.records import Context, End, Point, Record, to_json

FORMATS = ("osu", "imb")
MAX_IMPORT_BYTES = 1 << 30  # a tool's text output of a whole campaign stays far below
_PARSERS = {"osu": osu, "imb": imb}
TOOL_NAMES = {"osu": "OSU Micro-Benchmarks", "imb": "Intel MPI Benchmarks"}

__all__ = ["FORMATS", "ImportFailed", "detect", "import_files", "parse_file"]


def _read(path: Path) -> str:
    try:
        data = bounded.read_regular(path, MAX_IMPORT_BYTES, "a benchmark's output")
    except OSError as e:
        raise ImportFailed(path, 0, f"cannot read it ({e.strerror or e})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ImportFailed(path, line, "not text (bytes that are not UTF-8): not a benchmark's output") from None


def detect(path: Path, text: str | None = None) -> str:
    """'osu' or 'imb' from the file's first lines; ImportFailed when it is neither."""
    text = _read(path) if text is None else text
    lines = [x for x in text.splitlines() if x.strip()]
    for fmt, parser in _PARSERS.items():
        if parser.looks_like(lines):
            return fmt
    first = next((i for i, x in enumerate(text.splitlines(), 1) if x.strip()), 1)
    raise ImportFailed(path, first, "neither OSU Micro-Benchmarks 7.x nor Intel MPI Benchmarks 2021 output "
                                    "(no '# OSU MPI ... Test' title, no 'Intel(R) MPI Benchmarks' header)")


def parse_file(path: Path | str, fmt: str | None = None, ranks: int | None = None) -> list[Point]:
    """The points of one file of `fmt` (detected when None), each with its `imported` source."""
    path = Path(path)
    text = _read(path)
    if not text.strip():
        raise ImportFailed(path, 1, "the file is empty")
    if not text.endswith("\n"):  # the tools end every line: a file cut while it was written
        last = text.count("\n") + 1
        raise ImportFailed(path, last, "the last line has no newline: the file was cut short (add the newline "
                                       "if the line is complete)")
    if fmt is not None and fmt not in _PARSERS:
        raise ImportFailed(path, 0, f"unknown format '{fmt}' (known: {', '.join(FORMATS)})")
    lines = [x for x in text.splitlines() if x.strip()]
    other = [f for f, parser in _PARSERS.items() if f != fmt and parser.looks_like(lines)]
    if fmt is not None and other:
        raise ImportFailed(path, 1, f"--format {fmt}, but this is {TOOL_NAMES[other[0]]} output")
    found = fmt or detect(path, text)  # with --format, its parser names the first line it cannot read
    if ranks is not None and ranks < 1:
        raise ImportFailed(path, 0, f"--ranks {ranks}: at least 1")
    return _PARSERS[found].parse(path, text, ranks)


def _context(points: list[Point], mpi_label: str | None, fmt: str, ranks: int | None) -> Context:
    """A file's context record: the job's size, the MPI as the user labels it, the tool."""
    src = points[0].imported
    tool = f"{TOOL_NAMES[fmt]} {src.tool_version}" if src else TOOL_NAMES[fmt]
    return Context(world_size=max([p.ranks for p in points] + [ranks or 1]), mpi_library_version=mpi_label or "",
                   options={"tool": tool}, argv=(src.file,) if src else ())


def import_files(paths: Sequence[Path | str], fmt: str | None = None, mpi_label: str | None = None,
                 ranks: int | None = None, runs_dir: Path | str | None = None) -> Path:
    """Read every file (OSU 7.x or IMB 2021 text; `fmt` detected per file when None) and store them as
    one run; returns its directory. Nothing is written unless every file parsed: a file that is
    not one, or is damaged, is an ImportFailed naming the file and line."""
    from mpiscope import __version__
    from mpiscope.util import paths as mpaths
    from mpiscope.store.runs import RECORDS, RunMeta, utc_now
    if not paths:
        raise ImportFailed("(no file)", 0, "give at least one file to import")
    files: list[tuple[Path, str, list[Point]]] = []
    for p in paths:
        path = Path(p)
        points = parse_file(path, fmt, ranks)
        files.append((path, points[0].imported.tool if points[0].imported else str(fmt), points))
    records: list[Record] = []
    seen: set[tuple] = set()
    for path, found, points in files:
        records.append(_context(points, mpi_label, found, ranks))
        first: dict[tuple, tuple[str, int]] = {}  # this file's keys: the tool benchmark and line of each first
        where = str(path.resolve())  # once per file: a million-line file would resolve it a million times
        for p in points:
            tool_bench = p.imported.tool_benchmark if p.imported else p.benchmark
            line = p.imported.line if p.imported else 0
            earlier = first.setdefault(p.key, (tool_bench, line))
            if earlier[0] == tool_bench and earlier[1] != line:  # one row would silently hide the other
                raise ImportFailed(path, line, f"{tool_bench} at {p.size} B appears twice (lines {earlier[1]} and "
                                               f"{line}): a file holds one row per size; split the runs into "
                                               f"files of their own and import each")
            if p.imported is not None:  # the stored run names the file wherever it is read from
                p = replace(p, imported=replace(p.imported, file=where))
            if p.key in seen:  # an earlier file holds this point too: a configuration of its own
                p = replace(p, tag={**p.tag, "file": path.name})
            elif earlier[0] != tool_bench:
                # two of the tool's benchmarks map to one row (IMB-NBC's Ibcast and Ibcast_pure)
                p = replace(p, tag={**p.tag, "tool_benchmark": tool_bench})
            records.append(p)
        seen |= {p.key for p in points}
        records.append(End(points=len(points)))
    base = Path(runs_dir) if runs_dir is not None else mpaths.runs_dir(None)
    base.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    run_id = f"{stamp}-{secrets.token_hex(2)}"
    tmp = base / f".import-{run_id}.tmp"
    now = utc_now()
    tools = sorted({f"{TOOL_NAMES[f]} {pts[0].imported.tool_version}" for _, f, pts in files if pts[0].imported})
    meta = RunMeta(id=run_id, status="ok", started=now, finished=now, mpiscope_version=__version__,
                   points=sum(len(pts) for _, _, pts in files), exit_code=0,
                   extra={"imported": {"tools": tools, "mpi_label": mpi_label,
                                       "benchmarks": list(dict.fromkeys(p.benchmark for _, _, pts in files
                                                                        for p in pts)),
                                       "ranks": sorted({p.ranks for _, _, pts in files for p in pts}),
                                       "files": [{"path": str(path.resolve()), "format": f, "points": len(pts)}
                                                 for path, f, pts in files]}})
    try:
        tmp.mkdir()
        with open(tmp / RECORDS, "w") as f:
            for rec in records:
                f.write(json.dumps(to_json(rec)) + "\n")
        (tmp / "run.json").write_text(json.dumps(meta.to_json(), indent=1) + "\n")
        os.rename(tmp, base / run_id)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return base / run_id
