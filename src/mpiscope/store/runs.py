"""Where runs live: one directory per run with run.json (RunMeta), records.jsonl and
stderr.txt, and sweeps: one directory each with the plan (sweep.json) and which launch made
which run.

Records are appended one complete line at a time and run.json is replaced atomically, so a
reader never sees half of either; a damaged file is reported, not fatal.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import socket
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from mpiscope.util import atomic
from mpiscope.util import bounded
from mpiscope.util.bounded import Refused
from mpiscope.util.errors import UsageError
from mpiscope.mpi.library import MpiLibrary
from mpiscope.store.owner import LOCK_FILE, holder
from mpiscope.plan.engine import Part
from mpiscope.records import Record, RecordFile, read_records, to_json
from mpiscope.util.typed import ShapeError, dump, load

RUN_FILE = "run.json"
RUN_FORMAT = 2  # run.json with parts of typed plans (1: before the engine planned)
SWEEPS = "sweeps"                 # under the runs directory: one directory per sweep
SWEEP_FILE = "sweep.json"         # a sweep's plan
SWEEP_RESULTS = "results.jsonl"   # which configuration launch made which run
RECORDS = "records.jsonl"
STDERR = "stderr.txt"
MAX_META_BYTES = 256 << 20  # run.json, sweep.json, results.jsonl: a few MB for the largest sweep
STATUS_ORDER = {"ok": 1, "failed": 2, "interrupted": 3}  # the worse of two wins


def utc_now() -> str:
    # microseconds: runs of one configuration can start within a second of each other, and the
    # drift from run to run is learnt from the runs started before this one
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class SweepRef:
    """Which sweep, configuration and launch made a run."""
    name: str
    config: str
    launch: int
    dir: str | None = None


@dataclass
class LaunchLog:
    """One launch of the engine within a run, as it ended."""
    argv: list[str]
    status: str
    exit_code: int | None = None
    points: int = 0
    error: str | None = None
    tag: dict[str, Any] = field(default_factory=dict)
    limit_s: float | None = None  # mpiscope's wall-clock limit for the launch (docs/reliability.md)
    wall_s: float | None = None   # how long the launch ran, as mpiscope saw it


@dataclass
class RunMeta:
    """run.json: what a run is (its MPI, its parts, what tells it apart) and how it went."""
    id: str
    format: int = RUN_FORMAT
    status: str = "running"           # running | ok | failed | interrupted | unreadable
    started: str = ""
    finished: str | None = None
    pid: int | None = None
    host: str | None = None
    mpi: MpiLibrary | None = None
    mpiscope_version: str = ""
    parts: list[Part] = field(default_factory=list)
    keep_going: bool = False          # a failed part does not stop the next (a study's series)
    launches: list[LaunchLog] = field(default_factory=list)
    points: int = 0
    exit_code: int | None = None
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    timeouts: list[dict[str, Any]] = field(default_factory=list)
    factors: dict[str, Any] = field(default_factory=dict)
    sweep: SweepRef | None = None
    launcher_command: list[str] = field(default_factory=list)
    launcher_env: dict[str, str] = field(default_factory=dict)
    engine_command: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # what a study or a batch job adds

    def to_json(self) -> dict[str, Any]:
        out = dump(self)
        extra = out.pop("extra", {})
        if self.parts:  # for people and scripts: what the first part measures
            out["plan"] = out["parts"][0]["plan"]
        return {**extra, **out}

    @classmethod
    def from_json(cls, d: Any, run_id: str) -> "RunMeta":
        """ShapeError when `d` is not a run.json of this shape. A run.json of an older mpiscope
        reads, without the parts (its plans were written another way): it shows, not resumes."""
        if not isinstance(d, dict):
            raise ShapeError(f"{RUN_FILE} holds {type(d).__name__}, not an object")
        known = {f.name for f in fields(cls)}
        current = d.get("format") == RUN_FORMAT
        body = {**d, "id": d.get("id") or run_id, "parts": d.get("parts") if current else None}
        meta = load(cls, body, RUN_FILE)
        meta.extra = {k: v for k, v in d.items() if k not in known and k != "plan"}
        return meta


def new_run_id() -> str:
    """A new run's name: its UTC start to the second and 4 random hex digits (runs started in one
    second into one directory stay apart)."""
    return f"{datetime.now(timezone.utc).strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


class Run:
    """A run directory on disk."""

    def __init__(self, path: Path, copies: Sequence[Path] = ()):
        self.path = Path(path)
        self._records: tuple[tuple[int, int], RecordFile] | None = None
        self.copies = list(copies)  # copies of this run named with it, counted once: here (`distinct`)

    @property
    def id(self) -> str:
        return self.path.name

    @classmethod
    def create(cls, runs_dir: Path, meta: RunMeta | None = None) -> "Run":
        for _ in range(64):  # runs made within one second may draw the same 4 hex digits: draw again
            path = Path(runs_dir) / new_run_id()
            try:
                path.mkdir(parents=True)
                break
            except FileExistsError:
                continue
        else:
            raise UsageError(f"cannot create a run in {runs_dir}: every new run name tried exists already")
        run = cls(path)
        meta = meta or RunMeta(id=run.id)
        meta.id, meta.status, meta.started = run.id, "running", utc_now()
        meta.pid, meta.host = os.getpid(), socket.gethostname()
        run.write_meta(meta)
        return run

    def identity(self) -> tuple[str, str]:
        """What a copy of the run (`cp -r`) keeps: the id and start its run.json says. A run whose
        run.json says neither is only itself."""
        meta = self.meta()
        if meta.status == "unreadable" or not meta.started:
            return str(self.path.resolve()), ""
        return meta.id, meta.started

    def meta(self) -> RunMeta:
        try:
            text = bounded.read_regular(self.path / RUN_FILE, MAX_META_BYTES, "run.json")
            return RunMeta.from_json(bounded.loads(text), self.id)
        except Refused as e:
            return RunMeta(id=self.id, status="unreadable", error=f"{RUN_FILE} {e.strerror}")
        except (OSError, ValueError) as e:
            said = str(e)  # a shape error names the file already
            return RunMeta(id=self.id, status="unreadable",
                           error=said if said.startswith(RUN_FILE) else f"{RUN_FILE}: {said}")

    def write_meta(self, meta: RunMeta) -> None:
        """run.json replaced whole; on a full disk the run's reserve makes room for it."""
        atomic.write_atomic(self.path / RUN_FILE, json.dumps(meta.to_json(), indent=1) + "\n",
                            before_retry=lambda: atomic.release(self.path))

    def reserve(self) -> None:
        """Keep room aside while measuring, so that a disk filled by records still lets the run
        be marked failed."""
        atomic.reserve(self.path)

    def release(self) -> None:
        atomic.release(self.path)

    def update(self, **changes: Any) -> RunMeta:
        meta = self.meta()
        if meta.status == "unreadable":  # rewriting it would lose what it holds
            raise UsageError(f"run {self.id}: {meta.error}: repair or remove {self.path / RUN_FILE}")
        for k, v in changes.items():
            setattr(meta, k, v)
        self.write_meta(meta)
        return meta

    def records(self) -> RecordFile:
        """The run's records, read once for as long as the file does not change. Its problems
        name every damage a reader should warn about: lines skipped, and a run.json that cannot
        be read or counts points the records no longer hold."""
        try:
            st = (self.path / RECORDS).stat()
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError:
            recs = read_records(self.path / RECORDS)
        else:
            if self._records is None or self._records[0] != stamp:
                self._records = (stamp, read_records(self.path / RECORDS))
            recs = self._records[1]
        damage = self._meta_problems(recs) + [
            f"{copy} is a copy of this run (the same id and start in its {RUN_FILE}): its launches are counted "
            f"once, here, and the copy is left out" for copy in self.copies]
        return replace(recs, problems=[*recs.problems, *damage]) if damage else recs

    def _meta_problems(self, recs: RecordFile) -> list[str]:
        owner = holder(self.path)
        if owner is not None:  # what it holds so far, not what the run will hold
            return [f"still being measured by mpiscope pid {owner[0]} on host {owner[1]}: what is shown is "
                    f"partial, not the finished run"]
        meta = self.meta()
        if meta.status == "unreadable":
            return [f"{meta.error}: what the run measured with (MPI, plan, status) is unknown; its records "
                    f"are read as they are"]
        held = len(recs.points)
        if meta.points > held:  # records are written before run.json counts them
            return [f"{RUN_FILE} counts {meta.points} measured point(s) but {RECORDS} holds {held}: "
                    f"{meta.points - held} were lost"]
        return []

    def append(self, records: list[Record]) -> None:
        """Records mpiscope writes itself (skips after hangs, time-outs it saw, failures)."""
        writer = RecordWriter(self.path / RECORDS)
        try:
            for rec in records:
                writer.append((json.dumps(to_json(rec)) + "\n").encode())
        finally:
            writer.close()


