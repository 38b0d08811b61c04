"""Launching one part of a run: the engine's records streamed into the store as they arrive,
with progress, a wall-clock limit that follows the engine's progress, and relaunches past points
that hang.

The engine is the only judge of timing and of its plan; this module moves its records,
watches the clock, and notices launches that went wrong (singletons, oversubscription,
hangs, crashes). A relaunch names the plan entries still to measure with `--points`."""
from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from mpiscope.analysis.checks import split_job
from mpiscope.doctor.misconfig import misconfigurations
from mpiscope.util.errors import MpiscopeError
from mpiscope.launchers import Job, Launch, launcher_for, local_cores
from mpiscope.mpi.library import MpiLibrary
from mpiscope.plan.engine import STARTUP_S, Part, PlanPoint, Planned
from mpiscope.records import Context, End, Failure, Point, RecordError, Skip, Timeout, parse_line, to_json, with_tag
from mpiscope.records.model import STILL_PROGRESSING
from mpiscope.util.units import human_size
from mpiscope.store.runs import RECORDS, STATUS_ORDER, STDERR, LaunchLog, RecordWriter, Run, utc_now

SINGLETON_FIX = ("this launcher belongs to a different MPI than the engine's mpicc, so it started "
                 "separate 1-rank jobs: use --mpi with the library whose launcher this is, or register "
                 "the matching install with `mpiscope mpi add PREFIX`")
UNTRUSTWORTHY = ("more ranks than cores ({ranks} ranks, {cores} cores): ranks share cores, so these "
                 "timings are not trustworthy; use -n {cores} or fewer for real numbers")
HANGS_BEFORE_GIVING_UP = 2
WATCHDOG_EXIT = 124  # the engine's watchdog ends every rank with this status
# Under simulation the engine's watchdog counts host seconds, at least this many a point phase
# without --timeout (engine/src/sim.h's SIM_WATCHDOG_FLOOR_S), and start-up grows with the ranks
# (`Simulated.startup_s`).
SIM_WATCHDOG_FLOOR_S = 600.0
SIM_STARTUP_S = 60.0
SIM_STARTUP_RANKS2 = 25000.0  # ranks^2 / this: 42 s more at 1024 ranks, 671 s at 4096

SeriesKey = tuple[str, int, "str | None"]  # benchmark, ranks, variant: the sizes of one sweep


def series_of(p: PlanPoint | Timeout) -> SeriesKey:
    return (p.benchmark, p.ranks, p.variant)


@dataclass(frozen=True)
class Target:
    """The MPI library and the engine built with it."""
    lib: MpiLibrary
    engine: Path


@dataclass
class Outcome:
    status: str = "running"  # ok | failed | hung | interrupted
    exit_code: int | None = None
    contexts: list[Context] = field(default_factory=list)
    points: int = 0
    done: int = 0  # plan entries with a record (point or skip), in order
    timeouts: list[Timeout] = field(default_factory=list)
    ended: bool = False
    partial_line: bool = False
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    stray: list[bytes] = field(default_factory=list)  # stdout lines that are not records

    def merge(self, other: "Outcome") -> None:
        """Fold a later launch of the same part (or a later part) into this one."""
        self.exit_code = other.exit_code
        self.contexts += other.contexts
        self.points += other.points
        self.done += other.done
        self.timeouts += other.timeouts
        self.warnings = list(dict.fromkeys(self.warnings + other.warnings))
        if other.status in ("failed", "interrupted") or self.status == "running":
            self.status, self.error = other.status, other.error


@dataclass
class Launches:
    """One launch still to make: plan entries, whether they are the whole plan (no --points
    needed), and a watchdog limit fixed for it (the point after a hang)."""
    entries: list[PlanPoint]
    whole: bool = False
    timeout_s: float | None = None


