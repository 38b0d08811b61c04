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

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from mpiscope.util.errors import MpiscopeError, UsageError
from mpiscope.plan.describe import SPEC_KEYS, Description
from mpiscope.store.owner import claim
from mpiscope.plan.engine import STARTUP_S, engine_plan
from mpiscope.execute.planner import measurement
from mpiscope.execute.session import Measurement, Session, launch_argv
from mpiscope.plan.spec import Configuration, Spec, json_factors, varying
from mpiscope.store.runs import SWEEPS, ConfigRef, SweepDir, SweepEntry, SweepPlan, SweepRef, list_runs, utc_now



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
            run.update(status="interrupted", error="the sweep was killed during this launch; --resume ran it again")
    return sd


def _own(sd: SweepDir) -> None:
    """This process owns the sweep until it ends (`owner.release`, or its exit)."""
    claim(sd.path, f"sweep {sd.path.name}", "`mpiscope sweep SPEC --resume`")


class SweepProgress:
    """One bar over the whole sweep: configuration launches done and left, and time left."""

    def __init__(self, todo: list[tuple[Configuration, Measurement, int]], done_before: int, console: Console,
                 enabled: bool):
        self.bounds = [_upper_bound_s(m) + STARTUP_S for _, m, _ in todo]
        self.total = len(todo) + done_before
        self.done = done_before
        self.paces: list[float] = []
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[left]}"), console=console, transient=True,
                            # a bar only where it can be redrawn: rich ends one on a pipe or file
                            # with an empty line
                            disable=not (enabled and console.is_interactive))
        self.task = self.bar.add_task("sweep", total=self.total, completed=self.done, left="")
        self.i = 0

    def _left(self) -> str:
        left = self.bounds[self.i:]
        if not left:
            return "finishing"
        if self.paces:  # the measured pace, never above the time caps' bound
            pace = sum(self.paces) / len(self.paces)
            eta = f"~{math.ceil(sum(min(pace, b) for b in left))} s left"
        else:
            eta = f"<= {math.ceil(sum(left))} s left"
        return f"{len(left)} left, {eta}"

    def start(self, label: str) -> None:
        self.t0 = time.monotonic()
        self.bar.update(self.task, description=label, left=self._left())

    def finish(self) -> None:
        self.paces.append(time.monotonic() - self.t0)
        self.done += 1
        self.i += 1
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
              console: Console, progress: bool = True) -> SweepResult:
    """Measure every configuration not finished yet, each as one run in its launches; failures
    are logged and the sweep goes on; Ctrl-C stops after recording what was running."""
    done = sd.finished()
    todo = [(c, m, 1) for c, m in planned if (c.id, 1) not in done]
    result = SweepResult(sd, skipped=len(planned) - len(todo))
    bar = SweepProgress(todo, result.skipped, console, progress)
    with bar.bar:
        session = Session(runs_dir, console, progress=False)
        for config, m, k in todo:
            bar.start(f"{config.id} {config.label(varying([c for c, _ in planned]))}")
            ref = SweepRef(sd.plan().name, config.id, k, str(sd.path.resolve()))
            try:
                run, outcome = _launch(session, replace(m, sweep=ref), sd, config, k)
            except KeyboardInterrupt:
                sd.log(SweepEntry(config.id, k, status="interrupted", error="interrupted before the launch started"))
                result.interrupted = True
                break
            if run is None:
                result.failed.append(f"{config.id}: {outcome}")
                bar.finish()
                continue
            sd.log(SweepEntry(config.id, k, run=run.id, status=outcome.status, error=outcome.error))
            if outcome.status == "interrupted":
                result.interrupted = True
                break
            result.ran += 1
            if outcome.status != "ok":
                result.failed.append(f"{config.id}: {outcome.error} (run {run.id})")
            bar.finish()
    return result


def _launch(session: Session, m: Measurement, sd: SweepDir, config: Configuration, k: int):
    """One configuration launch; a launcher that cannot even start is recorded as a failed
    configuration."""
    try:
        from mpiscope.execute.refine import refinement
        refine = m.extra.get("description", {}).get("find_switches")
        return session.run(m, then=refinement(session, m.target) if refine else None)
    except MpiscopeError as e:
        sd.log(SweepEntry(config.id, k, status="failed", error=str(e)))
        return None, str(e)
