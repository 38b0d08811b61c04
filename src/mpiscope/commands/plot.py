"""`mpiscope plot RUN... [-o DIR] [--format png|svg]`: every plot that applies to the runs, as files."""
from __future__ import annotations

import argparse
from pathlib import Path

from mpiscope import paths
from mpiscope.errors import UsageError
from mpiscope.store import runs_of


def cmd_plot(a: argparse.Namespace) -> int:
    from mpiscope.console import out, records_of
    from mpiscope.records.table import tidy
    from mpiscope.report.plots import all_plots, write_plots
    runs = runs_of(a.run, paths.runs_dir(a.runs_dir))
    records_of(runs)  # warns about damaged lines before the table leaves them out
    df = tidy(runs)
    if df.empty:
        raise UsageError("the runs hold no measured points: nothing to plot")
    plots = all_plots(df)
    if not plots:
        raise UsageError("no plot applies to these runs' benchmarks")
    out_dir = Path(a.output) if a.output else (runs[0].path if len(runs) == 1 else Path("."))
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"-o {out_dir} is a file, not a directory: give a directory for the plots")
    try:
        written = write_plots(plots, out_dir, a.format)
    except OSError as e:
        raise UsageError(f"cannot write the plots into {out_dir}: {e.strerror or e}: give a writable "
                         f"directory with -o") from e
    for path in written:
        out.print(str(path), markup=False)
    return 0


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    p = sub.add_parser("plot", parents=[runs_dir], help="draw every plot that applies to runs (PNG or SVG)")
    p.add_argument("run", nargs="+", help="run id, unique prefix, 'latest', a run's path, or a directory of runs")
    p.add_argument("-o", "--output", metavar="DIR", help="directory for the files (default: the run's "
                                                           "directory for one run, else .)")
    p.add_argument("--format", choices=("png", "svg"), default="png")
    p.set_defaults(func=cmd_plot)
