"""`mpiscope batch-run CONFIG.json`: measure one configuration saved by `--submit`, inside
the batch job's allocation (srun is then the default launcher), into the same run store."""
from __future__ import annotations

import argparse
import os
from pathlib import Path


def cmd_batch_run(a: argparse.Namespace) -> int:
    from mpiscope import paths
    from mpiscope.cli import err, finish, out
    from mpiscope.errors import MpiscopeError
    from mpiscope.execute import launch_into, run_once
    from mpiscope.report.summary import print_run
    from mpiscope.submit import load_spec, log_to_sweep

    saved = load_spec(Path(a.config))
    meta = saved.meta
    job = {k: os.environ[k] for k in ("SLURM_JOB_ID", "SLURM_JOB_NODELIST") if k in os.environ}
    try:
        run, outcome = run_once(saved.spec, paths.runs_dir(a.runs_dir), err, progress=False,
                                extra_meta={**meta, "batch": {"config": str(a.config), **job}})
        for follow in saved.then:  # as `mpiscope run` does: only after a launch that went well
            if outcome.status == "ok":
                outcome = launch_into(run, follow, err, progress=False)
    except MpiscopeError as e:  # the launcher did not start: the sweep still hears of it
        log_to_sweep(meta, None, "failed", str(e))
        raise
    log_to_sweep(meta, run.id, outcome.status, outcome.error)
    print_run(out, run.meta(), run.records(), err)
    out.print(f"saved in {run.path}")
    return finish(outcome, run.path)


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    p = sub.add_parser("batch-run", parents=[runs_dir],
                       help="measure a configuration saved by --submit (what its batch job runs)")
    p.add_argument("config", help="the .json file written beside the batch script")
    p.set_defaults(func=cmd_batch_run)
