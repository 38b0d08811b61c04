"""Sweeps: every configuration of a spec measured as one run (in the launches its policy asks
for, as `mpiscope run` measures), one progress view, resumable.

A sweep directory holds the plan (sweep.json) and an append-only log
(results.jsonl) saying which configuration launch produced which run, so an
interrupted sweep resumes where it stopped. Runs themselves live in the runs
directory like any other run; `config_measurement` is the one step from a
configuration to a measurement, which the session runs here or a batch job runs
later.
"""
from __future__ import annotations

import math
import shlex
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from mpiscope.util.errors import UsageError
from mpiscope.plan.describe import SPEC_KEYS, Description
from mpiscope.store.owner import claim
from mpiscope.plan.engine import STARTUP_S, engine_plan
from mpiscope.execute.planner import measurement
from mpiscope.execute.interleave import Ended, interleave, marked, new_session
from mpiscope.execute.part import Outcome
from mpiscope.execute.session import Measurement, Session, Steps, launch_argv
from mpiscope.plan.spec import Configuration, Spec, json_factors, varying
from mpiscope.store.runs import SWEEPS, ConfigRef, SweepDir, SweepEntry, SweepPlan, SweepRef, Run, list_runs, utc_now



def config_description(spec: Spec, config: Configuration) -> Description:
    """The description of one configuration: the spec's [measure] with the configuration's
    levels (checked when the spec was read). `nodes` with a host list takes its first N hosts."""
    d = spec.measure
    levels: dict = {}
    env = dict(d.env)
    for name, level in config.factors.items():
        if name.startswith("env."):
            env[name[4:]] = level
        elif name == "engine_options":
            levels["engine_args"] = (*d.engine_args, *level)
        else:
            levels[SPEC_KEYS[name]] = level
    hosts, nodes = levels.get("hosts", d.hosts), levels.get("nodes")
    if hosts and nodes:
        if nodes > len(hosts):
            raise UsageError(f"nodes = {nodes} but only {len(hosts)} host(s) are given: add hosts or lower nodes")
        levels["hosts"] = hosts[:nodes]
    launches = spec.launches if spec.launches is not None else d.launches
    return replace(d, **levels, env=env, launches=launches, factors=json_factors(config.factors))


def config_measurement(spec: Spec, config: Configuration, room: bool = False,
                       oversubscribe: bool = False) -> Measurement:
    """What one configuration measures (`planner.measurement` of its description). With `room`,
    a rank count far beyond the cores and hosts is refused unless the spec or `oversubscribe`
    insists (a batch job's nodes are not known here, so a submitted sweep does not ask)."""
    try:
        d = config_description(spec, config)
        return measurement(replace(d, oversubscribe=d.oversubscribe or oversubscribe), room=room,
                           more_hosts="hosts or nodes in the spec",
                           room_hint=" (in a spec: oversubscribe = true under [measure])")
    except UsageError as e:
        raise UsageError(f"configuration {config.id} ({config.label(list(config.factors))}): {e}") from e


def plan_sweep(spec: Spec, configs: list[Configuration], room: bool = False,
               oversubscribe: bool = False) -> list[tuple[Configuration, Measurement]]:
    """Every configuration's measurement, all checked before anything is launched."""
    return [(c, config_measurement(spec, c, room, oversubscribe)) for c in configs]


def dry_run_lines(planned: list[tuple[Configuration, Measurement]]) -> list[str]:
    lines = []
    for config, m in planned:
        times = f" ({launches_words(m)}, each in its own order)" if m.policy.first_round > 1 else ""
        lines.append(f"# {config.id} {config.label(list(config.factors)) or '(no factors)'}{times}")
        for part in m.parts:
            argv, launch_env = launch_argv(m.target, part)
            env = " ".join(f"{k}={shlex.quote(v)}" for k, v in launch_env.items())
            lines.append((env + " " if env else "") + shlex.join(argv))
    return lines


