"""The one measurement session: find the MPI, build the engine, plan every part with the
engine, write the run down, launch the parts, store their records, and conclude (summary,
analysis, report). `mpiscope run`, `run --resume`, sweeps, studies and batch jobs all go
through it; what tells them apart is data: the parts, their tags, the run's factors, and
what to show at the end."""
from __future__ import annotations

import os
import random
import socket
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Generator, NamedTuple

from rich.console import Console

from mpiscope import __version__
from mpiscope.util.errors import MpiscopeError, UsageError
from mpiscope.execute.part import Outcome, Target, launch_of, run_part
from mpiscope.results.history import Earlier
from mpiscope.store.history import drift_sources
from mpiscope.store.machine import note_run
from mpiscope.results.points import drifts_kept
from mpiscope.results.view import Results, results_of
from mpiscope.mpi import find
from mpiscope.mpi.build import build_engine
from mpiscope.plan.engine import Part, PlanPoint, engine_plan, idle_ranks_note
from mpiscope.records import Point, Skip, Timeout
from mpiscope.plan.schedule import (AUTO_BUDGET_S, LEFT_OUT, LaunchPolicy, first_round_todo, launch_again,
                                   launch_count, launch_overhead_s, launch_parts, next_launch)
from mpiscope.store.owner import LOCK_FILE, Claim, claim
from mpiscope.util.paths import is_link_loop
from mpiscope.store.runs import STDERR, Run, RunMeta, SweepRef, measuring, utc_now

_targets: dict[str | None, Target] = {}


def target(mpi: str | None) -> Target:
    """The MPI library named (None: the default) and its engine, built once per session."""
    if mpi not in _targets:
        lib = find(mpi)
        _targets[mpi] = Target(lib, build_engine(lib.mpicc))
    return _targets[mpi]


@dataclass
class Measurement:
    """What one run measures and what tells it apart from its neighbours: everything a
    measuring command decides. Saved as JSON, it is what a batch job measures."""
    target: Target
    parts: list[Part]
    factors: dict[str, Any] = field(default_factory=dict)
    sweep: SweepRef | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # run.json additions: a study's config
    keep_going: bool = False  # a failed part does not stop the next (a study's series)
    policy: LaunchPolicy = field(default_factory=LaunchPolicy)  # how many launches of every part

    def over_launches(self, one_launch_s: float) -> float:
        """The time of the whole measurement from the time of one launch of every part: the
        first round's launches and, with auto launches, the budget for those that follow."""
        if self.policy.simulated:  # a second launch at most, of the points whose samples differ
            return one_launch_s
        more = (self.policy.budget_s or AUTO_BUDGET_S) if self.policy.auto else 0.0
        return self.policy.first_round * one_launch_s + more


def launch_argv(target: Target, part: Part) -> tuple[list[str], dict[str, str]]:
    """The launcher command (and the environment it adds) for every point of `part`."""
    launch = launch_of(target, part)
    return launch.argv, launch.env


def _resolver(run: Run) -> Callable[[str], list[Run]]:
    """Runs named as RUN1,RUN2,... (--history), looked up beside `run`."""
    from mpiscope.store.runs import resolve
    return lambda refs: [resolve(r.strip(), run.path.parent) for r in refs.split(",") if r.strip()]


