"""Where runs live: one directory per run with run.json, records.jsonl and stderr.txt.

Records are appended one complete line at a time, and run.json is replaced
atomically, so a reader never sees half a record; a damaged file is reported,
not fatal.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from mpiscope.errors import UsageError

RUN_FILE = "run.json"
RECORDS = "records.jsonl"
STDERR = "stderr.txt"


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Run:
    """A run directory on disk."""

    def __init__(self, path: Path):
        self.path = path

    @property
    def id(self) -> str:
        return self.path.name

    @classmethod
    def create(cls, runs_dir: Path, meta: dict) -> "Run":
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        path = runs_dir / f"{stamp}-{secrets.token_hex(2)}"
        path.mkdir(parents=True)
        run = cls(path)
        run.write_meta({"id": run.id, "status": "running", "started": utc_now(), "pid": os.getpid(),
                        "host": socket.gethostname(), **meta})
        return run

    def meta(self) -> dict:
        try:
            return json.loads((self.path / RUN_FILE).read_text())
        except (OSError, json.JSONDecodeError) as e:
            return {"id": self.id, "status": "unreadable", "error": f"{RUN_FILE}: {e}"}

    def write_meta(self, meta: dict) -> None:
        tmp = self.path / (RUN_FILE + ".tmp")
        tmp.write_text(json.dumps(meta, indent=1) + "\n")
        os.replace(tmp, self.path / RUN_FILE)

    def update(self, **changes) -> dict:
        meta = {**self.meta(), **changes}
        self.write_meta(meta)
        return meta

    def records(self) -> "Records":
        return read_records(self.path / RECORDS)


class RecordWriter:
    """Appends whole lines only; each is flushed and synced so a crash keeps everything before it."""

    def __init__(self, path: Path):
        self.f = open(path, "ab")

    def append(self, line: bytes) -> None:
        if not line.endswith(b"\n"):
            raise ValueError("only complete lines are stored")
        self.f.write(line)
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self) -> None:
        self.f.close()


@dataclass
class Records:
    records: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def of_type(self, kind: str) -> list[dict]:
        return [r for r in self.records if r.get("type") == kind]

    @property
    def context(self) -> dict | None:
        ctx = self.of_type("context")
        return ctx[0] if ctx else None


def read_records(path: Path) -> Records:
    """Every valid record; a truncated last line or corrupt line becomes a problem, not a crash."""
    out = Records()
    try:
        data = path.read_bytes()
    except OSError as e:
        out.problems.append(f"{path}: {e.strerror or e}")
        return out
    lines = data.split(b"\n")
    last = lines.pop()  # what follows the final newline: empty unless the file was cut short
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict):
                raise ValueError("not a JSON object")
            out.records.append(rec)
        except (ValueError, UnicodeDecodeError) as e:
            out.problems.append(f"{path.name} line {n} is corrupt and was skipped ({e})")
    if last.strip():
        out.problems.append(f"{path.name} line {len(lines) + 1} is truncated (no newline) and was skipped")
    return out


def list_runs(runs_dir: Path) -> list[Run]:
    if not runs_dir.is_dir():
        return []
    return sorted((Run(p) for p in runs_dir.iterdir() if (p / RUN_FILE).is_file()), key=lambda r: r.id)


def resolve(ref: str, runs_dir: Path) -> Run:
    """A run by path, by id, or by a unique prefix of its id."""
    p = Path(ref)
    if (p / RUN_FILE).is_file():
        return Run(p)
    runs = list_runs(runs_dir)
    exact = [r for r in runs if r.id == ref]
    if exact:
        return exact[0]
    matches = [r for r in runs if r.id.startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise UsageError(f"'{ref}' matches {len(matches)} runs ({', '.join(r.id for r in matches[:5])}): "
                         f"give more of the id")
    if ref == "latest" and runs:
        return runs[-1]
    raise UsageError(f"no run '{ref}' in {runs_dir}: `mpiscope runs` lists them, or give the run's path "
                     f"(or --runs-dir)")
