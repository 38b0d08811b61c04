"""`mpiscope tune [COLLECTIVES]`: race each collective's algorithms, write the library's own
tuning file, prove its gain side by side with the default (docs/tune.md); `--show FILE` reads a
tuning file back as a table; `--resume DIR` carries on after Ctrl-C."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from mpiscope.util import paths
from mpiscope.commands.options import add_placement_options, check_ranks_room, given_options, placement_from_args
from mpiscope.util.errors import MpiscopeError, UsageError
from mpiscope.mpi.collectives import TUNABLE, TUNE_SIZES


def show(path: str) -> int:
    """The file's bands; beside the tune.json of the tune that wrote it, its gains too."""
    from mpiscope.analysis.tunefile import MAX_TUNING_BYTES
    from mpiscope.analysis.tunelayers import read_file as read
    from mpiscope.util import bounded
    from mpiscope.util.console import out
    from mpiscope.report.tune import bands_table, print_result
    rows = read(Path(path))
    if not rows:
        raise UsageError(f"{path} holds no tuned rule: give a tuning file tune wrote")
    out.print(bands_table(rows, f"{path}: algorithm per size band (the file's own size unit)", unit="file"))
    result = Path(path).parent / "tune.json"
    if result.is_file():
        try:
            tuned = bounded.read_json(result, MAX_TUNING_BYTES, "a tune's tune.json")
        except (OSError, ValueError):  # the file's bands are shown; its gains are a bonus
            return 0
        if isinstance(tuned, dict) and tuned.get("file") == str(Path(path)):
            print_result(out, tuned)
    return 0


def cmd_tune(a: argparse.Namespace) -> int:
    from mpiscope.util.console import err, out
    from mpiscope.report.tune import print_result, write_html
    from mpiscope.execute.session import Session, target
    from mpiscope.execute.tune import load_description, tune
    if a.show:
        return show(a.show)
    runs_dir = paths.runs_dir(a.runs_dir)
    if a.resume:
        refuse_options(a)
        directory = Path(a.resume)
        d = load_description(directory)
    else:
        d = description_of(a)
        check_ranks_room(a, max(d.rank_counts or (2,)), placement_from_args(a))
        directory = runs_dir / f"tune-{time.strftime('%Y%m%d-%H%M%S')}"
        directory.mkdir(parents=True, exist_ok=True)
    out.print(f"tune: {directory} (`mpiscope tune --resume {directory}` carries on after Ctrl-C)", highlight=False)
    session = Session(runs_dir, err, progress=not a.no_progress)
    try:
        result = tune(directory, d, target(d.mpi), session)
    except KeyboardInterrupt:
        err.print(f"mpiscope: interrupted; what was measured is kept: `mpiscope tune --resume {directory}` "
                  f"carries on", markup=False, highlight=False, soft_wrap=True)
        return 130
    print_result(out, result)
    out.print(f"report: {write_html(result, directory / 'tune.html')}", highlight=False)
    if result.get("error"):
        raise MpiscopeError(result["error"])
    out.print(f"tuning file: {result['file']} ({result['format']})", highlight=False)
    if result.get("node_keys"):  # what the formats can say about node counts, and at how many nodes it ran
        keys = "; ".join(f"{f}: by {k}" if k else f"{f}: no node-count key, its bands hold at every node count"
                         for f, k in result["node_keys"].items())
        out.print(f"bands: at the rank counts tuned, on {result.get('nodes', 1)} node(s) ({keys})", highlight=False,
                  soft_wrap=True)
    withdrawn = [d for d in result["decisions"] if d.get("withdrawn")]
    if withdrawn:
        out.print(f"{len(withdrawn)} change(s) of the race withdrawn, their gain not proven side by side: the file "
                  f"keeps the library's choice there", highlight=False)
    if not result["changes"]:
        out.print("no algorithm was proven faster than the default anywhere: the file changes nothing",
                  highlight=False)
    env = result["env"]
    out.print("with mpiscope: " + " ".join(f"--env {k}={v}" for k, v in env.items()), highlight=False,
              soft_wrap=True)
    out.print("in a job script:\n" + "\n".join(f"export {k}={v}" for k, v in env.items()), highlight=False,
              soft_wrap=True)
    return 0


def description_of(a: argparse.Namespace):
    """The tune's description from its flags over a spec's [measure] table (`--spec`), checked
    once by the one description (`plan.describe`)."""
    from mpiscope.execute.tune import TUNE, tune_description
    from mpiscope.plan.describe import CLI, SPEC, given
    base = TUNE
    if a.spec:
        from mpiscope.plan.spec import load_spec
        measure = load_spec(Path(a.spec)).measure
        base = tune_description({k: v for k, v in given(measure).items() if k != "launches"}, SPEC)
    return tune_description(given_options(a), CLI, base)


def refuse_options(a: argparse.Namespace) -> None:
    """--resume carries on with the tune's own description: options given beside it would be
    silently ignored."""
    from mpiscope.plan.describe import FIELDS
    flags = [FIELDS[name].flag.split("/")[0] for name in given_options(a)] + ["--spec"] * bool(a.spec)
    if flags:
        raise UsageError(f"--resume carries on with the tune's own options: leave out {', '.join(flags)}")


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    p = sub.add_parser("tune", parents=[runs_dir],
                       help="the fastest collective algorithm per size, written as the library's tuning file")
    p.add_argument("bench", nargs="*", metavar="COLLECTIVE",
                   help=f"collectives to tune (default: {' '.join(TUNABLE)})")
    p.add_argument("--mpi", help="MPI library by name (`mpiscope mpi list`; default: the embedded MPICH)")
    p.add_argument("-n", "--ranks", dest="rank_counts", metavar="N[,N]", help="rank counts, e.g. 4 or 2,4 (default 2)")
    p.add_argument("--sizes", help=f"size expression (default {TUNE_SIZES})")
    p.add_argument("--algorithms", action="append", metavar="COLL=ALG,ALG",
                   help="race only these algorithms of a collective (the library's names; repeatable)")
    p.add_argument("--rounds", metavar="N",
                   help="launches per algorithm and size at most (default 4; the race stops sooner where it is "
                        "decided)")
    p.add_argument("--verify-launches", metavar="N",
                   help="launches of the side-by-side run, default against the tuned file (default 3)")
    p.add_argument("--verify-max-launches", metavar="N",
                   help="launches a side at most while a change's gain is inconclusive (default 8); a change "
                        "not proven faster by then is withdrawn")
    p.add_argument("--live-launches", metavar="N",
                   help="launches a side of the check that each knob reaches the timed calls (a poor choice "
                        "against the library's, up to 6 while inconclusive; default 3); 0 skips it and races "
                        "every knob unproven")
    p.add_argument("--max-time", metavar="S", help="time cap per point and launch, s (default 0.2)")
    p.add_argument("--exhaustive", action="store_true",
                   help="no racing: every algorithm at every size in every round (to weigh the race's saving)")
    p.add_argument("--env", action="append", metavar="KEY=VALUE",
                   help="a variable of every launch (repeatable), e.g. a layer forced: "
                        "MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM=mpir")
    p.add_argument("--launcher-args", help="extra launcher arguments, one quoted string")
    p.add_argument("--spec", metavar="FILE.toml",
                   help="the tune's options from a spec's [measure] table (docs/spec.md); flags given too win")
    p.add_argument("--show", metavar="FILE", help="read a tuning file back as a table; measure nothing")
    p.add_argument("--resume", metavar="DIR", help="carry on with a tune cut short (its own options apply)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_placement_options(p)
    p.set_defaults(func=cmd_tune)