class Session:
    """Measures into runs under `runs_dir`, reporting progress and warnings on `console`."""

    def __init__(self, runs_dir: Path, console: Console, progress: bool = True):
        self.runs_dir = Path(runs_dir)
        self.console = console
        self.progress = progress
        self._earlier_of: dict[tuple[str, str], Earlier] = {}  # run id, --history -> its earlier runs, read once

    # -- a new run ------------------------------------------------------------------------
    def start(self, m: Measurement) -> Run:
        """The run directory with every part written down before the first launch, so that
        --resume knows what a cut-off run still lacks; each part's tag gets its number."""
        parts = [replace(p, tag={**p.tag, "part": k}) for k, p in enumerate(m.parts)]
        for note in dict.fromkeys(idle_ranks_note(m.target.engine, p.plan) for p in parts):
            if note:
                self.console.print(f"note: {note}", markup=False)
        argv, env = launch_argv(m.target, parts[0])
        if m.target.lib.vendor == "SMPI":  # SimGrid's refusal is one line before the run exists
            from mpiscope.execute.simcheck import check_simulation
            check_simulation(m.target.lib, m.target.engine, parts)
        meta = RunMeta(id="", mpi=m.target.lib, mpiscope_version=__version__, parts=parts, keep_going=m.keep_going,
                       factors=m.factors, sweep=m.sweep, launcher_command=argv, launcher_env=env,
                       engine_command=[str(m.target.engine), *parts[0].plan.engine_args()], extra=m.extra)
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
            return Run.create(self.runs_dir, meta)
        except OSError as e:
            if is_link_loop(self.runs_dir):
                raise UsageError(f"cannot create a run in {self.runs_dir}: it is a symbolic link that loops back "
                                 f"to itself: remove the link, or give another --runs-dir") from e
            raise UsageError(f"cannot create a run in {self.runs_dir}: {e.strerror or e}: give a writable "
                             f"--runs-dir") from e

    def run(self, m: Measurement, announce: Callable[[Run], None] | None = None,
            between: Callable[[Run], Outcome] | None = None,
            then: Callable[[Run], Outcome] | None = None) -> tuple[Run, Outcome]:
        """A new run of every part of `m`, measured to its end (`steps`, one run alone)."""
        return drive(self.steps(m, announce, between, then))

    def steps(self, m: Measurement, announce: Callable[[Run], None] | None = None,
              between: Callable[[Run], Outcome] | None = None,
              then: Callable[[Run], Outcome] | None = None, linger: bool = False) -> Steps:
        """A new run of every part of `m` in the launches its policy asks for (a failed or
        interrupted part ends it, unless keep_going): a first round written down before the
        first launch (then `announce`d), then `between(run)` (the default run's refinement, which
        the auto launches count as spent), and with auto launches more while points need them;
        `then` (--find-switches rounds) measures more into the run once that ended well, still
        owned and still `running`, so no second mpiscope can claim it in between. It yields the
        run between its launches (a step is one launch, the last one ending the run), so that
        several runs can advance launch by launch side by side (execute/interleave.py); the time
        budget counts this run's own launches only. `linger` (side by side): once its own launches
        are done the run waits for the session's second stage (`_on_request`)."""
        clock = OwnClock()
        run = self.start(replace(m, parts=launch_parts(m.parts, m.target.engine, m.policy.first_round,
                                                              numbered=m.policy.simulated)))
        with own_run(run):
            if announce:
                announce(run)
            try:
                outcome = Outcome(status="ok")
                for k, group in enumerate(_by_launch(run.meta().parts)):
                    if k:
                        yield from clock.pause(run)
                    # past the first few launches, points the machine still disturbs are not measured again
                    todo = first_round_todo(run.records(), group, m.target.engine, m.policy)
                    if todo is not None:
                        group = _narrowed(run, group, todo, m.target.engine)
                    out = self.measure(run, m.target, group, m.keep_going)
                    outcome.merge(out)
                    if out.status == "interrupted" or (out.status == "failed" and not m.keep_going):
                        break
                after_first = None
                if between is not None and outcome.status == "ok":
                    yield from clock.pause(run)
                    after_first = clock()
                    outcome = between(run)
                if m.policy.auto and outcome.status == "ok":
                    outcome = yield from self._more_launches(run, m, clock, clock(), after_first)
                cut = False  # the session was cut while this run waited: nothing more is measured
                if linger and outcome.status == "ok":
                    outcome, cut = yield from self._on_request(run, m, clock)
                if outcome.status == "ok" and launch_count(run.records()) > 1:
                    run.update(extra={**run.meta().extra, "drift": self._earlier(run, m.policy.history).learn(run)})
                if outcome.status == "ok" and then is not None and not cut:
                    yield from clock.pause(run)
                    outcome = then(run)
                if outcome.status == "ok":
                    _note_machine(run)
            except KeyboardInterrupt:  # between launches: what was measured is whole; say it was cut
                error = "interrupted between launches; every point measured so far is kept"
                run.update(status="interrupted", error=error)
                outcome = Outcome(status="interrupted", error=error)
            _ended(run)
            self._earlier_of = {k: v for k, v in self._earlier_of.items() if k[0] != run.id}
        return run, outcome

    def _earlier(self, run: Run, history: str) -> Earlier:
        """The earlier runs `run` learns its drift from, read once for the whole run (they do not
        change while it measures): learning again after each launch reads only the run's own records."""
        key = (run.id, history)
        if key not in self._earlier_of:
            self._earlier_of[key] = Earlier(drift_sources(run, history, _resolver(run)))
        return self._earlier_of[key]

    def _more_launches(self, run: Run, m: Measurement, clock: "OwnClock", first_round_s: float,
                       refined_from: float | None = None) -> Steps:
        """Auto launches after the first round, one at a time while points need them and the
        budget allows (the default run's: `then_s` after its first round, the refinement's time
        counted as spent from `refined_from`: under four busy processes each refinement round
        took 3-7x its quiet time and filled its own share, and a budget that began after it let
        the loaded run pass twice its quiet time); how it ended is kept in run.json (`launch_policy`)."""
        first_round = [p for p in run.meta().parts if p.tag.get("launch") is not None]
        overhead = launch_overhead_s(run.records(), first_round_s)
        rng = random.Random()
        outcome = Outcome(status="ok")
        policy = m.policy
        started = 0.0
        if policy.then_s is not None:
            started = clock() if refined_from is None else refined_from
            policy = replace(policy, budget_s=policy.then_s)
        earlier = self._earlier(run, policy.history)
        while True:
            drift = drifts_kept({"drift": earlier.learn(run)})
            parts, why = next_launch(run.records(), [p for p in first_round if p.tag["launch"] == 0],
                                     m.target.engine, policy, clock() - started, overhead, rng, drift)
            if not parts:
                break
            yield from clock.pause(run)
            outcome = self.add_parts(run, m.target, parts)
            if outcome.status != "ok":
                why = f"a launch ended {outcome.status}"
                break
        meta = run.meta()
        run.update(extra={**meta.extra, "launch_policy": {
            "policy": "auto", "target": policy.target, "budget_s": policy.budget_s or AUTO_BUDGET_S,
            "launches": launch_count(run.records()), "stopped": why}})
        return outcome

    def _on_request(self, run: Run, m: Measurement, clock: "OwnClock"
                    ) -> Generator[Waiting, "set | bool | None", "tuple[Outcome, bool]"]:
        """A run whose own launches are done, side by side: it yields `Waiting(run)` and is sent
        the points a block of the session's second stage measures (one launch of them); None ends
        it, `CUT` ends it without what would follow (the session was interrupted meanwhile: its
        own launches are whole). Returns how it ended and whether it was cut (execute/interleave.py)."""
        first_round = [p for p in run.meta().parts if p.tag.get("launch") == 0]
        rng = random.Random()
        while True:
            points = yield from clock.wait(run)
            if not points or points is CUT:
                return Outcome(status="ok"), points is CUT
            parts = launch_again(first_round, m.target.engine, points, launch_count(run.records()), rng)
            if parts:
                outcome = self.add_parts(run, m.target, parts)
                if outcome.status != "ok":
                    return outcome, False

    def measure(self, run: Run, target: Target, parts: list[Part], keep_going: bool = False,
                todo: list[list[PlanPoint]] | None = None) -> Outcome:
        """Launch `parts` into `run`: each part's whole plan, or `todo[k]` of part k."""
        total = Outcome()
        for k, part in enumerate(parts):
            planned = engine_plan(target.engine, part.plan)
            entries = todo[k] if todo is not None else (None if part.points is None else part.entries(planned))
            if "launch" in part.tag:  # a deadlock found in one launch is not sought again in the next
                entries = _not_hung_before(run, part, part.entries(planned) if entries is None else entries)
            if not (planned.points if entries is None else entries):
                continue
            out = run_part(run, target, part, planned, entries, self.console, self.progress)
            total.merge(out)
            if out.status == "interrupted" or (out.status == "failed" and not keep_going):
                break
            if out.status == "failed":
                what = f"series {part.tag['series']}" if "series" in part.tag else f"part {k}"
                self.console.print(f"{what}: {out.error}; the run goes on", markup=False)
        if total.status == "running":
            total.status = "ok"
        return total

    def add_part(self, run: Run, target: Target, part: Part, launches: int = 1) -> Outcome:
        """One more part of a run already measured (refinement rounds) in `launches` launches
        numbered after the run's own (one launch: in plan order), written down first."""
        first = launch_count(run.records())
        if launches == 1 and first <= 1:
            return self.add_parts(run, target, [part])
        return self.add_parts(run, target, launch_parts([part], target.engine, launches, first=first))

    def add_parts(self, run: Run, target: Target, parts: list[Part]) -> Outcome:
        """More parts of a run already measured, written down first."""
        with own_run(run):
            meta = run.meta()
            parts = [replace(p, tag={**p.tag, "part": len(meta.parts) + k}) for k, p in enumerate(parts)]
            # measuring again: running until the last launch of these parts ends
            run.update(parts=meta.parts + parts, status="running" if meta.status == "ok" else meta.status)
            outcome = self.measure(run, target, parts)
            if meta.status == "ok":  # a run still running (more launches, refinement rounds) ends with its last
                _ended(run)
        return outcome

    # -- finishing a run that was cut short ---------------------------------------------------
    def resume(self, run: Run) -> Outcome | None:
        """Measure what each part of `run` still lacks, in its own directory and with its own
        options; None when nothing is left."""
        return drive(self.resume_steps(run))[1]

    def resume_steps(self, run: Run) -> Steps:
        """`resume`, yielding the run between its launches (as `steps`); returns (run, None)
        when nothing is left."""
        with own_run(run):
            meta = run.meta()
            if meta.status == "unreadable":
                raise UsageError(f"run {run.id} cannot be resumed: {meta.error}")
            if meta.status == "running" and _alive(meta) and not (run.path / LOCK_FILE).exists():
                # a run of an mpiscope before owner.lock: its pid is all there is to go by
                raise UsageError(f"run {run.id} is still being measured (mpiscope pid {meta.pid}): wait for it "
                                 f"to finish or stop it, then resume")
            if not meta.parts or meta.mpi is None:
                raise UsageError(f"run {run.id} has no plan that this mpiscope can resume (run.json of format "
                                 f"{meta.format}, or without parts): measure again")
            target_ = target(meta.mpi.name)  # the library it was measured with, found by name
            todo = remaining(run, target_, meta.parts)
            if not any(todo):
                return run, None
            run.update(status="running", error=None, pid=os.getpid(), host=socket.gethostname())
            outcome = Outcome(status="ok")
            try:
                lacking = [g for g in _by_launch(list(zip(meta.parts, todo))) if any(t for _, t in g)]
                for k, group in enumerate(lacking):
                    if k:
                        yield run
                    parts = [p for p, _ in group]
                    out = self.measure(run, target_, parts, meta.keep_going, todo=[t for _, t in group])
                    outcome.merge(out)
                    if out.status == "interrupted" or (out.status == "failed" and not meta.keep_going):
                        break
                if outcome.status == "ok":
                    _note_machine(run)
            except KeyboardInterrupt:  # between launches (interleaved): what was measured is whole
                error = "interrupted between launches; every point measured so far is kept"
                run.update(status="interrupted", error=error)
                outcome = Outcome(status="interrupted", error=error)
            _ended(run)
        return run, outcome


