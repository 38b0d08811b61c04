"""Where runs live: one directory per run with run.json, records.jsonl and stderr.txt, and
sweeps: one directory each with the plan (sweep.json) and which launch made which run.

Records are appended one complete line at a time, and run.json is replaced
atomically, so a reader never sees half a record; a damaged file is reported,
not fatal.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import socket
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from mpiscope.errors import UsageError

RUN_FILE = "run.json"
SWEEPS = "sweeps"                 # under the runs directory: one directory per sweep
SWEEP_FILE = "sweep.json"         # a sweep's plan
SWEEP_RESULTS = "results.jsonl"   # which configuration launch made which run
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


class SweepDir:
    """sweep.json (the plan) and results.jsonl (one line per configuration launch started or finished)."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def latest(cls, runs_dir: Path, name: str) -> "SweepDir | None":
        base = runs_dir / SWEEPS
        # NAME-YYYYmmdd-HHMMSS[-n] exactly: spec "osu" must not pick up a sweep of "osu-big"
        mine = re.compile(re.escape(name) + r"-\d{8}-\d{6}(-\d+)?")
        found = sorted(p for p in base.iterdir() if mine.fullmatch(p.name) and (p / SWEEP_FILE).is_file()) \
            if base.is_dir() else []
        return cls(found[-1]) if found else None

    def meta(self) -> dict:
        try:
            return json.loads((self.path / SWEEP_FILE).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise UsageError(f"{self.path} is not a sweep directory ({SWEEP_FILE}: {e})") from e

    def write(self, meta: dict) -> None:
        tmp = self.path / (SWEEP_FILE + ".tmp")
        tmp.write_text(json.dumps(meta, indent=1) + "\n")
        tmp.replace(self.path / SWEEP_FILE)

    def log(self, **entry) -> None:
        with open(self.path / SWEEP_RESULTS, "a") as f:
            f.write(json.dumps({"at": utc_now(), **entry}) + "\n")
            f.flush()

    def entries(self) -> list[dict]:
        try:
            lines = (self.path / SWEEP_RESULTS).read_text().splitlines()
        except OSError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut by a kill: that launch simply counts as not finished
        return out

    def finished(self) -> dict[tuple[str, int], dict]:
        """(configuration, launch) -> its last finished entry; interrupted launches are not finished."""
        done: dict[tuple[str, int], dict] = {}
        for e in self.entries():
            if e.get("event") == "finished" and e.get("status") != "interrupted":
                done[(e["config"], e["launch"])] = e
        return done

    def runs(self) -> list[tuple[dict, Run]]:
        """Every finished launch's entry and run, in plan order."""
        runs_dir = Path(self.meta()["runs_dir"])
        order = {c["id"]: i for i, c in enumerate(self.meta()["configurations"])}
        out = []
        for (cid, launch), e in sorted(self.finished().items(), key=lambda kv: (order.get(kv[0][0], 0), kv[0][1])):
            if e.get("run"):
                run = Run(runs_dir / e["run"])
                if run.path.is_dir():
                    out.append((e, run))
        return out


def is_sweep_dir(path: Path) -> bool:
    return (path / SWEEP_FILE).is_file()


def runs_of(refs: list[str], runs_dir: Path) -> list[Run]:
    """The runs a user names: run ids, unique prefixes, 'latest' or paths; a sweep directory
    stands for its finished runs, and a directory of run directories for all of them."""
    runs: list[Run] = []
    for ref in refs:
        p = Path(ref)
        if is_sweep_dir(p):
            found = [run for _, run in SweepDir(p).runs()]
            if not found:
                raise UsageError(f"the sweep in {p} has no finished run yet: run or resume it first")
            runs += found
        elif p.is_dir() and not (p / RUN_FILE).is_file():
            found = sorted({f.parent for f in p.glob(f"**/{RUN_FILE}")})
            if not found:
                raise UsageError(f"{p} holds no runs (no {RUN_FILE} under it): give run ids or run directories")
            runs += [Run(f) for f in found]
        else:
            runs.append(resolve(ref, runs_dir))
    return list({r.path.resolve(): r for r in runs}.values())
