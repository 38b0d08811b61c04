"""`mpiscope report RUN...|SWEEP_DIR -o report.html`: one self-contained HTML report of runs."""
from __future__ import annotations

import argparse

from mpiscope.util import paths
from mpiscope.store.runs import runs_of


def cmd_report(a: argparse.Namespace) -> int:
    from mpiscope.api import write_report
    from mpiscope.util.console import out
    from mpiscope.util.console import records_of
    runs = runs_of(a.run, paths.runs_dir(a.runs_dir))
    records_of(runs)  # warns about damaged lines before the report leaves them out
    written = write_report(runs, a.output)
    if str(written) != "-":
        out.print(str(written), markup=False)
    return 0


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    p = sub.add_parser("report", parents=[runs_dir], help="one self-contained HTML report of runs")
    p.add_argument("run", nargs="+", help="run id, unique prefix, 'latest', a run's path, or a directory of runs")
    p.add_argument("-o", "--output", metavar="FILE", help="the HTML file, or - for stdout (default: report.html in the run's "
                                                            "directory for one run, else ./report.html)")
    p.set_defaults(func=cmd_report)