def run_part(run: Run, target: Target, part: Part, planned: Planned, entries: list[PlanPoint] | None,
             console: Console, progress: bool = True) -> Outcome:
    """Measure `part` into `run`: every entry of its plan, or `entries` (what a resume still lacks).

    A point that hangs ends its job (the engine's watchdog, or Python's wall-clock limit, which
    passes only when nothing finished for it); the rest is launched again from the next entry,
    so a hang costs one point, not the run. A series (benchmark, ranks, variant) that hangs at
    two sizes in a row is not tried at larger ones: they are recorded as skipped."""
    cores = local_cores()
    total = Outcome()
    todo = [Launches(list(planned.points), whole=True) if entries is None else Launches(entries)]
    hangs: dict[SeriesKey, int] = {}
    hard = hard_limit_s(part, planned)
    run.reserve()
    try:
        while todo:
            current = todo.pop(0)
            timeout_s = None if hard else current.timeout_s  # a hard --timeout stays the user's
            sim = Simulated.of(run, part.plan.ranks) if target.lib.vendor == "SMPI" else None
            if sim is not None and timeout_s is None and not hard:
                timeout_s = sim.watchdog_s(current.entries)
            launch = launch_of(target, part, current.entries if not current.whole else None, timeout_s, cores)
            limit = launch_limit_s(planned, current.entries, timeout_s, sim)
            started = time.monotonic()
            out = execute(run, part, current.entries, launch, limit, planned, console, cores, progress,
                          timeout_s, hard, sim)
            total.merge(out)
            log = run.meta().launches + [LaunchLog(launch.argv, out.status, out.exit_code, out.points, out.error,
                                                   dict(part.tag), round(limit, 1),
                                                   round(time.monotonic() - started, 1))]
            run.update(launches=log)
            for entry in current.entries[:out.done]:
                hangs[series_of(entry)] = 0
            if out.status == "hung":
                todo = _after_hang(run, part, current.entries, out, hangs, todo)
            elif out.status in ("failed", "interrupted"):
                break
        if total.status in ("running", "hung"):
            total.status, total.error = "ok", None
        meta = run.meta()  # a run of several parts and launches: add up, keep the worst status
        # ok is the session's to say once the run's last launch ends; until then it is running
        worst = max((meta.status, "running" if total.status == "ok" else total.status),
                    key=lambda st: STATUS_ORDER.get(st, 0))
        # the points the records hold: a resumed run's fragment cut off is not counted twice
        run.update(status=worst, finished=utc_now(), exit_code=total.exit_code, points=len(run.records().points),
                   warnings=list(dict.fromkeys(meta.warnings + total.warnings)), error=meta.error or total.error,
                   timeouts=meta.timeouts + [to_json(t) for t in total.timeouts])
    except BaseException as e:  # never leave a run marked running
        why = _mark_stopped(run, e)
        if isinstance(e, OSError):
            raise MpiscopeError(f"{why} (run kept in {run.path})") from e
        raise
    finally:
        run.release()
    return total


@dataclass(frozen=True)
class Simulated:
    """What a simulated launch's limits rest on, all host seconds (the plan's estimates are
    simulated ones): its rank count, and what earlier launches of the run took a point."""
    ranks: int
    host_s: dict[tuple, float] = field(default_factory=dict)

    @classmethod
    def of(cls, run: Run, ranks: int) -> "Simulated":
        taken: dict[tuple, float] = {}
        for p in run.records().points:
            if p.host_s is not None:
                taken[p.key] = max(taken.get(p.key, 0.0), p.host_s)
        return cls(ranks, taken)

    @property
    def startup_s(self) -> float:
        """Start-up grows faster than the ranks: SimGrid creates every rank and the engine gathers
        their facts (a barrier's first record came after 3 s at 256 ranks and 18 s at 1024 on a
        loaded 2-core host, and its launch took 222 s beyond the point at 4096, niced: about
        ranks^1.7); the limit, quadratic, keeps 3 to 5 times that."""
        return SIM_STARTUP_S + self.ranks ** 2 / SIM_STARTUP_RANKS2

    def watchdog_s(self, entries: list[PlanPoint]) -> float | None:
        """The engine's watchdog for a launch of `entries` when an earlier launch of one of them
        took the host longer than the engine's floor allows: three times that (None: the floor
        does)."""
        longest = max((self.host_s.get(e.key, 0.0) for e in entries), default=0.0)
        return 3 * longest if 3 * longest > SIM_WATCHDOG_FLOOR_S else None

    def limit_s(self, planned: Planned, entries: list[PlanPoint], timeout_s: float | None) -> float:
        """Start-up, then each point three times its watchdog (host seconds under simulation:
        --timeout, else the engine's floor) or three times the host time an earlier launch of
        it took, whichever is longer; --timeout lengthens the start-up allowed too."""
        phase = timeout_s or planned.timeout_s or SIM_WATCHDOG_FLOOR_S
        points = sum(max(phase * e.phases, self.host_s.get(e.key, 0.0)) * 3 for e in entries)
        return max(self.startup_s, timeout_s or planned.timeout_s or 0.0) + points


