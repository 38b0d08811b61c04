"""Batch submission: one sbatch script per configuration, each running `mpiscope batch-run`
inside its allocation, so the results land in the same run store as interactive runs.

A configuration is a RunSpec; it is saved as JSON beside its script (the job needs no
command line rebuilt from options), and the job launches it with srun by default,
since it runs inside the allocation.
"""
from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console

from mpiscope.errors import MpiscopeError, UsageError
from mpiscope.execute import RunSpec
from mpiscope.mpi.library import MpiLibrary
from mpiscope.plan import Plan

SYSTEMS = ("slurm",)
BATCH_DIR = "batch"  # under the runs directory: scripts, saved configurations, job logs
START_MARGIN_S = 120  # queue-side start-up: the job's Python, the launcher, MPI_Init on many nodes


# -- a configuration saved for the job ------------------------------------------------------

def spec_to_json(spec: RunSpec, meta: dict | None = None, then: list[RunSpec] | None = None) -> dict:
    """The RunSpec, `meta` for the run's run.json (a sweep's name, directory, configuration),
    and the launches that follow it into the same run (the default run's collectives)."""
    return {"lib": spec.lib.to_json(), "engine": str(spec.engine),
            "plan": {**spec.plan.to_json(), "sizes": spec.plan.sizes}, "env": spec.env,
            "launcher_args": spec.launcher_args, "placement": spec.placement, "factors": spec.factors,
            "meta": meta or {}, "then": [spec_to_json(t) for t in then or []]}


def spec_from_json(d: dict) -> RunSpec:
    known = {f.name for f in fields(Plan)}
    plan = Plan(**{k: v for k, v in d["plan"].items() if k in known})
    return RunSpec(MpiLibrary.from_json(d["lib"]), Path(d["engine"]), plan, d.get("env") or {},
                   d.get("launcher_args") or [], d.get("placement") or {}, d.get("factors") or {})


@dataclass
class Saved:
    spec: RunSpec
    meta: dict
    then: list[RunSpec]


def load_spec(path: Path) -> Saved:
    """A configuration saved for a batch job."""
    try:
        d = json.loads(Path(path).read_text())
        return Saved(spec_from_json(d), d.get("meta") or {}, [spec_from_json(t) for t in d.get("then") or []])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UsageError(f"{path} is not a configuration saved by --submit ({e}): submit it again") from e


# -- one batch job ----------------------------------------------------------------------------

@dataclass
class BatchJob:
    """What sbatch needs for one configuration, and the command that measures it."""
    name: str
    command: list[str]
    ranks: int
    time_limit_s: float
    log_dir: Path
    workdir: Path
    nodes: int | None = None
    ranks_per_node: int | None = None
    nodelist: list[str] | None = None
    sbatch_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # exported in the script before the command

    @property
    def time_minutes(self) -> int:
        return max(1, math.ceil(self.time_limit_s / 60))

    def script(self) -> str:
        lines = ["#!/bin/bash",
                 "# written by mpiscope --submit slurm: one configuration, measured inside the allocation",
                 f"#SBATCH --job-name={self.name}"]
        if self.nodes:
            lines.append(f"#SBATCH --nodes={self.nodes}")
        lines.append(f"#SBATCH --ntasks={self.ranks}")
        if self.ranks_per_node:
            lines.append(f"#SBATCH --ntasks-per-node={self.ranks_per_node}")
        if self.nodelist:
            lines.append(f"#SBATCH --nodelist={','.join(self.nodelist)}")
        lines += [f"#SBATCH --time={self.time_minutes}",
                  f"#SBATCH --output={self.log_dir / 'slurm-%j.out'}",
                  f"#SBATCH --chdir={self.workdir}"]
        if self.sbatch_args:
            lines.append("#SBATCH " + shlex.join(self.sbatch_args))
        lines += [f"export {k}={shlex.quote(v)}" for k, v in self.env.items()]
        lines.append("exec " + shlex.join(self.command))
        return "\n".join(lines) + "\n"


