"""`mpiscope plot RUN... [-o DIR] [--format png|svg]`: every plot that applies to the runs, as files."""
from __future__ import annotations

import argparse

from mpiscope.util import paths
from mpiscope.store.runs import runs_of


def cmd_plot(a: argparse.Namespace) -> int:
    from mpiscope.api import write_plots
    from mpiscope.util.console import out, records_of
    runs = runs_of(a.run, paths.runs_dir(a.runs_dir))
    records_of(runs)  # warns about damaged lines before the table leaves them out
    if a.history:
        from pathlib import Path
        from mpiscope.report.history import figure, worth_drawing
        from mpiscope.report.plots import write_plots as write_figures
        from mpiscope.results.changes import history_of
        out_dir = Path(a.output) if a.output else Path(".")
        for path in write_figures([figure(h) for h in worth_drawing(history_of(runs)[0], most=10 ** 6)],
                                  out_dir, a.format):
            out.print(str(path), markup=False)
        return 0
    for path in write_plots(runs, a.output, a.format):
        out.print(str(path), markup=False)
    return 0


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    p = sub.add_parser("plot", parents=[runs_dir], help="draw every plot that applies to runs (PNG or SVG)")
    p.add_argument("run", nargs="+", help="run id, unique prefix, 'latest', a run's path, or a directory of runs")
    p.add_argument("-o", "--output", metavar="DIR", help="directory for the files (default: the run's "
                                                           "directory for one run, else .)")
    p.add_argument("--format", choices=("png", "svg"), default="png")
    p.add_argument("--history", action="store_true", help="one figure per point over the runs in time order: "
                                                          "estimates, levels, change points (mpiscope history)")
    p.set_defaults(func=cmd_plot)