CUT = False  # sent to a lingering run (`Session._on_request`): the session was cut, end as measured


class Waiting(NamedTuple):
    """What a lingering run yields once its own launches are done: it waits to be sent the points
    of one more launch, or None (`Session._on_request`)."""
    run: Run


# A run measured launch by launch: it yields the run between its launches (or Waiting, when
# lingering) and returns the run and how it ended (execute/interleave.py advances several side by
# side).
Steps = Generator["Run | Waiting", "set | bool | None", "tuple[Run, Outcome | None]"]


def drive(steps: Steps) -> tuple[Run, Any]:
    """A run's steps taken one after another to its end: the run alone."""
    while True:
        try:
            next(steps)
        except StopIteration as end:
            return end.value


class OwnClock:
    """The time a run's own launches take: side by side with other runs, the wall clock would
    also count theirs against its budget."""

    def __init__(self) -> None:
        self.spent, self.since = 0.0, time.monotonic()

    def __call__(self) -> float:
        return self.spent + time.monotonic() - self.since

    def pause(self, run: Run) -> Generator[Run, None, None]:
        """Yield `run` to whoever advances it; the time until it resumes is not its own."""
        self.spent = self()
        yield run
        self.since = time.monotonic()

    def wait(self, run: Run) -> Generator[Waiting, "set | bool | None", "set | bool | None"]:
        """Yield `Waiting(run)` and return what it is sent; the wait is not the run's own time."""
        self.spent = self()
        sent = yield Waiting(run)
        self.since = time.monotonic()
        return sent