def _nodes(spec: RunSpec) -> int | None:
    p = spec.placement
    if p.get("nodes"):
        return p["nodes"]
    if p.get("hosts"):
        return len(p["hosts"])
    if p.get("ranks_per_node"):
        return math.ceil(spec.plan.ranks / p["ranks_per_node"])
    return None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:60] or "run"


def batch_job(spec: RunSpec, runs_dir: Path, name: str, sbatch_args: list[str] | None = None,
              then: list[RunSpec] | None = None) -> tuple[BatchJob, Path]:
    """The job for `spec` (and the launches `then` that follow it) and where its saved
    configuration goes. Time limit: the plans' own wall-clock limits (every point at its
    cap, with slack) plus start-up; tasks: the largest launch."""
    every = [spec, *(then or [])]
    runs_dir = runs_dir.resolve()
    batch = runs_dir / BATCH_DIR
    saved = batch / f"{name}.json"
    env = {k: os.environ[k] for k in ("MPISCOPE_HOME",) if k in os.environ}
    hosts = spec.placement.get("hosts")
    job = BatchJob(name=f"mpiscope-{name}",
                   command=[sys.executable, "-m", "mpiscope", "batch-run", str(saved), "--runs-dir", str(runs_dir)],
                   ranks=max(s.plan.ranks for s in every),
                   time_limit_s=sum(s.plan.wall_limit_s() for s in every) + START_MARGIN_S,
                   log_dir=batch, workdir=Path.cwd(), nodes=_nodes(spec),
                   ranks_per_node=spec.placement.get("ranks_per_node"),
                   nodelist=[h.split(":")[0] for h in hosts] if hosts else None,
                   sbatch_args=list(sbatch_args or []), env=env)
    return job, saved


