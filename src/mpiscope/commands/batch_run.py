"""`mpiscope batch-run CONFIG.json`: measure one measurement saved by `--submit`, inside the
batch job's allocation (srun is then the default launcher), into the same run store."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from mpiscope.util import paths


def cmd_batch_run(a: argparse.Namespace) -> int:
    from mpiscope.commands.run import summary
    from mpiscope.util.console import err
    from mpiscope.util.errors import MpiscopeError
    from mpiscope.execute.session import Session, conclude
    from mpiscope.execute.submit import load_measurement, log_to_sweep

    m = load_measurement(Path(a.config))
    job = {k: os.environ[k] for k in ("SLURM_JOB_ID", "SLURM_JOB_NODELIST") if k in os.environ}
    m.extra = {**m.extra, "batch": {"config": str(a.config), **job}}
    try:
        run, outcome = Session(paths.runs_dir(a.runs_dir), err, progress=False).run(m)
    except MpiscopeError as e:  # the launcher did not start: the sweep still hears of it
        log_to_sweep(m.sweep, None, "failed", str(e))
        raise
    log_to_sweep(m.sweep, run.id, outcome.status, outcome.error)
    return conclude(run, outcome, show=[summary], report=False)


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    p = sub.add_parser("batch-run", parents=[runs_dir],
                       help="measure a configuration saved by --submit (what its batch job runs)")
    p.add_argument("config", help="the .json file written beside the batch script")
    p.set_defaults(func=cmd_batch_run)
