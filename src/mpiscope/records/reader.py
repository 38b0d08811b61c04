"""The one reader of records.jsonl: every line as its record class; a line that is cut short,
not JSON, or JSON of the wrong shape is a problem named by its line number, never a crash."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Hashable, Iterator, TypeVar

from orjson import loads as _fast_loads  # about 3 x json's speed on a records line; json reads what it refuses

from mpiscope.util import bounded, gcpause
from mpiscope.records.model import (Context, End, Failure, Point, Record, RecordError, Skip, Timeout,
                                    parse_record)

R = TypeVar("R")
MAX_RECORDS_BYTES = 4 << 30  # far beyond any run's records: a larger file is not one
MAX_LINE_BYTES = 64 << 20    # a point with every raw sample of a long run stays far below


@dataclass
class RecordFile:
    """What a records file holds: its records in order, and what could not be read."""
    records: list[Record] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def of(self, kind: type[R]) -> list[R]:
        return [r for r in self.records if isinstance(r, kind)]

    @property
    def context(self) -> Context | None:
        """The first launch's context (a run of several launches has one per launch)."""
        return next(iter(self.of(Context)), None)

    @property
    def contexts(self) -> list[Context]:
        return self.of(Context)

    @property
    def points(self) -> list[Point]:
        return self.of(Point)

    @property
    def skips(self) -> list[Skip]:
        return self.of(Skip)

    @property
    def timeouts(self) -> list[Timeout]:
        return self.of(Timeout)

    @property
    def ends(self) -> list[End]:
        return self.of(End)

    @property
    def failures(self) -> list[Failure]:
        return self.of(Failure)

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)


def parse_line(line: bytes | str, number: int = 0) -> Record:
    """One line as a record; ValueError (RecordError or a JSON error) when it is not one."""
    raw = line.encode("utf-8", "surrogateescape") if isinstance(line, str) else line
    if bounded.too_deep(raw):  # before the parser: nesting that deep would end in a RecursionError
        raise RecordError(f"nested deeper than {bounded.MAX_DEPTH} levels, which no record is")
    try:
        data = _fast_loads(raw)
    except ValueError:  # what orjson refuses and json reads (NaN, a BOM, a huge integer), or neither
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as e:
            raise RecordError(f"not JSON ({e})") from e
    return parse_record(data, number)


def read_records(path: Path) -> RecordFile:
    """Every valid record of `path`, read a line at a time; each line that is not one (cut
    short, damaged, longer or deeper than any record) becomes a problem."""
    out = RecordFile()
    try:
        f = bounded.open_regular(path, MAX_RECORDS_BYTES, "a run's records")
    except OSError as e:
        out.problems.append(f"{path}: {e.strerror or e}")
        return out
    name = Path(path).name
    with gcpause.paused():
        _read_lines(f, name, out)
    return out


def _read_lines(f: BinaryIO, name: str, out: RecordFile) -> None:
    repeats = Repeats(name)
    with f:
        for number, line in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), 1):
            if len(line) > MAX_LINE_BYTES:
                _skip_line(f)
                out.problems.append(f"{name} line {number} is longer than {MAX_LINE_BYTES >> 20} MiB, more than "
                                    f"any record, and was skipped")
                continue
            if not line.strip():
                continue
            if not line.endswith(b"\n"):
                out.problems.append(f"{name} line {number} is truncated (no newline) and was skipped")
                continue
            try:
                rec = parse_line(line, number)
            except RecordError as e:
                out.problems.append(f"{name} line {number} is corrupt and was skipped ({e})")
                continue
            if not isinstance(rec, Point) or repeats.first(rec, number):
                out.records.append(rec)
    if repeats.count:
        out.problems.append(repeats.said())


class Repeats:
    """Point records that repeat an earlier one of the same point, configuration and launch (the
    same key, rank order, sync and tag): a record is measured once, so a repeat is a copied line,
    and a copy with other figures would silently replace the measurement. The first is kept."""
    SHOWN = 3  # repeated points named in the warning
    TAGS_KEPT = 1 << 12

    def __init__(self, name: str):
        self.name = name
        self.seen: dict[Hashable, int] = {}               # identity -> line of its first record
        self.repeated: dict[Hashable, list] = {}          # identity -> [point, first line, repeats, first repeat]
        self.count = 0
        # id of a tag -> the tag and its hashable form: the points of a launch share one tag
        # (records.model), so a launch's points share one key part, worked out once
        self._tags: dict[int, tuple[Any, Hashable]] = {}

    def first(self, p: Point, number: int) -> bool:
        """True for the first record of its point; a repeat is counted."""
        hit = self._tags.get(id(p.tag))
        if hit is None or hit[0] is not p.tag:
            if len(self._tags) >= self.TAGS_KEPT:
                self._tags.clear()
            hit = self._tags[id(p.tag)] = (p.tag, _hashable(p.tag))
        ident = (p.benchmark, p.size, p.ranks, p.variant, p.order, p.sync, p.sample_from, hit[1])
        at = self.seen.setdefault(ident, number)
        if at == number:
            return True
        self.count += 1
        seen = self.repeated.setdefault(ident, [p, at, 0, number])
        seen[2] += 1
        return False

    def said(self) -> str:
        shown = [f"{p.benchmark} {p.size} B on {p.ranks} ranks{_where(p)} on line {at} again from line {again}"
                 + (f" ({n:,} times)" if n > 1 else "")
                 for p, at, n, again in list(self.repeated.values())[:self.SHOWN]]
        more = len(self.repeated) - len(shown)
        return (f"{self.name} holds {self.count:,} repeated point record(s) of {len(self.repeated):,} point(s) "
                f"({'; '.join(shown)}{f'; {more:,} more' if more else ''}): a point is recorded once per launch, "
                f"so each first record is kept and the repeats are left out")


def _hashable(tag: Any) -> Hashable:
    try:
        return frozenset(tag.items()) if tag else None
    except TypeError:  # a list in a tag
        return json.dumps(tag, sort_keys=True, default=str)


def _where(p: Point) -> str:
    launch = p.tag.get("launch") if p.tag else None
    return f", launch {launch}" if launch is not None else ""


def _skip_line(f: BinaryIO) -> None:
    """Read past the rest of an overlong line, a bounded piece at a time."""
    while True:
        piece = f.readline(1 << 20)
        if not piece or piece.endswith(b"\n"):
            return
