"""A directory of dated OSU or IMB output files as a series of runs, one run per file, read in
memory and stored nowhere (`mpiscope history DIR`, docs/history.md). A file's date is the one
its output states (IMB's `# Date :` line), else one in its name (2026-11-30, 20261130,
20261130-0215, 2026-11-30T02:15:00), else it is refused: a series cannot be ordered by guesses."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from mpiscope.importers.common import ImportFailed
from mpiscope.importers.files import MAX_IMPORT_BYTES, TOOL_NAMES, parse_file
from mpiscope.records import Context, End, RecordFile
from mpiscope.util import bounded

_NAME_DATE = re.compile(r"(?<!\d)(\d{4})-?(\d{2})-?(\d{2})(?:[T_ -]?(\d{2}):?(\d{2})(?::?(\d{2}))?)?(?!\d)")
_IMB_DATE = re.compile(r"^#\s*Date\s*:\s*(.+?)\s*$", re.MULTILINE)


def file_date(path: Path) -> str:
    """When the file's run was made, as ISO 8601 (UTC assumed): its stated date, else its name's."""
    head = bounded.read_regular(path, MAX_IMPORT_BYTES, "a benchmark's output")[:4096].decode("utf-8", "replace")
    stated = _IMB_DATE.search(head)
    if stated:
        try:
            return datetime.strptime(stated.group(1), "%a %b %d %H:%M:%S %Y").strftime("%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            pass
    for m in _NAME_DATE.finditer(path.name):
        y, mo, d, h, mi, s = (int(g) if g else 0 for g in m.groups())
        try:
            return datetime(y, mo, d, h, mi, s).strftime("%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            continue
    raise ImportFailed(path, 0, "no date in it or in its name (give files named like latency-2026-11-30.txt)")


@dataclass(frozen=True)
class _Meta:
    """What the history reads of an imported file's run.json, which it has none of."""
    started: str
    status: str = "ok"
    mpi: Any = None
    sweep: Any = None
    mpiscope_version: str = ""
    launcher_command: list[str] = field(default_factory=list)
    engine_command: list[str] = field(default_factory=list)
    launcher_env: dict[str, str] = field(default_factory=dict)
    factors: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FileRun:
    """One tool's output file as a run: its points with the context an import stores."""
    path: Path
    started: str
    fmt: str | None = None
    ranks: int | None = None

    @property
    def id(self) -> str:
        return self.path.name

    def meta(self) -> _Meta:
        return _Meta(self.started)

    def records(self) -> RecordFile:
        points = parse_file(self.path, self.fmt, self.ranks)
        first = points[0].imported if points else None
        tool = f"{TOOL_NAMES.get(first.tool, first.tool)} {first.tool_version}".strip() if first else ""
        ctx = Context(world_size=max([p.ranks for p in points] + [self.ranks or 1]), options={"tool": tool},
                      argv=(str(self.path),))
        return RecordFile([ctx, *points, End(points=len(points))])


def dated_runs(directory: Path, fmt: str | None = None, ranks: int | None = None) -> list[FileRun]:
    """Every regular file of `directory` (not below it) as a run, oldest first; ImportFailed for a
    file without a date. Hidden files are left out."""
    files = sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))
    if not files:
        raise ImportFailed(directory, 0, "holds no files: give a directory of OSU or IMB output files")
    return sorted((FileRun(p, file_date(p), fmt, ranks) for p in files), key=lambda r: (r.started, r.id))
