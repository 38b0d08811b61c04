"""Running one launch: stream the engine's JSON Lines into the store, with progress and a wall-clock limit.

The engine is the only judge of timing; this module only moves its records,
watches the clock, and notices launches that went wrong (singletons,
oversubscription, crashes).
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from pathlib import Path

from mpiscope import __version__
from mpiscope.errors import MpiscopeError
from mpiscope.launch import Job, Launch, launcher_for, local_cores
from mpiscope.mpi.library import MpiLibrary
from mpiscope.plan import STARTUP_S, Plan
from mpiscope.sizes import human_size
from mpiscope.store import STDERR, RECORDS, RecordWriter, Run, utc_now

SINGLETON_FIX = ("this launcher belongs to a different MPI than the engine's mpicc, so it started "
                 "separate 1-rank jobs: use --mpi with the library whose launcher this is, or register "
                 "the matching install with `mpiscope mpi add PREFIX`")
UNTRUSTWORTHY = ("more ranks than cores ({ranks} ranks, {cores} cores): ranks share cores, so these "
                 "timings are not trustworthy; use -n {cores} or fewer for real numbers")


@dataclass
class Outcome:
    status: str = "running"  # ok | failed | timeout | interrupted
    exit_code: int | None = None
    contexts: list[dict] = field(default_factory=list)
    points: int = 0
    skips: int = 0
    timeouts: list[dict] = field(default_factory=list)
    ended: bool = False
    partial_line: bool = False
    warnings: list[str] = field(default_factory=list)
    error: str | None = None


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

    def __init__(self, plan: Plan, console: Console, enabled: bool):
        self.order = [(b, s) for b in plan.benchmarks for s in plan.sizes]
        self.cap = plan.point_cap_s
        self.start = time.monotonic()
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[left]}"), console=console, transient=True,
                            disable=not enabled)
        self.task = self.bar.add_task("starting", total=len(self.order), left="")
        self.done = 0
        self.first_at: float | None = None
        self.advance(0)

    def advance(self, n: int) -> None:
        now = time.monotonic()
        if n and self.first_at is None:
            self.first_at = now
        self.done += n
        left = len(self.order) - self.done
        if self.done >= 2 and self.first_at is not None:
            pace = (now - self.first_at) / (self.done - 1)
            eta = f"~{min(pace, self.cap + 1) * left:.0f} s left"
        else:
            eta = f"<= {left * self.cap + STARTUP_S:.0f} s left"
        bench, size = self.order[min(self.done, len(self.order) - 1)]
        what = "finishing" if left <= 0 else f"{bench} {human_size(size)}"
        self.bar.update(self.task, completed=self.done, description=what, left=eta)


@dataclass
class RunSpec:
    """One launch of the engine: which MPI, what to measure, how to launch it, and the
    factors (from a sweep or a study) that tell this run apart from its neighbours."""
    lib: MpiLibrary
    engine: Path
    plan: Plan
    env: dict[str, str] = field(default_factory=dict)
    launcher_args: list[str] = field(default_factory=list)
    placement: dict = field(default_factory=dict)  # Job fields: hosts, hostfile, ranks_per_node, mapping, binding
    factors: dict = field(default_factory=dict)

    def launch(self, cores: int) -> Launch:
        job = Job([str(self.engine), *self.plan.engine_args()], self.plan.ranks, self.env,
                  self.launcher_args, **self.placement)
        return launcher_for(self.lib, job.launcher).command(job, cores)


def run_once(spec: RunSpec, runs_dir: Path, console: Console, progress: bool = True,
             extra_meta: dict | None = None) -> tuple[Run, Outcome]:
    """The one way mpiscope launches the engine: a new run directory, the launch, its records stored."""
    cores = local_cores()
    launch = spec.launch(cores)
    run = Run.create(runs_dir, {
        "mpi": spec.lib.to_json(), "plan": spec.plan.to_json(), "env": spec.env,
        "launcher_args": spec.launcher_args, "placement": spec.placement, "factors": spec.factors,
        "launcher_command": launch.argv, "launcher_env": launch.env,
        "engine_command": [str(spec.engine), *spec.plan.engine_args()], "mpiscope_version": __version__,
        **(extra_meta or {})})
    return run, execute(spec.plan, launch, run, console, cores, progress=progress)


def execute(plan: Plan, launch: Launch, run: Run, console: Console, cores: int, progress: bool = True) -> Outcome:
    out = Outcome()
    env = {**os.environ, **launch.env}
    writer = RecordWriter(run.path / RECORDS)
    stderr = open(run.path / STDERR, "wb")
    try:
        proc = subprocess.Popen(launch.argv, stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
    except OSError as e:
        writer.close()
        stderr.close()
        raise MpiscopeError(f"cannot start the launcher {launch.argv[0]}: {e}: check the MPI with "
                            f"`mpiscope mpi show`") from e
    lines: "queue.Queue[bytes | None]" = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    deadline = time.monotonic() + plan.wall_limit_s()
    bar = _Progress(plan, console, progress)
    try:
        with bar.bar:
            while True:
                if time.monotonic() > deadline:
                    out.status = "timeout"
                    out.error = (f"the launch ran past mpiscope's wall-clock limit of {plan.wall_limit_s():.0f} s "
                                 f"and was stopped: lower --max-time or the number of sizes")
                    _stop(proc)
                    break
                try:
                    line = lines.get(timeout=0.2)
                except queue.Empty:
                    bar.advance(0)
                    continue
                if line is None:
                    break
                _take(line, out, writer, bar)
    except KeyboardInterrupt:
        out.status = "interrupted"
        out.error = "interrupted by the user; every point measured so far is kept"
        _stop(proc)
    finally:
        out.exit_code = proc.wait() if out.status != "interrupted" else proc.poll()
        writer.close()
        stderr.close()
    _judge(plan, out, cores, launch.singleton_fix)
    run.update(status=out.status, finished=utc_now(), exit_code=out.exit_code, points=out.points,
               warnings=out.warnings, error=out.error)
    return out


def _take(line: bytes, out: Outcome, writer: RecordWriter, bar: _Progress) -> None:
    if not line.endswith(b"\n"):
        out.partial_line = True  # the engine died mid-line: never store half a record
        return
    try:
        rec = json.loads(line)
    except ValueError:
        out.warnings.append(f"the engine printed a line that is not JSON; it was not stored: {line[:80]!r}")
        return
    if not isinstance(rec, dict):
        return
    writer.append(line)
    kind = rec.get("type")
    if kind == "context":
        out.contexts.append(rec)
    elif kind == "point":
        out.points += 1
        bar.advance(1)
    elif kind == "skip":
        out.skips += 1
        bar.advance(1)
    elif kind == "timeout":
        out.timeouts.append(rec)
    elif kind == "end":
        out.ended = True


def _judge(plan: Plan, out: Outcome, cores: int, singleton_fix: str = "") -> None:
    """Turn what came back into a status, warnings and an error naming the fix."""
    ctx = out.contexts[0] if out.contexts else {}
    # on several hosts only the engine knows each host's load; this machine's cores say nothing
    over = ctx.get("oversubscribed") or (plan.ranks > cores and len(ctx.get("hosts") or [0]) <= 1)
    if over:
        out.warnings.append(UNTRUSTWORTHY.format(ranks=plan.ranks, cores=ctx.get("cores_online", cores)))
    if out.status in ("timeout", "interrupted"):
        return
    if len(out.contexts) > 1 or (ctx and ctx.get("world_size") != plan.ranks):
        sizes = sorted({c.get("world_size") for c in out.contexts})
        out.status = "failed"
        out.error = (f"asked for {plan.ranks} ranks but the engine ran as {len(out.contexts)} job(s) of "
                     f"{'/'.join(map(str, sizes))} rank(s): {singleton_fix or SINGLETON_FIX}")
    elif out.timeouts:
        t = out.timeouts[0]
        out.status = "timeout"
        out.error = (f"{t.get('benchmark')} at {t.get('size')} B on {t.get('ranks')} ranks hung past the "
                     f"engine's watchdog ({t.get('limit_s')} s); points before it are kept")
    elif not out.contexts and out.exit_code == 2 and plan.ranks > 1:
        # Python checked every option and min_ranks first, so an engine that refuses to
        # start saw fewer ranks than asked: the launcher did not make one N-rank job.
        out.status = "failed"
        out.error = (f"the engine refused to start with {plan.ranks} ranks (exit 2, no job description); "
                     f"the likely cause: {singleton_fix or SINGLETON_FIX}")
    elif not out.contexts:
        out.status = "failed"
        out.error = (f"the launch failed (exit {out.exit_code}) before the engine started; "
                     f"see the launcher's stderr below")
    elif out.exit_code != 0 or not out.ended:
        out.status = "failed"
        cut = " (its last line was cut short and not stored)" if out.partial_line else ""
        out.error = (f"the engine stopped early (exit {out.exit_code}) after {out.points} point(s){cut}; "
                     f"the points measured are kept; see the launcher's stderr below")
    else:
        out.status = "ok"
