"""Running the engine: launch it, stream its JSON Lines into the store, with progress,
a wall-clock limit, and a relaunch past any point that hangs.

The engine is the only judge of timing; this module only moves its records,
watches the clock, and notices launches that went wrong (singletons,
oversubscription, hangs, crashes).
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from mpiscope import __version__
from mpiscope.checks import misconfigurations
from mpiscope.errors import MpiscopeError
from mpiscope.launch import Job, Launch, launcher_for, local_cores
from mpiscope.mpi.library import MpiLibrary
from mpiscope.plan import STARTUP_S, Plan
from mpiscope.sizes import human_size
from mpiscope.store import RECORDS, STDERR, RecordWriter, Run, utc_now

SINGLETON_FIX = ("this launcher belongs to a different MPI than the engine's mpicc, so it started "
                 "separate 1-rank jobs: use --mpi with the library whose launcher this is, or register "
                 "the matching install with `mpiscope mpi add PREFIX`")
UNTRUSTWORTHY = ("more ranks than cores ({ranks} ranks, {cores} cores): ranks share cores, so these "
                 "timings are not trustworthy; use -n {cores} or fewer for real numbers")
_SEVERITY = {"ok": 1, "failed": 2, "interrupted": 3}
HANGS_BEFORE_GIVING_UP = 2
WATCHDOG_EXIT = 124  # the engine's watchdog ends every rank with this status


@dataclass
class Outcome:
    status: str = "running"  # ok | failed | hung | interrupted
    exit_code: int | None = None
    contexts: list[dict] = field(default_factory=list)
    points: int = 0
    skips: int = 0
    measured: list[tuple[str, int]] = field(default_factory=list)  # (benchmark, size) in order
    timeouts: list[dict] = field(default_factory=list)
    ended: bool = False
    partial_line: bool = False
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    stray: list[bytes] = field(default_factory=list)  # stdout lines that are not records


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
             extra_meta: dict | None = None, then: list[RunSpec] = ()) -> tuple[Run, Outcome]:
    """The one way mpiscope measures: a new run directory, the launch (relaunched past
    hangs), every record stored as it arrives; `then`: further parts of the same run,
    launched while all goes well (all are written down first, for --resume)."""
    launch = spec.launch(local_cores())
    run = Run.create(runs_dir, {
        "mpi": spec.lib.to_json(), "plan": spec.plan.to_json(), "env": spec.env,
        "launcher_args": spec.launcher_args, "placement": spec.placement, "factors": spec.factors,
        "launcher_command": launch.argv, "launcher_env": launch.env,
        "engine_command": [str(spec.engine), *spec.plan.engine_args()], "mpiscope_version": __version__,
        **(extra_meta or {})})
    tags = register_parts(run, [(part, None) for part in (spec, *then)])
    outcome = launch_into(run, spec, console, progress, tags[0], new_part=False)
    for part, tag in zip(then, tags[1:]):
        if outcome.status != "ok":
            break
        outcome = launch_into(run, part, console, progress, tag, new_part=False)
    return run, outcome


def launch_into(run: Run, spec: RunSpec, console: Console, progress: bool = True,
                tag: dict | None = None, new_part: bool = True) -> Outcome:
    """Launch `spec` and append its records (each carrying `tag`, e.g. a study's series) to `run`.

    A point that hangs ends its job (the engine's watchdog, or Python's wall-clock
    limit); the rest of the plan is then launched again from the next point, so a
    hang costs one point, not the run. A benchmark that hangs at two sizes in a row
    is not tried at larger ones: they are recorded as skipped."""
    cores = local_cores()
    if new_part:
        (tag,) = register_parts(run, [(spec, tag)])
    total = Outcome()
    queue_: list[RunSpec] = [spec]
    hangs: dict[str, int] = {}
    try:
        _launch_queue(run, queue_, hangs, total, console, cores, progress, tag)
    except BaseException as e:  # never leave a run marked running
        run.update(status="interrupted" if isinstance(e, KeyboardInterrupt) else "failed",
                   finished=utc_now(), error=str(e) or type(e).__name__)
        raise
    if total.status in ("running", "hung"):
        total.status = "ok"
        total.error = None
    meta = run.meta()  # a study launches into one run several times: add up, keep the worst status
    worst = max((meta.get("status"), total.status), key=lambda st: _SEVERITY.get(st, 0))
    run.update(status=worst, finished=utc_now(), exit_code=total.exit_code,
               points=meta.get("points", 0) + total.points,
               warnings=list(dict.fromkeys((meta.get("warnings") or []) + total.warnings)),
               error=meta.get("error") or total.error, timeouts=(meta.get("timeouts") or []) + total.timeouts)
    return total


def register_parts(run: Run, parts: list[tuple[RunSpec, dict | None]]) -> list[dict]:
    """Write down every part of a run before the first is launched (what --resume must finish,
    each with its own plan, environment and placement); the tags, numbered by part, that its
    records will carry."""
    known = run.meta().get("parts") or []
    tags = []
    for k, (spec, tag) in enumerate(parts, start=len(known)):
        tags.append({**(tag or {}), "part": k})
        known.append({"plan": spec.plan.to_json(), "env": spec.env, "launcher_args": spec.launcher_args,
                      "placement": spec.placement, "tag": tags[-1]})
    run.update(parts=known)
    return tags


def _launch_queue(run: Run, queue_: list[RunSpec], hangs: dict[str, int], total: Outcome, console: Console,
                  cores: int, progress: bool, tag: dict | None) -> None:
    while queue_:
        current = queue_.pop(0)
        launch = current.launch(cores)
        out = execute(current.plan, launch, run, console, cores, progress=progress, tag=tag)
        _merge(total, out)
        run.update(launches=(run.meta().get("launches") or []) + [{
            "argv": launch.argv, "status": out.status, "exit_code": out.exit_code,
            "points": out.points, "error": out.error, **({"tag": tag} if tag else {})}])
        for bench, _ in out.measured:
            hangs[bench] = 0
        if out.status == "hung":
            queue_[:] = _after_hang(current, out, hangs, run, tag, list(queue_))
        elif out.status in ("failed", "interrupted"):
            break


def _merge(total: Outcome, out: Outcome) -> None:
    total.exit_code = out.exit_code
    total.contexts += out.contexts
    total.points += out.points
    total.skips += out.skips
    total.timeouts += out.timeouts
    total.warnings = list(dict.fromkeys(total.warnings + out.warnings))
    if out.status in ("failed", "interrupted") or total.status == "running":
        total.status, total.error = out.status, out.error


def _after_hang(spec: RunSpec, out: Outcome, hangs: dict[str, int], run: Run, tag: dict | None,
                queue_: list[RunSpec]) -> list[RunSpec]:
    """The launches still to make after `spec`'s job hung: the rest of its plan, then `queue_`."""
    t = out.timeouts[-1]
    bench, size = t.get("benchmark"), t.get("size")
    plan = spec.plan
    if bench not in plan.benchmarks or "--npmin" in plan.engine_options:
        out.warnings.append(f"{bench} hung at {size} B; the rest of the plan was not relaunched "
                            f"(it is not resumable point by point with --npmin)")
        return queue_
    hangs[bench] = hangs.get(bench, 0) + 1
    later_sizes = [s for s in plan.sizes if s > size]
    rest: list[RunSpec] = []
    if hangs[bench] >= HANGS_BEFORE_GIVING_UP:
        queued = sorted({s for q in queue_ if q.plan.benchmarks == [bench] for s in q.plan.sizes})
        later_sizes = sorted(set(later_sizes) | set(queued))
        queue_ = [q for q in queue_ if q.plan.benchmarks != [bench]]
        if later_sizes:
            _store_skips(run, bench, later_sizes, t, tag)
            out.warnings.append(f"{bench} hung at {hangs[bench]} sizes in a row up to {human_size(size)}: "
                                f"larger sizes were not measured")
    elif later_sizes:
        # The next size alone, with the watchdog limit the engine would have derived had the
        # job gone on (a new job has no previous point and would wait 10 s or more).
        limit = float(t.get("limit_s") or 10) * max(1.0, later_sizes[0] / max(size, 1))
        rest.append(restrict(spec, [bench], later_sizes[:1], ["--timeout", f"{limit:.3f}"]))
        if later_sizes[1:]:
            rest.append(restrict(spec, [bench], later_sizes[1:]))
    later_benchmarks = plan.benchmarks[plan.benchmarks.index(bench) + 1:]
    if later_benchmarks:
        rest.append(restrict(spec, later_benchmarks, plan.sizes))
    return rest + queue_


def restrict(spec: RunSpec, benchmarks: list[str], sizes: list[int], more: list[str] | None = None) -> RunSpec:
    """The same launch for fewer benchmarks and sizes (in bytes), with `more` engine options."""
    opts, skip = [], False
    for a in spec.plan.engine_options:  # drop --units (the sizes are bytes) and any --timeout
        if skip:
            skip = False
        elif a in ("--units", "--timeout"):
            skip = True
        elif not a.startswith(("--units=", "--timeout=")):
            opts.append(a)
    plan = replace(spec.plan, benchmarks=benchmarks, sizes_expr=",".join(map(str, sizes)),
                   sizes=list(sizes), engine_options=opts + (more or []),
                   max_time=spec.plan.point_cap_s, time_budget=None)  # the per-point cap stays as it was
    return replace(spec, plan=plan)


def _store_skips(run: Run, bench: str, sizes: list[int], timeout: dict, tag: dict | None) -> None:
    writer = RecordWriter(run.path / RECORDS)
    try:
        for s in sizes:
            rec = {"type": "skip", "benchmark": bench, "size": s, "ranks": timeout.get("ranks"),
                   "reason": f"not measured: hung at {timeout.get('size')} B and below",
                   "source": "mpiscope", **(tag or {})}
            writer.append((json.dumps(rec) + "\n").encode())
    finally:
        writer.close()


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
        self.order = plan.order()
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


def execute(plan: Plan, launch: Launch, run: Run, console: Console, cores: int, progress: bool = True,
            tag: dict | None = None) -> Outcome:
    """One launch: its records appended to the run (merged with `tag`), its stderr kept."""
    out = Outcome()
    env = {**os.environ, **launch.env}
    writer = RecordWriter(run.path / RECORDS)
    stderr = open(run.path / STDERR, "ab")
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
    limit = plan.wall_limit_s()
    deadline = time.monotonic() + limit
    bar = _Progress(plan, console, progress)
    previous = _terminate_as_interrupt()
    try:
        with bar.bar:
            while True:
                if time.monotonic() > deadline:
                    _stop(proc)
                    if out.contexts:
                        _hang_without_record(plan, out, writer, round(limit, 1), "mpiscope wall-clock limit", tag)
                    else:  # nothing started: a launcher waiting for resources or an unreachable host
                        out.status = "failed"
                        out.error = (f"the launcher did not start the engine within mpiscope's limit of "
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
                _take(line, out, writer, bar, tag)
    except KeyboardInterrupt:
        out.status = "interrupted"
        out.error = "interrupted (Ctrl-C or a termination signal); every point measured so far is kept"
        _stop(proc)
    except BaseException:
        _stop(proc)  # whatever went wrong here, no rank outlives mpiscope
        raise
    finally:
        _restore(previous)
        out.exit_code = proc.wait() if out.status != "interrupted" else proc.poll()
        if out.exit_code == WATCHDOG_EXIT and out.contexts and not out.timeouts:
            # A rank's watchdog fired, but rank 0's record was lost with the job.
            _hang_without_record(plan, out, writer, None, "engine watchdog (its record was lost)", tag)
        writer.close()
        if out.stray:
            stderr.write(b"".join(b"[stdout] " + line for line in out.stray))
        stderr.close()
    _judge(plan, out, cores, launch.singleton_fix)
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


def _hang_without_record(plan: Plan, out: Outcome, writer: RecordWriter, limit: float | None, source: str,
                         tag: dict | None) -> None:
    """A hang nobody recorded (Python's own wall-clock limit, or a lost watchdog record): blame
    the point after the last one measured, and store a time-out record saying who saw it."""
    order = plan.order()
    done = len(out.measured) + out.skips
    bench, size = order[min(done, len(order) - 1)]
    rec = {"type": "timeout", "benchmark": bench, "size": size, "ranks": plan.ranks,
           "limit_s": limit, "source": source, **(tag or {})}
    writer.append((json.dumps(rec) + "\n").encode())
    out.timeouts.append(rec)


def _take(line: bytes, out: Outcome, writer: RecordWriter, bar: _Progress, tag: dict | None = None) -> None:
    if not line.endswith(b"\n"):
        if line.lstrip().startswith(b"{"):
            out.partial_line = True  # the engine died mid-record: never store half a record
        else:
            out.stray.append(line + b"\n")  # a launcher's last words without a newline
        return
    try:
        rec = json.loads(line)
    except ValueError:
        rec = None
    if not isinstance(rec, dict):
        out.stray.append(line)  # a launcher's message on stdout (Hydra's "BAD TERMINATION"): kept with stderr
        return
    if tag:
        rec.update(tag)
        line = (json.dumps(rec) + "\n").encode()
    writer.append(line)
    kind = rec.get("type")
    if kind == "context":
        out.contexts.append(rec)
    elif kind == "point":
        out.points += 1
        out.measured.append((rec.get("benchmark"), rec.get("size")))
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
    out.warnings += misconfigurations(ctx)
    if out.status in ("interrupted", "failed"):  # already judged while it ran
        return
    if len(out.contexts) > 1 or (ctx and ctx.get("world_size") != plan.ranks):
        sizes = sorted({c.get("world_size") for c in out.contexts})
        out.status = "failed"
        out.error = (f"asked for {plan.ranks} ranks but the engine ran as {len(out.contexts)} job(s) of "
                     f"{'/'.join(map(str, sizes))} rank(s): {singleton_fix or SINGLETON_FIX}")
    elif out.timeouts:
        t = out.timeouts[-1]
        out.status = "hung"
        out.warnings.append(
            f"{t.get('benchmark')} at {t.get('size')} B on {t.get('ranks')} ranks hung past the "
            f"{'engine watchdog' if 'source' not in t else t['source']} ({t.get('limit_s')} s): recorded as a "
            f"time-out (a deadlock, or a lost message); the run went on with the next point")
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