def _narrowed(run: Run, group: list[Part], todo: list[list[PlanPoint]], engine: Path) -> list[Part]:
    """A launch's parts as it measures them, each but the points `todo` leaves out
    (plan.schedule.first_round_todo), written down first: run.json then says what the launch
    measured, and a resume does not take the points left out for points still to measure; the
    points left out, with their launch, are kept in run.json's extra (`LEFT_OUT`) for the headline."""
    meta = run.meta()
    if meta.status == "unreadable":  # run.json damaged mid-run: `update` refuses in one line, naming it
        run.update()
    parts, left = list(meta.parts), list(meta.extra.get(LEFT_OUT) or [])
    out = []
    for part, entries in zip(group, todo):
        narrowed = replace(part, points=tuple(e.id for e in entries))
        kept = {e.id for e in entries}
        left += [[*e.key, part.tag["launch"]] for e in part.entries(engine_plan(engine, part.plan))
                 if e.id not in kept]
        parts[part.tag["part"]] = narrowed
        out.append(narrowed)
    run.update(parts=parts, extra={**meta.extra, LEFT_OUT: left})
    return out


def _by_launch(items: list) -> list[list]:
    """Parts (or (part, entries) pairs) grouped by launch number, in order: launch k of every part
    is one step. Parts without a launch number (one launch) form one group."""
    groups: dict[Any, list] = {}
    for item in items:
        part = item[0] if isinstance(item, tuple) else item
        groups.setdefault(part.tag.get("launch"), []).append(item)
    return list(groups.values())