def launch_limit_s(planned: Planned, entries: list[PlanPoint], timeout_s: float | None,
                   sim: Simulated | None = None) -> float:
    """Python's wall-clock limit for `entries` of one launch, always above the engine's own
    watchdog: the time in which something must finish (a launch starts, a point ends, the
    engine says its point still progresses), else the launch is hung. A relaunch after a hang
    passes `--timeout` for every entry, so its limit follows that timeout (each phase at it
    three times over, plus start-up), not the plan's. A simulated launch's is in host seconds
    (`Simulated`)."""
    if sim is not None:
        return sim.limit_s(planned, entries, timeout_s)
    limit = planned.wall_limit_s(entries)
    if timeout_s:
        limit = max(limit, 3 * timeout_s * sum(e.phases for e in entries) + 60)
    return limit


def hard_limit_s(part: Part, planned: Planned) -> float | None:
    """The user's `--timeout` when it is a hard limit (no `--timeout-extends`): the engine ends
    every point phase at it, progress or not. None: the limits follow progress."""
    return planned.timeout_s if planned.timeout_s and "--timeout-extends" not in part.plan.options else None


def _mark_stopped(run: Run, e: BaseException) -> str:
    """A launch ended by an exception (Ctrl-C, a full disk): the run is marked so, with the reason."""
    if isinstance(e, KeyboardInterrupt):
        status, why = "interrupted", "interrupted (Ctrl-C or a termination signal)"
    elif isinstance(e, OSError):
        status = "failed"
        why = f"{e.strerror or e}{f' ({e.filename})' if e.filename else ''}: mpiscope could not store the " \
              f"records; free some space, then `mpiscope run --resume {run.id}`"
    else:
        status, why = "failed", str(e) or type(e).__name__
    try:
        run.update(status=status, finished=utc_now(), error=why)
    except OSError:
        pass  # the original error says more than this one
    return why


def launch_of(target: Target, part: Part, entries: list[PlanPoint] | None = None, timeout_s: float | None = None,
              cores: int | None = None) -> Launch:
    """The launcher's argv and environment for `part`: every entry of its plan, or `--points`
    for some; with a watchdog limit fixed when given. That limit stands for the one the engine
    would have derived, so progress extends it as it would a derived one (--timeout-extends):
    a point a busy machine slowed is not a second hang in a row."""
    plan = part.plan.with_options("--timeout", f"{timeout_s:.3f}", "--timeout-extends") if timeout_s else part.plan
    program = [str(target.engine), *plan.engine_args(None if entries is None else [e.id for e in entries])]
    job = Job(program, plan.ranks, dict(part.env), list(part.launcher_args), **part.placement.job_fields())
    return launcher_for(target.lib, job.launcher).command(job, cores or local_cores())


def _after_hang(run: Run, part: Part, entries: list[PlanPoint], out: Outcome, hangs: dict[SeriesKey, int],
                todo: list[Launches]) -> list[Launches]:
    """The launches still to make after a job that hung at entries[out.done]."""
    t = out.timeouts[-1]
    hung = out.done
    if hung >= len(entries) or entries[hung].key != t.key:
        hung = next((i for i, e in enumerate(entries) if e.key == t.key), min(hung, len(entries) - 1))
    series = series_of(entries[hung])
    # a point stopped while it still progressed is no deadlock that repeats: it ends a row of hangs
    hangs[series] = hangs.get(series, 0) + 1 if t.hung else 0
    after = entries[hung + 1:]
    # the larger sizes of the series, smallest first (in a shuffled launch smaller ones may follow)
    same = sorted((e for e in after if series_of(e) == series and e.size > t.size), key=lambda e: e.size)
    if hangs[series] >= HANGS_BEFORE_GIVING_UP:
        given_up = same + [e for later in todo for e in later.entries if series_of(e) == series and e.size > t.size]
        if given_up:
            run.append([Skip(e.benchmark, e.size, e.ranks, f"not measured: hung at {t.size} B and below",
                             e.variant, "mpiscope", dict(part.tag)) for e in given_up])
            out.warnings.append(f"{t.benchmark} hung at {hangs[series]} sizes in a row up to "
                                f"{human_size(t.size)}: larger sizes were not measured")
        dropped = {id(e) for e in given_up}
        rest = [Launches([e for e in later.entries if id(e) not in dropped], timeout_s=later.timeout_s)
                for later in [Launches(after), *todo]]
        return [r for r in rest if r.entries]
    rest = []
    if same:
        # The next size alone, with the watchdog limit the engine would have derived had the
        # job gone on (a new job has no previous point and would wait 10 s or more).
        rest.append(Launches([same[0]], timeout_s=float(t.limit_s or 10) * max(1.0, same[0].size / max(t.size, 1))))
    others = [e for e in after if not same or e is not same[0]]
    if others:
        rest.append(Launches(others))
    return rest + todo


