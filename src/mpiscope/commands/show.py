"""`mpiscope show RUN`: one run's summary, its launcher command, where it is kept."""
from __future__ import annotations

import argparse
import shlex

from mpiscope.util import paths


def cmd_show(a: argparse.Namespace) -> int:
    from mpiscope.util.console import err, out
    from mpiscope.report.reporter import report
    from mpiscope.report.summary import Summary
    from mpiscope.store.runs import resolve
    run = resolve(a.run, paths.runs_dir(a.runs_dir))
    meta = run.meta()
    report([run], Summary(out, err))
    files = meta.extra.get("imported", {}).get("files") if isinstance(meta.extra.get("imported"), dict) else None
    if files:
        out.print("imported from " + ", ".join(str(f.get("path")) for f in files if isinstance(f, dict)),
                  markup=False)
    else:
        out.print(f"launcher: {shlex.join(meta.launcher_command)}", markup=False)
    out.print(f"saved in {run.path}")
    return 0


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    s = sub.add_parser("show", parents=[runs_dir], help="print one run")
    s.add_argument("run", help="run id, unique prefix of one, 'latest', or a path")
    s.set_defaults(func=cmd_show)