DONE = (Point, Skip, Timeout)  # a time-out is a result too: resuming does not retry it


def _not_hung_before(run: Run, part: Part, entries: list[PlanPoint]) -> list[PlanPoint]:
    """`entries` without the points that hung in an earlier launch of the same configuration,
    nor the larger sizes of their series (a deadlock is a result: found once, it is not waited
    for again); those are recorded as skipped in this launch."""
    from mpiscope.results.points import tag_configuration
    cfg = tag_configuration(part.tag)
    hung: dict[tuple, int] = {}  # series -> smallest size that hung
    for t in run.records():
        if isinstance(t, Timeout) and t.hung and tag_configuration(t.tag) == cfg:
            series = (t.benchmark, t.ranks, t.variant)
            hung[series] = min(t.size, hung.get(series, t.size))
    if not hung:
        return entries
    keep, skipped = [], []
    for e in entries:
        limit = hung.get((e.benchmark, e.ranks, e.variant))
        (skipped if limit is not None and e.size >= limit else keep).append(e)
    if skipped:
        run.append([Skip(e.benchmark, e.size, e.ranks, f"not measured: hung at {hung[(e.benchmark, e.ranks, e.variant)]} B "
                         f"in an earlier launch", e.variant, "mpiscope", dict(part.tag)) for e in skipped])
    return keep


def remaining(run: Run, target: Target, parts: list[Part]) -> list[list[PlanPoint]]:
    """Per part, the entries of its plan (as the engine plans it now) that have no record yet."""
    records = [r for r in run.records() if isinstance(r, DONE)]
    out = []
    for part in parts:
        done = {r.key for r in records if all(r.tag.get(k) == v for k, v in part.tag.items())}
        out.append([e for e in part.entries(engine_plan(target.engine, part.plan)) if e.key not in done])
    return out


def own_run(run: Run) -> Claim:
    """This process owns `run` until the block ends: a second mpiscope cannot resume it meanwhile."""
    return claim(run.path, f"run {run.id}", f"`mpiscope run --resume {run.id}`")


def _note_machine(run: Run) -> None:
    """The run's control joins the machine's history, and what that history says of this run's
    states is kept in run.json (store.machine)."""
    if (states := note_run(run)) is not None:
        run.update(extra={**run.meta().extra, "machine_states": states})


def _ended(run: Run) -> None:
    """The last launch of a run ended well: it says ok only now (failed or interrupted stay)."""
    meta = run.meta()
    if meta.status == "running":
        run.update(status="ok", finished=utc_now())


def _alive(meta: RunMeta) -> bool:
    """Is the mpiscope that created the run still running (on this host)?"""
    return measuring(meta)


def finish(outcome: Outcome | None, run: Run, err: Console) -> int:
    """Exit status of a measuring command: 0, 130 after Ctrl-C, else an error with the
    launcher's last words."""
    if outcome is None:
        return 0
    if outcome.status == "interrupted":
        err.print(f"mpiscope: interrupted; the points measured so far are kept in {run.path}: "
                  f"`mpiscope run --resume {run.id}` finishes the run", markup=False, soft_wrap=True)
        return 130
    if outcome.error:
        tail = stderr_tail(run)
        if tail:
            err.print("launcher stderr (last lines):\n  " + "\n  ".join(tail), markup=False)
        meta = run.meta()
        said = f": {telling_line(tail)}" if tail and not meta.points else ""
        if meta.mpi.vendor == "SMPI" and not meta.points:  # SimGrid's reason comes before its backtrace
            from mpiscope.launchers.smpirun import simgrid_error
            reason = simgrid_error(stderr_head(run))
            said = f": SimGrid: {reason[:300]}" if reason != "no output" else said
        raise MpiscopeError(f"{outcome.error}{said}{doctor_hint(meta) if not meta.points else ''} "
                            f"(run kept in {run.path})")
    return 0