def _reader(stream, lines: "queue.Queue[bytes | None]") -> None:
    for line in iter(stream.readline, b""):
        lines.put(line)
    lines.put(None)


def _stop(proc: subprocess.Popen) -> None:
    """End the launcher and every rank it started: they share its process group."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


class _Progress:
    """The bar: which point is being measured, and how long is left (upper bound, then measured pace)."""

    def __init__(self, entries: list[PlanPoint], planned: Planned, console: Console, enabled: bool):
        self.entries = entries
        self.planned = planned
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[left]}"), console=console, transient=True,
                            # a bar only where it can be redrawn: rich ends one on a pipe or file
                            # with an empty line, one per launch
                            disable=not (enabled and console.is_interactive))
        self.task = self.bar.add_task("starting", total=len(entries), left="")
        self.done = 0
        self.first_at: float | None = None
        self.advance(0)

    def advance(self, n: int) -> None:
        now = time.monotonic()
        if n and self.first_at is None:
            self.first_at = now
        self.done += n
        left = len(self.entries) - self.done
        bound = self.planned.bound_s(self.entries[self.done:])
        if self.done >= 2 and self.first_at is not None:  # the measured pace, never above the bound
            pace = (now - self.first_at) / (self.done - 1)
            eta = f"~{min(pace * left, bound + left):.0f} s left"
        else:
            eta = f"<= {bound + STARTUP_S:.0f} s left"
        if left <= 0 or not self.entries:
            what = "finishing"
        else:
            e = self.entries[self.done]
            what = f"{e.benchmark}{' ' + e.variant if e.variant else ''} {human_size(e.size)}"
        self.bar.update(self.task, completed=self.done, description=what, left=eta)


class _Notices:
    """The engine's progress notices on the launch's stderr as they arrive: rank 0's watchdog
    says, at each limit its point outlives while it still finishes events, "still progressing:
    ... past its limit of S s: extended (slowed, not hung), events finished: N"."""

    def __init__(self, path: Path, start: int):
        self.file = open(path, "rb")
        self.file.seek(start)
        self.partial = b""

    def progressed(self) -> float | None:
        """The engine's limit of a point said to progress since the last look, else None."""
        text = self.partial + self.file.read()
        whole, _, self.partial = text.rpartition(b"\n")
        limits = [float(m.group(1)) for m in _NOTICE.finditer(whole)]
        return max(limits) if limits else None

    def close(self) -> None:
        self.file.close()


_NOTICE = re.compile(rb"still progressing: .*?past its limit of ([0-9.]+) s")