def job_names(specs: list[RunSpec]) -> list[str]:
    """Unique, sortable names: a time stamp, the configuration's index, its factors."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    out = []
    for i, spec in enumerate(specs):
        what = "-".join(f"{k}{v}" for k, v in spec.factors.items() if not isinstance(v, (list, dict)))
        out.append(_slug(f"{stamp}-{i:03d}" + (f"-{what}" if what else "")))
    return out


# -- submitting ---------------------------------------------------------------------------------

def sbatch(script: Path) -> int:
    exe = shutil.which("sbatch")
    if exe is None:
        raise UsageError("--submit slurm: no `sbatch` on PATH; load the Slurm module, or run without --submit")
    try:
        done = subprocess.run([exe, "--parsable", str(script)], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        raise MpiscopeError(f"sbatch {script} did not answer in 120 s: check the Slurm controller (`sinfo`)") from e
    if done.returncode != 0:
        raise MpiscopeError(f"sbatch refused {script}: {done.stderr.strip()}: fix the job's size or "
                            f"--sbatch-args (the script is kept)")
    return int(done.stdout.strip().split(";")[0])


def submit(specs: list[RunSpec], runs_dir: Path, console: Console, dry_run: bool = False,
           sbatch_args: list[str] | None = None, names: list[str] | None = None,
           metas: list[dict] | None = None, then: list[list[RunSpec]] | None = None) -> list[int]:
    """One batch job per configuration; returns the job ids (none on a dry run, which
    prints the scripts and writes nothing)."""
    ids = []
    names = names or job_names(specs)
    for i, (spec, name) in enumerate(zip(specs, names)):
        follow = then[i] if then else []
        job, saved = batch_job(spec, runs_dir, name, sbatch_args, follow)
        text = job.script()
        if dry_run:
            console.print(f"# --- {job.name} (dry run: not written, not submitted)", markup=False, soft_wrap=True)
            console.print(text, markup=False, end="", soft_wrap=True, highlight=False)
            continue
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(spec_to_json(spec, metas[i] if metas else None, follow), indent=1) + "\n")
        script = saved.with_suffix(".sbatch")
        script.write_text(text)
        job_id = sbatch(script)
        ids.append(job_id)
        console.print(f"submitted batch job {job_id}: {script} (log {job.log_dir}/slurm-{job_id}.out)",
                      markup=False, soft_wrap=True)
    if ids:
        console.print(f"results will be in {runs_dir.resolve()} (`mpiscope runs`); `squeue -j "
                      f"{','.join(map(str, ids))}` shows the jobs", markup=False, soft_wrap=True)
    return ids


def submit_sweep(spec, configs: list, planned: list, runs_dir: Path, spec_path: Path, a, console: Console) -> int:
    """`mpiscope sweep SPEC --submit slurm`: one job per configuration launch, each logged in
    the sweep directory when it finishes (so `mpiscope table` and `--resume` work as for an
    interactive sweep); with --resume only the launches not finished yet."""
    from mpiscope.sweep import create_sweep_dir, open_for_resume
    extra = _sbatch_args(a)
    done: dict = {}
    sd = None
    if a.dry_run:
        pass
    elif a.resume:
        sd = open_for_resume(runs_dir, spec, configs)
        done = sd.finished()
    else:
        sd = create_sweep_dir(runs_dir, spec, configs, spec.launches, spec_path)
    todo = [(c, rs, k) for k in range(1, spec.launches + 1) for c, rs in planned if (c.id, k) not in done]
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    names = [_slug(f"{spec.name}-{stamp}-{c.id}-{k}") for c, _, k in todo]
    metas = [{"sweep": {"name": spec.name, "dir": str(sd.path.resolve()) if sd else None, "config": c.id,
                        "launch": k}} for c, _, k in todo]
    ids = submit([rs for _, rs, _ in todo], runs_dir, console, dry_run=a.dry_run, sbatch_args=extra,
                 names=names, metas=metas)
    if sd is not None:
        for (c, _, k), job_id in zip(todo, ids):
            sd.log(event="submitted", config=c.id, launch=k, job=job_id)
        console.print(f"sweep '{spec.name}': {len(ids)} job(s) submitted, logged in {sd.path}; when they are done "
                      f"`mpiscope table {sd.path}` shows the results", markup=False, soft_wrap=True)
    return 0


def log_to_sweep(meta: dict, run_id: str | None, status: str, error: str | None) -> None:
    """A batch job of a sweep records its launch as finished, as an interactive sweep does."""
    sweep = meta.get("sweep") or {}
    if sweep.get("dir"):
        from mpiscope.store import SweepDir
        SweepDir(Path(sweep["dir"])).log(event="finished", config=sweep["config"], launch=sweep["launch"],
                                         run=run_id, status=status, error=error)


def add_submit_options(p, dry_run: bool = True) -> None:
    """--submit, --sbatch-args (and --dry-run, unless the command has its own) on an argparse parser."""
    g = p.add_argument_group("batch submission")
    g.add_argument("--submit", choices=SYSTEMS,
                   help="do not measure now: write one batch script per configuration and submit it")
    if dry_run:
        g.add_argument("--dry-run", action="store_true", help="with --submit: print the scripts, submit nothing")
    g.add_argument("--sbatch-args", default="", help="extra sbatch options for every job, e.g. \"-p debug -A proj\"")


def _sbatch_args(a) -> list[str]:
    try:
        return shlex.split(a.sbatch_args or "")
    except ValueError as e:
        raise UsageError(f"--sbatch-args '{a.sbatch_args}' cannot be split ({e}): balance the quotes") from e


def submit_from_args(specs: list[RunSpec], runs_dir: Path, a, console: Console,
                     then: list[list[RunSpec]] | None = None) -> int:
    if a.dry_run and not a.submit:
        raise UsageError("--dry-run goes with --submit slurm: add it, or leave --dry-run out")
    submit(specs, runs_dir, console, dry_run=a.dry_run, sbatch_args=_sbatch_args(a), then=then)
    return 0
