"""Sweeps: every configuration of a spec launched (N times), one progress view, resumable.

A sweep directory holds the plan (sweep.json) and an append-only log
(results.jsonl) saying which configuration launch produced which run, so an
interrupted sweep resumes where it stopped. Runs themselves live in the runs
directory like any other run; `config_runspec` is the one step from a
configuration to a launch, kept separate so other back ends (batch scripts)
can reuse it.
"""
from __future__ import annotations

import math
import shlex
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from mpiscope.errors import MpiscopeError, UsageError
from mpiscope.execute import RunSpec, run_once
from mpiscope.launch import local_cores
from mpiscope.launch.placement import make_placement, placement_ranks
from mpiscope.mpi.library import MpiLibrary
from mpiscope.plan import STARTUP_S, default_ranks, make_plan
from mpiscope.spec import Configuration, Spec, json_factors, varying
from mpiscope.store import SWEEPS, SweepDir, list_runs, utc_now



@dataclass
class Tools:
    """Per MPI name: the library, its engine and the engine's registry (resolved once per sweep)."""
    libs: dict[str | None, MpiLibrary] = field(default_factory=dict)
    engines: dict[str | None, Path] = field(default_factory=dict)
    registries: dict[str | None, list[dict]] = field(default_factory=dict)


def prepare(configs: list[Configuration]) -> Tools:
    from mpiscope.mpi import find
    from mpiscope.mpi.build import build_engine
    from mpiscope.plan import registry
    tools = Tools()
    for name in dict.fromkeys(c.factors.get("mpi") for c in configs):
        lib = find(name)
        tools.libs[name] = lib
        tools.engines[name] = build_engine(lib.mpicc)
        tools.registries[name] = registry(tools.engines[name])
    return tools


def _placement(spec: Spec, f: dict) -> dict:
    """The configuration's Job placement fields, checked by the launchers' one placement check.
    `nodes` with a host list takes its first N hosts."""
    hosts = f.get("hosts", spec.measure.hosts)
    nodes = f.get("nodes")
    if hosts and nodes:
        if nodes > len(hosts):
            raise UsageError(f"nodes = {nodes} but only {len(hosts)} host(s) are given: add hosts or lower nodes")
        hosts = hosts[:nodes]
    return make_placement(launcher=f.get("launcher"), hosts=list(hosts) if hosts else None,
                          hostfile=f.get("hostfile", spec.measure.hostfile), nodes=nodes,
                          ranks_per_node=f.get("ranks_per_node"), mapping=f.get("mapping"),
                          binding=f.get("binding"))


def config_runspec(spec: Spec, config: Configuration, tools: Tools) -> RunSpec:
    """The launch of one configuration: its MPI, checked plan, environment, launcher args and placement."""
    f = config.factors
    name = f.get("mpi")
    m = spec.measure
    try:
        placement = _placement(spec, f)
        ranks = placement_ranks(placement, f.get("ranks"))
        if ranks is None:
            ranks = default_ranks(m.benchmarks, local_cores())
        plan = make_plan(m.benchmarks, m.sizes_expr(), ranks, tools.registries[name],
                         ci_target=m.ci_target, max_time=m.max_time, reps=m.reps, time_budget=m.time_budget,
                         check=m.check, raw=m.raw,
                         engine_options=[*m.engine_options, *f.get("engine_options", ())])
    except UsageError as e:
        raise UsageError(f"configuration {config.id} ({config.label(list(f))}): {e}") from e
    env = {n[4:]: v for n, v in f.items() if n.startswith("env.")}
    return RunSpec(tools.libs[name], tools.engines[name], plan, env, list(f.get("launcher_args", ())), placement,
                   json_factors(f))


def plan_sweep(spec: Spec, configs: list[Configuration]) -> list[tuple[Configuration, RunSpec]]:
    """Every configuration's RunSpec, all checked before anything is launched."""
    tools = prepare(configs)
    return [(c, config_runspec(spec, c, tools)) for c in configs]


def dry_run_lines(planned: list[tuple[Configuration, RunSpec]], launches: int) -> list[str]:
    cores = local_cores()
    lines = []
    for config, rs in planned:
        launch = rs.launch(cores)
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in launch.env.items())
        times = f" (x{launches} launches)" if launches > 1 else ""
        lines.append(f"# {config.id} {config.label(list(config.factors)) or '(no factors)'}{times}")
        lines.append((env + " " if env else "") + shlex.join(launch.argv))
    return lines