def execute(run: Run, part: Part, entries: list[PlanPoint], launch: Launch, limit: float, planned: Planned,
            console: Console, cores: int, progress: bool = True, timeout_s: float | None = None,
            hard: float | None = None, sim: Simulated | None = None) -> Outcome:
    """One launch: its records appended to the run (with the part's tag), its stderr kept. It is
    hung when nothing finished for `limit` (then for the limit of the entries still to measure):
    a record, or the engine's notice that its point still progresses, starts the limit again."""
    out = Outcome()
    # the engine ends its ranks when this mpiscope is gone (killed: nothing else would stop them)
    env = {**os.environ, **launch.env, "MPISCOPE_PARENT_PID": str(os.getpid()),
           "MPISCOPE_PARENT_HOST": socket.gethostname()}
    writer = RecordWriter(run.path / RECORDS)
    stderr = open(run.path / STDERR, "ab")
    stderr_from = stderr.tell()
    notices = _Notices(run.path / STDERR, stderr_from)
    try:
        proc = subprocess.Popen(launch.argv, stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
    except OSError as e:
        writer.close()
        stderr.close()
        notices.close()
        raise MpiscopeError(f"cannot start the launcher {launch.argv[0]}: {e}: check the MPI with "
                            f"`mpiscope mpi show`") from e
    lines: "queue.Queue[bytes | None]" = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    deadline = time.monotonic() + limit
    bar = _Progress(entries, planned, console, progress)
    previous = _terminate_as_interrupt()
    try:
        with bar.bar:
            while True:
                engine_limit = notices.progressed()
                if engine_limit is not None:  # the engine says so once per its limit: wait for that
                    limit = max(launch_limit_s(planned, entries[out.done:], timeout_s, sim), 3 * engine_limit)
                    deadline = time.monotonic() + limit
                if time.monotonic() > deadline:
                    _stop(proc)
                    if out.contexts:
                        _hang_without_record(part, entries, out, writer, round(limit, 1), "mpiscope wall-clock limit",
                                             run.path / STDERR, stderr_from)
                    else:  # nothing started: a launcher waiting for resources or an unreachable host
                        out.status = "failed"
                        out.error = (f"the simulation of {sim.ranks} ranks did not start within mpiscope's limit "
                                     f"of {limit:.0f} host seconds and was stopped: give --timeout S (host "
                                     f"seconds a point and its start-up may take) for a longer one, or fewer "
                                     f"ranks" if sim is not None else
                                     f"the launcher did not start the engine within mpiscope's limit of "
                                     f"{limit:.0f} s and was stopped: check the hosts, the allocation, or the "
                                     f"launcher's stderr below")
                    break
                try:
                    line = lines.get(timeout=0.2)
                except queue.Empty:
                    bar.advance(0)
                    continue
                if line is None:
                    break
                if _take(line, out, writer, bar, part.tag) and out.done < len(entries):
                    limit = launch_limit_s(planned, entries[out.done:], timeout_s, sim)
                    deadline = time.monotonic() + limit
    except KeyboardInterrupt:
        out.status = "interrupted"
        out.error = "interrupted (Ctrl-C or a termination signal); every point measured so far is kept"
        _stop(proc)
    except BaseException:
        _stop(proc)  # whatever went wrong here, no rank outlives mpiscope
        raise
    finally:
        _restore(previous)
        notices.close()
        out.exit_code = proc.wait() if out.status != "interrupted" else proc.poll()
        if out.exit_code == WATCHDOG_EXIT and out.contexts and not out.timeouts:
            # A rank's watchdog fired, but rank 0's record was lost with the job.
            _hang_without_record(part, entries, out, writer, None, "engine watchdog (its record was lost)")
        writer.close()
        if out.stray:
            stderr.write(b"".join(b"[stdout] " + line for line in out.stray))
        stderr.close()
    _judge(part, out, cores, launch.singleton_fix, hard)
    if out.status == "failed":
        _record_failure(run, part, entries, out)
    return out


def _terminate_as_interrupt() -> dict:
    """SIGTERM and SIGHUP (a batch system's time limit, a closed terminal) stop the job as
    Ctrl-C does: the ranks run in their own session and would outlive mpiscope otherwise."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, interrupt)
    return previous


def _restore(previous: dict) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def _hang_without_record(part: Part, entries: list[PlanPoint], out: Outcome, writer: RecordWriter,
                         limit: float | None, source: str, stderr: Path | None = None, stderr_from: int = 0) -> None:
    """A hang nobody recorded (Python's own wall-clock limit, or a lost watchdog record): blame
    the entry after the last one recorded, and store a time-out record saying who saw it. When
    the engine said on the launch's stderr (from stderr_from on) that the point was still
    progressing past its watchdog limit, the record says so: slowed, not hung."""
    e = entries[min(out.done, len(entries) - 1)]
    if stderr is not None and _still_progressing(e, stderr, stderr_from):
        source = STILL_PROGRESSING
    t = Timeout(e.benchmark, e.size, e.ranks, limit, e.variant, source, dict(part.tag))
    writer.append((json.dumps(to_json(t)) + "\n").encode())
    out.timeouts.append(t)


def _still_progressing(e: PlanPoint, stderr: Path, start: int) -> bool:
    """The engine's watchdog extended `e` in this launch (engine/src/watchdog.c's notice)."""
    with open(stderr, "rb") as f:
        f.seek(start)
        said = f.read().decode(errors="replace")
    variant = f" {e.variant}" if e.variant else ""
    return f"still progressing: {e.benchmark} {e.size} B on {e.ranks} ranks{variant}," in said


def _record_failure(run: Run, part: Part, entries: list[PlanPoint], out: Outcome) -> None:
    """A failed launch leaves a record saying so, and which point it was at when known."""
    at = entries[out.done] if out.contexts and out.done < len(entries) else None
    run.append([Failure(out.error or "the launch failed", out.exit_code,
                        at.benchmark if at else None, at.size if at else None, at.ranks if at else None,
                        at.variant if at else None, "mpiscope", dict(part.tag))])


def _take(line: bytes, out: Outcome, writer: RecordWriter, bar: _Progress, tag: dict) -> bool:
    """Store one line of the engine's; True when it finished a plan entry (a point or a skip)."""
    if not line.endswith(b"\n"):
        if line.lstrip().startswith(b"{"):
            out.partial_line = True  # the engine died mid-record: never store half a record
        else:
            out.stray.append(line + b"\n")  # a launcher's last words without a newline
        return False
    try:
        rec = parse_line(line)
    except RecordError:
        out.stray.append(line)  # a launcher's message on stdout (Hydra's "BAD TERMINATION"): kept with stderr
        return False
    if tag:
        line = (json.dumps(with_tag(json.loads(line), tag)) + "\n").encode()
    writer.append(line)
    if isinstance(rec, Context):
        out.contexts.append(rec)
    elif isinstance(rec, (Point, Skip)):  # a plan entry done, measured or not
        out.points += isinstance(rec, Point)
        out.done += 1
        bar.advance(1)
        return True
    if isinstance(rec, Timeout):
        out.timeouts.append(rec)
    elif isinstance(rec, End):
        out.ended = True
    return False


def _judge(part: Part, out: Outcome, cores: int, singleton_fix: str = "", hard: float | None = None) -> None:
    """Turn what came back into a status, warnings and an error naming the fix (`hard`: the
    user's --timeout, a limit that ends a point whether it progresses or not)."""
    ranks = part.plan.ranks
    ctx = out.contexts[0] if out.contexts else None
    # on several hosts only the engine knows each host's load; this machine's cores say nothing
    over = ctx.oversubscribed if ctx else False
    if over or (ranks > cores and (ctx is None or len(ctx.hosts) <= 1)):
        out.warnings.append(UNTRUSTWORTHY.format(ranks=ranks, cores=ctx.cores_online if ctx and ctx.cores_online
                                                 else cores))
    if ctx is not None:
        out.warnings += misconfigurations(ctx)
    if out.status in ("interrupted", "failed"):  # already judged while it ran
        return
    if split_job([c.world_size for c in out.contexts], ranks):
        sizes = sorted({c.world_size for c in out.contexts})
        out.status = "failed"
        out.error = (f"asked for {ranks} ranks but the engine ran as {len(out.contexts)} job(s) of "
                     f"{'/'.join(map(str, sizes))} rank(s): {singleton_fix or SINGLETON_FIX}")
    elif out.timeouts:
        t = out.timeouts[-1]
        out.status = "hung"
        out.warnings.append(
            f"{t.benchmark} at {t.size} B on {t.ranks} ranks did not finish within the hard limit of --timeout "
            f"{hard:g} s per phase (progress or not): recorded as a time-out (a deadlock, a lost message, or a "
            f"point slower than that limit); the run went on with the next point" if hard and t.source is None else
            f"{t.benchmark} at {t.size} B on {t.ranks} ranks hung past the "
            f"{t.source or 'engine watchdog'} ({t.limit_s} s): recorded as a "
            f"time-out (a deadlock, or a lost message); the run went on with the next point" if t.hung else
            f"{t.benchmark} at {t.size} B on {t.ranks} ranks was still progressing, slowed by a busy machine, when "
            f"mpiscope's wall-clock limit ({t.limit_s} s without a finished point) stopped it: recorded as a "
            f"time-out that is not a hang (larger sizes are still measured); the run went on with the next point")
    elif ctx is None and out.exit_code == 2 and ranks > 1:
        # The engine checked every option against the ranks (--plan) before the launch, so an
        # engine that refuses to start saw fewer ranks than asked: not one N-rank job.
        out.status = "failed"
        out.error = (f"the engine refused to start with {ranks} ranks (exit 2, no job description); "
                     f"the likely cause: {singleton_fix or SINGLETON_FIX}")
    elif ctx is None:
        out.status = "failed"
        out.error = f"the launch failed (exit {out.exit_code}) before the engine started"
    elif out.exit_code != 0 or not out.ended:
        out.status = "failed"
        cut = " (its last line was cut short and not stored)" if out.partial_line else ""
        out.error = (f"the engine stopped early (exit {out.exit_code}) after {out.points} point(s){cut}; "
                     f"the points measured are kept; the launcher's last lines are above")
    else:
        out.status = "ok"
