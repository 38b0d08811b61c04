"""Simulated runs that answer a question of another command (`predict --simulate`, calibration's
validation, `study grid` on a twin): benchmarks at sizes on a platform at one rank count, one run
of the measurement session with one launch, and its launch-level frame. A simulation SimGrid
stops part-way keeps the points it measured and names SimGrid's complaint; one that measured
nothing is one line."""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from mpiscope.util.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

    from mpiscope.store.runs import Run

SMPI = "smpi"  # the name `mpiscope mpi add smpi` registers SimGrid under


@dataclass(frozen=True)
class HostCost:
    """What simulations cost this host, to say before they start. Measured on a 2-core virtual
    machine (SimGrid 3.32, docs/simulation.md, *Prediction by simulation*): `predict --simulate`
    of allreduce and bcast at 8 B and 64 KiB took 2.1 s at 16 ranks, 4.1 s at 64, 19 s at 256 and
    84 s at 1024; allreduce alone at the same sizes 1.8-1.9, 5.7-6.9 and 46-48 s at 64, 256 and
    1024: about 0.02 s a simulated rank for each collective and size, and a second a run."""
    start_s: float = 1.0             # smpirun's start-up and the session's checks, per rank count
    rank_point_s: float = 0.02       # per simulated rank, per (collective, size)
    limit_s: float = 600.0           # beyond this predict --simulate asks for --max-host-time

    def estimate_s(self, ranks: Sequence[int], points: int) -> float:
        """The host time of simulating `points` (collective, size) pairs at each rank count."""
        return sum(self.start_s + self.rank_point_s * p * points for p in ranks)


HOST_COST = HostCost()


@dataclass
class Simulated:
    """One rank count's simulated run: its launch-level frame and the host time it took."""
    ranks: int
    run: "Run"
    frame: "pd.DataFrame"
    host_s: float
    stopped: str = ""  # SimGrid's complaint when it stopped part-way, else ""


def placed(platform: str, ranks: int, per_node: int = 1) -> tuple[str, str | None]:
    """The platform and hostfile that put `ranks` on the platform's first nodes in order,
    `per_node` on each (the engine's --order then renumbers them, as on a real machine): a
    description spelled out whole (its node count from `ranks`, as the smpirun adapter reads it, so
    that a one-rank check of it names the same nodes); the hostfile kept in mpiscope's home
    beside the described platforms' own, None for a description at one rank a node, whose
    hostfile the adapter writes."""
    from mpiscope.launchers.platform import file_hosts, parse
    from mpiscope.util import paths
    if Path(platform).suffix == ".xml":
        hosts = file_hosts(Path(platform))
    elif per_node == 1:
        return platform, None
    else:
        spelled = parse(platform, ranks)
        platform, hosts = spelled.description, spelled.hosts()
    need = -(-ranks // per_node)
    if len(hosts) < need:
        raise UsageError(f"--platform {platform}: {len(hosts)} node(s) for {ranks} ranks at {per_node} a node: "
                         f"simulate at most {len(hosts) * per_node} ranks, or calibrate a twin with --nodes {need}")
    text = "".join(f"{hosts[r // per_node]}\n" for r in range(ranks))
    path = paths.home() / "platforms" / f"hosts-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return platform, str(path)


def twin_cfg(platform: str) -> list[str]:
    """The SimGrid options a calibrated twin's runs take from its record (its file holds them too,
    but smpirun's own options win over a file's): all but the mpich selector, which is the smpirun
    adapter's default (given, it would turn the single-level algorithms the adapter names at one
    rank a node back into SimGrid's two-level ones). Nothing for another platform."""
    from mpiscope.analysis.calibrate.platform import read_twin
    record = read_twin(Path(platform)) if Path(platform).suffix == ".xml" and Path(platform).is_file() else None
    return [str(c) for c in (record or {}).get("cfg", []) if c != "smpi/coll-selector:mpich"]


def simulate(platform: str, ranks: int, benchmarks: Sequence[str], sizes: str, runs_dir: Path,
             cfg: Sequence[str] | None = None, per_node: int = 1, progress: bool = False,
             engine_args: Sequence[str] = ()) -> Simulated:
    """`benchmarks` at `sizes` on `platform` (a description or a SimGrid file) at `ranks`, one
    launch, through the measurement session; `cfg` SimGrid options (KEY:VALUE; default: a
    twin's own)."""
    cfg = twin_cfg(platform) if cfg is None else cfg
    from mpiscope.execute.planner import measurement
    from mpiscope.execute.session import Session
    from mpiscope.plan.describe import describe
    from mpiscope.results.view import results_of
    from mpiscope.util.console import err
    platform, hosts = placed(platform, ranks, per_node)
    d = describe({"benchmarks": list(benchmarks), "sizes": sizes, "ranks": ranks, "mpi": SMPI, "platform": platform,
                  "hostfile": hosts, "launches": 1,
                  "launcher_args": [f"--cfg={c}" for c in cfg] or None, "engine_args": list(engine_args) or None})
    start = time.monotonic()
    run, outcome = Session(Path(runs_dir), err, progress=progress).run(measurement(d))
    host_s = time.monotonic() - start
    if outcome.status == "interrupted":
        raise KeyboardInterrupt(f"interrupted; the points simulated so far are kept in {run.path}")
    frame = results_of([run]).frame
    if not outcome.error:
        return Simulated(ranks, run, frame, host_s)
    complaint = simgrid_complaint(run, outcome.error)
    if frame.empty:
        raise UsageError(f"{platform}: the simulation at {ranks} ranks failed: {complaint}")
    return Simulated(ranks, run, frame, host_s, complaint)


def simgrid_complaint(run: "Run", error: str) -> str:
    """SimGrid's own reason in the run's stderr, else the failure's first line."""
    from mpiscope.execute.session import stderr_head
    from mpiscope.launchers.smpirun import simgrid_error
    reason = simgrid_error(stderr_head(run))
    return f"SimGrid: {reason}"[:300] if reason != "no output" else (error.splitlines() or ["no message"])[0][:300]
