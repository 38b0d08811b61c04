"""`mpiscope table RUN...|SWEEP_DIR`: configurations side by side, the newsletter's layout."""
from __future__ import annotations

import argparse
import sys

from mpiscope import paths
from mpiscope.commands.options import nonneg_int


def cmd_table(a: argparse.Namespace) -> int:
    from mpiscope.console import out
    from mpiscope.report.levels import launch_frame
    from mpiscope.report.table import (load_frame, render_csv, render_markdown, render_terminal,
                                       side_by_side, with_config)
    from mpiscope.console import records_of
    from mpiscope.store import runs_of
    runs = runs_of(a.runs, paths.runs_dir(a.runs_dir))
    records_of(runs)  # warns about damaged lines it leaves out
    df = load_frame(a.runs, paths.runs_dir(a.runs_dir), runs)
    if a.variation:
        from mpiscope.analysis.variation import variation
        from mpiscope.report.variation import variation_table
        out.print(variation_table(variation(with_config(df), a.benchmark)))
        return 0
    tables = side_by_side(df if a.per_launch else launch_frame(df), a.benchmark, a.words, a.latency_upto,
                          per_launch=a.per_launch)
    if a.format == "csv":
        sys.stdout.write(render_csv(tables))
    elif a.format == "markdown":
        sys.stdout.write("\n".join(render_markdown(t) for t in tables))
    else:
        for t in tables:
            out.print(render_terminal(t))
    return 0


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    from mpiscope.report.table import LATENCY_UPTO, TABLE_FORMATS
    p = sub.add_parser("table", parents=[runs_dir],
                       help="runs or a sweep side by side: sizes x configurations, MB/s (latency us)")
    p.add_argument("runs", nargs="+", metavar="RUN|SWEEP_DIR",
                   help="run ids, prefixes, paths, 'latest', or a sweep directory")
    p.add_argument("--words", action="store_true", help="sizes in 8-byte words, as the ARSC newsletter")
    p.add_argument("--format", choices=TABLE_FORMATS, default="terminal")
    p.add_argument("--benchmark", help="only this benchmark (default: one table per benchmark)")
    p.add_argument("--latency-upto", type=nonneg_int, default=LATENCY_UPTO, metavar="BYTES",
                   help=f"show the latency beside MB/s up to this size (default {LATENCY_UPTO})")
    p.add_argument("--per-launch", action="store_true",
                   help="a column per configuration and launch (default: one per configuration, its "
                        "launch-level estimate)")
    p.add_argument("--variation", action="store_true",
                   help="within- and between-launch variation per configuration, benchmark and size")
    p.set_defaults(func=cmd_table)
