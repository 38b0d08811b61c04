"""`mpiscope calibrate RUN... [-o PLATFORM]`: a SimGrid platform and SMPI configuration fitted to
measured runs (analysis/calibrate), validated by simulating what the runs measured that the fit
did not use; `calibrate --validate PLATFORM RUN...` validates a twin against later runs."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from mpiscope.commands.options import positive_int
from mpiscope.util import paths
from mpiscope.util.errors import UsageError

if TYPE_CHECKING:
    from mpiscope.store.runs import Run

DEFAULT_OUTPUT = "twin.xml"


def _runs(refs: Sequence[str], runs_dir: Path) -> list["Run"]:
    from mpiscope.store.runs import resolve
    runs, seen = [], set()
    for ref in refs:
        run = resolve(ref, runs_dir)
        if run.id not in seen:
            seen.add(run.id)
            runs.append(run)
    return runs


def cmd_calibrate(a: argparse.Namespace) -> int:
    from mpiscope.analysis.calibrate.platform import read_twin
    from mpiscope.execute.twin import fit_twin, validate_draft, validate_twin
    from mpiscope.report.calibrate import render_table, render_twin, summary_text, validation_rows
    from mpiscope.report.twin import twin_xml
    from mpiscope.results.view import results_of
    from mpiscope.util.console import out
    from mpiscope.util.output import write_output
    runs_dir = paths.runs_dir(a.runs_dir)
    if a.validate:
        xml = Path(a.validate)
        if xml.suffix != ".xml" or not xml.is_file():
            raise UsageError(f"--validate {a.validate}: give the platform file calibrate wrote (a .xml)")
        record = read_twin(xml)
        if record is None:
            raise UsageError(f"--validate {a.validate}: not a platform written by `mpiscope calibrate` "
                             f"(it has no mpiscope-twin record)")
        runs = _runs(a.runs, runs_dir)
        frame = results_of(runs).frame
        table = validate_twin(xml.resolve(), {**record, "fitted": {}, "held_out": {}}, runs, frame)
        out.print(render_table(table), markup=False, highlight=False, soft_wrap=True)
        out.print(summary_text(table), markup=False, highlight=False, soft_wrap=True)
        if a.report:
            _page(runs, Path(a.report), str(xml.resolve()), {**record, "validation": validation_rows(table)})
        return 0
    runs = _runs(a.runs, runs_dir)
    frame = results_of(runs).frame
    twin = fit_twin(runs, frame, a.topology, a.nodes)
    out.print(render_twin(twin), markup=False, highlight=False, soft_wrap=True)
    table = validate_draft(twin, runs, frame)
    out.print(render_table(table), markup=False, highlight=False, soft_wrap=True)
    summary = summary_text(table)
    out.print(summary, markup=False, highlight=False, soft_wrap=True)
    target = Path(a.output)
    hosts = target.with_suffix(".hosts")
    rows = validation_rows(table)
    write_output(target, twin_xml(twin, validation=summary, table=rows))
    write_output(hosts, "\n".join(twin.hosts()) + "\n")
    page = Path(a.report) if a.report else target.with_suffix(".html")
    _page(runs, page, str(target.resolve()), {**twin.record(), "validation": rows})
    selector = "" if twin.selector == "mpich" else f" --launcher-args=--cfg=smpi/coll-selector:{twin.selector}"
    out.print(f"wrote {target}, {hosts} and {page}: simulate with `mpiscope run --mpi smpi --platform {target} "
              f"--hostfile {hosts}{selector} -n N`", markup=False, highlight=False, soft_wrap=True)
    return 0


def _page(runs: Sequence["Run"], path: Path, platform: str, record: dict) -> None:
    """The HTML report of the runs with the twin's validation (report/html.py's calibration section)."""
    from mpiscope.report.html import write_report
    try:
        write_report(list(runs), path, ((platform, record),))
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    p = sub.add_parser("calibrate", parents=[runs_dir],
                       help="a SimGrid platform fitted to measured runs, validated by simulating them")
    p.add_argument("runs", nargs="+", metavar="RUN", help="runs with a pingpong sweep (and bw, collectives)")
    p.add_argument("-o", "--output", default=DEFAULT_OUTPUT, metavar="PLATFORM",
                   help=f"the platform file to write (default {DEFAULT_OUTPUT}; its hostfile beside it, .hosts)")
    p.add_argument("--topology", metavar="DESC",
                   help="the twin's shape as a platform description without bw and lat, e.g. "
                        "cluster:bb-bw=10GBps or fattree:per-switch=8 (default: a fat tree of the groups a "
                        "pairs run infers, else a cluster where no shared link binds)")
    p.add_argument("--nodes", type=positive_int, metavar="N", help="the twin's node count (default: the most ranks measured)")
    p.add_argument("--validate", metavar="PLATFORM",
                   help="validate a platform calibrate wrote against RUN... instead of calibrating")
    p.add_argument("--report", metavar="FILE.html",
                   help="the HTML report of the runs with the validation table (default: PLATFORM.html beside the "
                        "platform; with --validate none unless given)")
    p.set_defaults(func=cmd_calibrate)