def doctor_hint(meta: RunMeta) -> str:
    """A run on named hosts that measured nothing: the command that finds the host at fault."""
    placement = meta.parts[0].placement if meta.parts else None
    if placement is not None and meta.mpi.vendor == "SMPI":  # the doctor of the simulated platform
        where = "".join(f" --{k} {v}" for k, v in (("platform", placement.platform), ("hostfile", placement.hostfile))
                        if v)
        return f"; `mpiscope doctor --mpi {meta.mpi.name}{where}` checks the simulated platform"
    if placement is not None and placement.hosts:
        return f"; `mpiscope doctor --hosts {','.join(placement.hosts)}` finds the host at fault"
    if placement is not None and placement.hostfile:
        return f"; `mpiscope doctor --hostfile {placement.hostfile}` finds the host at fault"
    return ""


def telling_line(lines: list[str]) -> str:
    """The launcher's reason in one line: its first line that is not a call trace of its own
    (Hydra prefixes those with [mpiexec@host], Open MPI frames them with dashes)."""
    for line in lines:
        text = line.strip()
        if text and not text.startswith(("[mpiexec@", "---", "***")) and "(/" not in text:
            return text[:300]
    return lines[0].strip()[:300]


def stderr_head(run: Run, chars: int = 64 << 10) -> str:
    """The start of the run's stderr.txt, where a simulator says why it stopped."""
    path = run.path / STDERR
    if not path.is_file():
        return ""
    with open(path, errors="replace") as f:
        return f.read(chars)


def stderr_tail(run: Run, lines: int = 15) -> list[str]:
    """The launcher's last words in the run's stderr.txt."""
    path = run.path / STDERR
    return path.read_text(errors="replace").strip().splitlines()[-lines:] if path.is_file() else []


# What a command shows of its run, given the run and its results (built once for every presenter
# and the report: results.view.results_of).
Presenter = Callable[[Run, Results], None]


def conclude(run: Run, outcome: Outcome | None, show: list[Presenter] = (), report: bool = True,
             report_path: Path | None = None) -> int:
    """The end of every measuring command: what the command shows of the run (its summary,
    model, a study's tables), the HTML report, where the run is kept, and the exit status. The
    run's results are built once, for all of them."""
    from mpiscope.util.console import err, out
    unwritten = None
    if outcome is not None and outcome.status == "failed" and not run.meta().points:
        show, report = [], False  # nothing was measured: no empty table, no report of nothing
    try:
        results = results_of([run]) if show or report else None
        for present in show:
            present(run, results)
        if report:
            try:
                write_report_quietly([run], report_path or run.path / "report.html", results)
            except MpiscopeError as e:
                unwritten = e
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP after the measurement: the run is whole
        err.print(f"mpiscope: interrupted; the run is kept in {run.path}"
                  f"{f' (no report: `mpiscope report {run.path}` writes it)' if report else ''}", markup=False)
        return 130
    out.print(f"saved in {run.path}")
    status = finish(outcome, run, err)
    if unwritten is not None:
        raise unwritten
    return status


def write_report_quietly(runs: list[Run], target_path: Path, results: Results | None = None) -> None:
    """report.html after a run or sweep (`results`: those of `runs`, when built already): a report
    with nothing to show is a warning; one the disk cannot take (full, read-only) is an error
    naming the fix, with nothing half-written left."""
    from mpiscope.util.console import out, warn
    from mpiscope.report.html import write_report
    if not runs:
        return
    try:
        path = write_report(runs if results is None else results, target_path)
    except ValueError as e:
        warn(f"no HTML report: {e}")
        return
    except OSError as e:  # a full or read-only disk is the user's to fix: not a quiet warning
        raise MpiscopeError(f"cannot write {target_path}: {e.strerror or e}; the measurements are kept: free "
                            f"some space, then `mpiscope report {' '.join(str(r.path) for r in runs)}`") from e
    out.print(f"report: {path}", markup=False)