class RecordWriter(atomic.LineAppender):
    """Appends whole records only, each synced; a fragment a crash left at the end is cut off
    first, so the next record starts on a line of its own (resume), and a record that does not
    fit (a full disk) is taken back."""


def measuring(meta: RunMeta) -> bool:
    """Is the mpiscope that measures this run still alive? Only a run marked running on this
    host can be; a pid taken over by another program (not an mpiscope) does not count."""
    if meta.status != "running" or not isinstance(meta.pid, int) or meta.pid <= 0 \
            or meta.host != socket.gethostname():
        return False
    try:
        os.kill(meta.pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return isinstance(meta.pid, int) and meta.pid < 2 ** 31
    try:
        cmdline = Path(f"/proc/{meta.pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc: the pid lives, that is all we can tell
    return b"mpiscope" in cmdline or b"pytest" in cmdline or b"python" in cmdline


def shown_status(meta: RunMeta, path: Path | None = None) -> str:
    """The status to show: a run marked running whose mpiscope is gone (killed, a crash of the
    machine) is `stopped`, which `run --resume` finishes. With the run's `path`, its owner.lock
    says whether its mpiscope lives."""
    if meta.status != "running":
        return meta.status
    if path is not None and (path / LOCK_FILE).exists():  # owned runs: the lock tells
        return "running" if holder(path) is not None else "stopped"
    if meta.host == socket.gethostname() and not measuring(meta):
        return "stopped"
    return meta.status


def list_runs(runs_dir: Path) -> list[Run]:
    if not runs_dir.is_dir():
        return []
    return sorted((Run(p) for p in runs_dir.iterdir() if (p / RUN_FILE).is_file()), key=_in_start_order)


def _in_start_order(run: Run) -> tuple[str, str, str]:
    """By the id's second, then by the start to the microsecond (ids of one second end in a
    random suffix; `latest` is the last)."""
    return run.id[:15], run.meta().started or "", run.id


def left_out(runs_dir: Path) -> list[str]:
    """Why `list_runs` leaves out directories that look like runs: their run.json is there but is
    not a regular file (a directory, a FIFO, a device, a broken link)."""
    if not runs_dir.is_dir():
        return []
    out = []
    for p in sorted(runs_dir.iterdir()):
        meta = p / RUN_FILE
        if os.path.lexists(meta) and not meta.is_file():
            try:
                bounded.read_regular(meta, MAX_META_BYTES, RUN_FILE)
            except OSError as e:
                out.append(f"{p.name}: {RUN_FILE} {e.strerror or e}")
    return out


def _named(ref: str) -> None:
    if not ref.strip():  # '' would be the current directory, or every run as a prefix
        raise UsageError("an empty run name: give a run id, a unique prefix of one, 'latest', or a run's path")


def resolve(ref: str, runs_dir: Path) -> Run:
    """A run by path, by id, or by a unique prefix of its id."""
    _named(ref)
    p = Path(ref)
    if (p / RUN_FILE).is_file():
        return Run(p)
    if os.path.lexists(p / RUN_FILE):  # a directory, a FIFO, a broken link: a run, but not one to read
        try:
            bounded.read_regular(p / RUN_FILE, MAX_META_BYTES, RUN_FILE)
        except OSError as e:
            raise UsageError(f"{p} cannot be read as a run ({RUN_FILE}: {bounded.why(e)}): give another run, "
                             f"or move {p / RUN_FILE} away") from None
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


@dataclass
class ConfigRef:
    """One configuration of a sweep: its id (c001 ...) and every factor's level."""
    id: str
    factors: dict[str, Any] = field(default_factory=dict)


@dataclass
class SweepPlan:
    """sweep.json: what a sweep measures, written before its first launch."""
    name: str
    configurations: list[ConfigRef]
    description: str = ""
    created: str = ""
    spec_file: str | None = None
    spec_text: str = ""
    runs_dir: str = ""
    launches: int | None = 1  # each configuration's run's launches; None: auto
    varying: list[str] = field(default_factory=list)


@dataclass
class SweepEntry:
    """A line of results.jsonl: a configuration launch submitted or finished, and its run."""
    config: str
    launch: int
    event: str = "finished"          # submitted | finished
    at: str = ""
    run: str | None = None
    status: str | None = None
    error: str | None = None
    job: int | None = None


class SweepDir:
    """sweep.json (the plan) and results.jsonl (one line per configuration launch submitted or finished)."""

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

    def plan(self) -> SweepPlan:
        try:
            text = bounded.read_regular(self.path / SWEEP_FILE, MAX_META_BYTES, "sweep.json")
            return load(SweepPlan, bounded.loads(text), str(self.path / SWEEP_FILE))
        except (OSError, ValueError) as e:
            raise UsageError(f"{self.path} is not a sweep directory this mpiscope wrote ({e})") from e

    def write(self, plan: SweepPlan) -> None:
        atomic.write_atomic(self.path / SWEEP_FILE, json.dumps(dump(plan), indent=1) + "\n")

    def log(self, entry: SweepEntry) -> None:
        entry.at = entry.at or utc_now()
        writer = atomic.LineAppender(self.path / SWEEP_RESULTS)
        try:
            writer.append((json.dumps(dump(entry)) + "\n").encode())
        finally:
            writer.close()

    def entries(self) -> list[SweepEntry]:
        try:
            lines = bounded.read_regular(self.path / SWEEP_RESULTS, MAX_META_BYTES, SWEEP_RESULTS).splitlines()
        except OSError:
            return []
        out = []
        for line in lines:
            try:
                out.append(load(SweepEntry, bounded.loads(line)))
            except ValueError:
                continue  # a line cut by a kill: that launch simply counts as not finished
        return out

    def finished(self) -> dict[tuple[str, int], SweepEntry]:
        """(configuration, launch) -> its last finished entry; interrupted launches are not finished."""
        return {(e.config, e.launch): e for e in self.entries()
                if e.event == "finished" and e.status != "interrupted"}

    def runs(self) -> list[tuple[SweepEntry, Run]]:
        """Every finished launch's entry and run, in plan order."""
        plan = self.plan()
        runs_dir = Path(plan.runs_dir) if plan.runs_dir else self.path.parent.parent
        order = {c.id: i for i, c in enumerate(plan.configurations)}
        out = []
        for (cid, launch), e in sorted(self.finished().items(), key=lambda kv: (order.get(kv[0][0], 0), kv[0][1])):
            if e.run is not None and (runs_dir / e.run).is_dir():
                out.append((e, Run(runs_dir / e.run)))
        return out


def is_sweep_dir(path: Path) -> bool:
    return (path / SWEEP_FILE).is_file()


def distinct(runs: Sequence[Run]) -> list[Run]:
    """`runs` with each run once: a copy of an earlier one (the same `identity`) is left out and
    named among that run's problems, so its launches are not counted twice."""
    first: dict[tuple[str, str], Run] = {}
    out = []
    for run in runs:
        kept = first.setdefault(run.identity(), run)
        if kept is run or kept.path.resolve() == run.path.resolve():  # one directory named twice: the caller refuses it
            out.append(run)
        elif run.path not in kept.copies:
            kept.copies.append(run.path)
    return out


def runs_of(refs: list[str], runs_dir: Path) -> list[Run]:
    """The runs a user names: run ids, unique prefixes, 'latest' or paths; a sweep directory
    stands for its finished runs, and a directory of run directories for all of them."""
    runs: list[Run] = []
    for ref in refs:
        _named(ref)
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
            runs += sorted((Run(f) for f in found), key=_in_start_order)
        else:
            run = resolve(ref, runs_dir)
            if any(r.path.resolve() == run.path.resolve() for r in runs):  # `table A A`: counted twice
                raise UsageError(f"run {run.id} is named twice ('{ref}' again): name each run once")
            runs.append(run)
    return distinct(list({r.path.resolve(): r for r in runs}.values()))