def create_sweep_dir(runs_dir: Path, spec: Spec, configs: list[Configuration], launches: int,
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
    sd.write({"name": spec.name, "description": spec.description, "created": utc_now(),
              "spec_file": str(spec_path) if spec_path else None, "spec_text": spec.source,
              "runs_dir": str(runs_dir.resolve()), "launches": launches,
              "varying": varying(configs),
              "configurations": [{"id": c.id, "factors": json_factors(c.factors)} for c in configs]})
    return sd


def open_for_resume(runs_dir: Path, spec: Spec, configs: list[Configuration]) -> SweepDir:
    sd = SweepDir.latest(runs_dir, spec.name)
    if sd is None:
        raise UsageError(f"no sweep '{spec.name}' to resume in {runs_dir / SWEEPS}: run without --resume "
                         f"(or give the --runs-dir the sweep used)")
    meta = sd.meta()
    want = [{"id": c.id, "factors": json_factors(c.factors)} for c in configs]
    if meta.get("configurations") != want or meta.get("spec_text", spec.source) != spec.source:
        raise UsageError(f"the spec changed since the sweep in {sd.path} started, so it cannot resume it: "
                         f"run without --resume to start a new sweep")
    # A launch that was running when the sweep was killed never finished: say so in its run.
    finished_runs = {e.get("run") for e in sd.entries()}
    here = str(sd.path.resolve())
    for run in list_runs(Path(meta["runs_dir"])):
        m = run.meta()
        if (m.get("sweep") or {}).get("dir") == here and run.id not in finished_runs and m.get("status") == "running":
            run.update(status="interrupted", error="the sweep was killed during this launch; --resume ran it again")
    return sd


class SweepProgress:
    """One bar over the whole sweep: configuration launches done and left, and time left."""

    def __init__(self, todo: list[tuple[Configuration, RunSpec, int]], done_before: int, console: Console,
                 enabled: bool):
        self.bounds = [rs.plan.upper_bound_s() + STARTUP_S for _, rs, _ in todo]
        self.total = len(todo) + done_before
        self.done = done_before
        self.paces: list[float] = []
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[left]}"), console=console, transient=True,
                            disable=not enabled)
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


def run_sweep(planned: list[tuple[Configuration, RunSpec]], sd: SweepDir, runs_dir: Path, launches: int,
              console: Console, progress: bool = True) -> SweepResult:
    """Launch every configuration `launches` times (skipping finished ones); failures are logged and
    the sweep goes on; Ctrl-C stops after recording what was running."""
    done = sd.finished()
    todo = [(c, rs, k) for k in range(1, launches + 1) for c, rs in planned if (c.id, k) not in done]
    result = SweepResult(sd, skipped=len(planned) * launches - len(todo))
    bar = SweepProgress(todo, result.skipped, console, progress)
    with bar.bar:
        for config, rs, k in todo:
            label = f"{config.id} {config.label(varying([c for c, _ in planned]))}"
            if launches > 1:
                label += f" launch {k}/{launches}"
            bar.start(label)
            meta = {"sweep": {"name": sd.meta()["name"], "dir": str(sd.path.resolve()), "config": config.id,
                              "launch": k}}
            try:
                run, outcome = _launch(rs, runs_dir, console, meta, sd, config, k)
            except KeyboardInterrupt:
                sd.log(event="finished", config=config.id, launch=k, run=None, status="interrupted",
                       error="interrupted before the launch started")
                result.interrupted = True
                break
            if run is None:
                result.failed.append(f"{config.id}: {outcome}")
                bar.finish()
                continue
            sd.log(event="finished", config=config.id, launch=k, run=run.id, status=outcome.status,
                   error=outcome.error)
            if outcome.status == "interrupted":
                result.interrupted = True
                break
            result.ran += 1
            if outcome.status != "ok":
                result.failed.append(f"{config.id} launch {k}: {outcome.error} (run {run.id})")
            bar.finish()
    return result


def _launch(rs: RunSpec, runs_dir: Path, console: Console, meta: dict, sd: SweepDir, config: Configuration,
            k: int):
    """run_once; a launcher that cannot even start is recorded as a failed configuration."""
    try:
        return run_once(rs, runs_dir, console, progress=False, extra_meta=meta)
    except MpiscopeError as e:
        sd.log(event="finished", config=config.id, launch=k, run=None, status="failed", error=str(e))
        return None, str(e)
