"""The one reader of records.jsonl: every line as its record class; a line that is cut short,
not JSON, or JSON of the wrong shape is a problem named by its line number, never a crash."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, TypeVar

from mpiscope.records.model import (Context, End, Failure, Point, Record, RecordError, Skip, Timeout,
                                    parse_record)

R = TypeVar("R")


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
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError) as e:
        raise RecordError(f"not JSON ({e})") from e
    return parse_record(data, number)


def read_records(path: Path) -> RecordFile:
    """Every valid record of `path`; each line that is not one becomes a problem."""
    out = RecordFile()
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        out.problems.append(f"{path}: {e.strerror or e}")
        return out
    lines = data.split(b"\n")
    last = lines.pop()  # what follows the final newline: empty unless the file was cut short
    name = Path(path).name
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.records.append(parse_line(line, number))
        except RecordError as e:
            out.problems.append(f"{name} line {number} is corrupt and was skipped ({e})")
    if last.strip():
        out.problems.append(f"{name} line {len(lines) + 1} is truncated (no newline) and was skipped")
    return out