def launches_words(m: Measurement) -> str:
    """How many launches a configuration's run makes, in words."""
    if m.policy.simulated:
        return "simulated: 1 launch, a second where a point's samples differ"
    if m.policy.auto:
        return f"auto launches: {m.policy.first_round}, then more where the interval is still wide"
    return f"{m.policy.count} launches"


def create_sweep_dir(runs_dir: Path, spec: Spec, configs: list[Configuration], launches: int | None,
                     spec_path: Path | None) -> SweepDir:
    """A new sweep directory holding the plan: NAME-YYYYmmdd-HHMMSS[-n] under runs_dir/sweeps."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    path = runs_dir / SWEEPS / f"{spec.name}-{stamp}"
    n = 1
    while path.exists():
        n += 1
        path = runs_dir / SWEEPS / f"{spec.name}-{stamp}-{n}"
    path.mkdir(parents=True)
    sd = SweepDir(path)
    _own(sd)
    sd.write(SweepPlan(spec.name, _refs(configs), spec.description, utc_now(), str(spec_path) if spec_path else None,
                       spec.source, str(runs_dir.resolve()), launches, varying(configs)))
    return sd


def _refs(configs: list[Configuration]) -> list[ConfigRef]:
    return [ConfigRef(c.id, json_factors(c.factors)) for c in configs]


def open_for_resume(runs_dir: Path, spec: Spec, configs: list[Configuration]) -> SweepDir:
    sd = SweepDir.latest(runs_dir, spec.name)
    if sd is None:
        raise UsageError(f"no sweep '{spec.name}' to resume in {runs_dir / SWEEPS}: run without --resume "
                         f"(or give the --runs-dir the sweep used)")
    _own(sd)  # before anything is marked: a live sweep's launches are not interrupted ones
    plan = sd.plan()
    if plan.configurations != _refs(configs) or (plan.spec_text or spec.source) != spec.source:
        raise UsageError(f"the spec changed since the sweep in {sd.path} started, so it cannot resume it: "
                         f"run without --resume to start a new sweep")
    # A launch that was running when the sweep was killed never finished: say so in its run.
    finished_runs = {e.run for e in sd.entries()}
    here = str(sd.path.resolve())
    for run in list_runs(Path(plan.runs_dir)):
        m = run.meta()
        if m.sweep is not None and m.sweep.dir == here and run.id not in finished_runs and m.status == "running":
            run.update(status="interrupted", error="the sweep was killed while measuring it; --resume finishes it")
    return sd


def _own(sd: SweepDir) -> None:
    """This process owns the sweep until it ends (`owner.release`, or its exit)."""
    claim(sd.path, f"sweep {sd.path.name}", "`mpiscope sweep SPEC --resume`")


class SweepProgress:
    """One bar over the whole sweep: configurations done and left, and time left."""

    def __init__(self, todo: list[tuple[Configuration, Measurement]], done_before: int, console: Console,
                 enabled: bool):
        self.bounds = {i: _upper_bound_s(m) + STARTUP_S for i, (_, m) in enumerate(todo)}
        self.total = len(todo) + done_before
        self.done = done_before
        self.t0 = time.monotonic()
        self.finished = 0
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[left]}"), console=console, transient=True,
                            # a bar only where it can be redrawn: rich ends one on a pipe or file
                            # with an empty line
                            disable=not (enabled and console.is_interactive))
        self.task = self.bar.add_task("sweep", total=self.total, completed=self.done, left="")

    def _left(self) -> str:
        left = list(self.bounds.values())
        if not left:
            return "finishing"
        if self.finished:  # the measured pace, never above the time caps' bound
            pace = (time.monotonic() - self.t0) / self.finished
            eta = f"~{math.ceil(sum(min(pace, b) for b in left))} s left"
        else:
            eta = f"<= {math.ceil(sum(left))} s left"
        return f"{len(left)} left, {eta}"

    def start(self, label: str) -> None:
        self.bar.update(self.task, description=label, left=self._left())

    def finish(self, i: int) -> None:
        self.bounds.pop(i, None)
        self.finished += 1
        self.done += 1
        self.bar.update(self.task, completed=self.done, left=self._left())


@dataclass
class SweepResult:
    sweep: SweepDir
    ran: int = 0
    skipped: int = 0
    failed: list[str] = field(default_factory=list)
    interrupted: bool = False


def _upper_bound_s(m: Measurement) -> float:
    """Sampling time if every point of every launch hits its cap (warm-up is extra)."""
    return m.over_launches(sum(engine_plan(m.target.engine, p.plan).bound_s() for p in m.parts))


def run_sweep(planned: list[tuple[Configuration, Measurement]], sd: SweepDir, runs_dir: Path,
              console: Console, progress: bool = True, seed: int | None = None) -> SweepResult:
    """Measure every configuration not finished yet, each as one run in its launches, side by
    side: their launches interleaved in randomised blocks (execute/interleave.py). A run cut off
    earlier is finished in place (what its parts still lack); failures are logged and the sweep
    goes on; Ctrl-C stops every configuration between its launches, each run saying so."""
    done = sd.finished()
    todo = [(c, m) for c, m in planned if (c.id, 1) not in done]
    result = SweepResult(sd, skipped=len(planned) - len(todo))
    session_id, drawn = new_session()
    seed = drawn if seed is None else seed
    cut = _cut_runs(sd, {c.id for c, _ in todo})
    labels = varying([c for c, _ in planned])
    session = Session(runs_dir, console, progress=False)
    bar = SweepProgress(todo, result.skipped, console, progress)

    def steps(config: Configuration, m: Measurement) -> Callable[[], Steps]:
        if config.id in cut:
            return lambda: session.resume_steps(cut[config.id])
        ref = SweepRef(sd.plan().name, config.id, 1, str(sd.path.resolve()))
        return lambda: steps_of(session, replace(m, sweep=ref, extra=marked(m.extra, session_id, seed, config.id)))

    def ended(e: Ended) -> None:
        config = todo[e.index][0]
        bar.finish(e.index)
        if e.run is None:
            status = "interrupted" if e.error == "interrupted" else "failed"
            sd.log(SweepEntry(config.id, 1, status=status, error=e.error))
            if status == "failed":
                result.failed.append(f"{config.id}: {e.error}")
            return
        outcome = e.outcome if e.outcome is not None else _whole(e.run)
        sd.log(SweepEntry(config.id, 1, run=e.run.id, status=outcome.status, error=outcome.error))
        if outcome.status == "interrupted":
            return
        result.ran += 1
        if outcome.status != "ok":
            result.failed.append(f"{config.id}: {outcome.error} (run {e.run.id})")

    with bar.bar:
        schedule = interleave([steps(c, m) for c, m in todo], seed, session_id, ended,
                              lambda i: bar.start(f"{todo[i][0].id} {todo[i][0].label(labels)}"),
                              {i: cut[c.id] for i, (c, _) in enumerate(todo) if c.id in cut})
    result.interrupted = schedule.interrupted
    return result


def _cut_runs(sd: SweepDir, configs: set[str]) -> dict[str, Run]:
    """The latest run of each unfinished configuration that was cut off (killed or interrupted),
    to be finished in place: its parts were written down before its first launch."""
    plan = sd.plan()
    here = str(sd.path.resolve())
    cut: dict[str, Run] = {}
    for run in list_runs(Path(plan.runs_dir)):
        m = run.meta()
        if m.sweep is not None and m.sweep.dir == here and m.sweep.config in configs and \
                m.status == "interrupted" and m.parts:
            if m.sweep.config not in cut or cut[m.sweep.config].meta().started < m.started:
                cut[m.sweep.config] = run
    return cut


def _whole(run: Run) -> Outcome:
    """A cut-off run that lacked nothing (cut after its last launch): it ended well."""
    if run.meta().status == "interrupted":
        run.update(status="ok", error=None, finished=utc_now())
    return Outcome(status="ok")


def steps_of(session: Session, m: Measurement) -> Steps:
    """One configuration's run, launch by launch (--find-switches rounds after its launches)."""
    from mpiscope.execute.refine import refinement
    refine = m.extra.get("description", {}).get("find_switches")
    return session.steps(m, then=refinement(session, m.target) if refine else None)
