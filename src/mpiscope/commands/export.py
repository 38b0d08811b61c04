"""`mpiscope export RUN... --format F [-o FILE] [--per-launch]`: the tidy table of runs, one row
per point over its launches, or one per point and launch."""
from __future__ import annotations

import argparse

from mpiscope.util import paths
from mpiscope.report.numbers import FORMATS


def cmd_export(a: argparse.Namespace) -> int:
    from mpiscope.util.console import records_of
    from mpiscope.report.export import Export, write
    from mpiscope.report.reporter import report
    from mpiscope.store.runs import distinct, resolve
    runs = distinct([resolve(r, paths.runs_dir(a.runs_dir)) for r in a.run])  # a copied run counts once
    records_of(runs)  # warns about damaged lines before the table leaves them out
    write(report(runs, Export(a.format, a.per_launch)), a.output)
    return 0


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    e = sub.add_parser("export", parents=[runs_dir], help="write runs as one tidy table")
    e.add_argument("run", nargs="+", help="run id, unique prefix, 'latest', or a path")
    e.add_argument("--format", choices=FORMATS, default="csv")
    e.add_argument("-o", "--output", default="-", help="file, or - for stdout (default)")
    e.add_argument("--per-launch", action="store_true",
                   help="a row per point and launch (a `launch` column) instead of one per point with its "
                        "launch-level estimate and 95%% interval")
    e.set_defaults(func=cmd_export)
