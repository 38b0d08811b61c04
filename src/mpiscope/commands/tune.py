"""`mpiscope tune [COLLECTIVES]`: race each collective's algorithms, write the library's own
tuning file, prove its gain side by side with the default (docs/tune.md); `--show FILE` reads a
tuning file back as a table; `--resume DIR` carries on after Ctrl-C."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from mpiscope.util import paths
from mpiscope.commands.options import add_placement_options, csv, positive_float, positive_int, split_args
from mpiscope.util.errors import MpiscopeError, UsageError
from mpiscope.mpi.collectives import TUNABLE

DEFAULT_SIZES = "8,1K,64K,1M"


def _ranks(text: str) -> list[int]:
    try:
        out = sorted({int(x) for x in csv(text)})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expects a rank count or a list such as 2,4, got '{text}'") from None
    if not out or out[0] < 2:
        raise argparse.ArgumentTypeError(f"expects rank counts of 2 or more, got '{text}'")
    return out


def _only(items: list[str]) -> dict[str, list[str]]:
    """--algorithms allreduce=ring,recursive_doubling (repeatable)."""
    out: dict[str, list[str]] = {}
    for item in items:
        coll, sep, names = item.partition("=")
        if not sep or not csv(names):
            raise UsageError(f"--algorithms expects COLLECTIVE=ALG,ALG, got '{item}'")
        out[coll.strip()] = csv(names)
    return out


def show(path: str) -> int:
    """The file's bands; beside the tune.json of the tune that wrote it, its gains too."""
    from mpiscope.analysis.tunefile import MAX_TUNING_BYTES, read
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
    from mpiscope.execute.tune import TuneSpec, load_spec, tune
    if a.show:
        return show(a.show)
    runs_dir = paths.runs_dir(a.runs_dir)
    if a.resume:
        given = [o for o, v in (("COLLECTIVE", a.collectives), ("--mpi", a.mpi), ("-n", a.ranks), ("--env", a.env),
                                ("--algorithms", a.algorithms), ("--exhaustive", a.exhaustive),
                                ("--verify-max-launches", a.verify_max_launches is not None),
                                ("--live-launches", a.live_launches != 3),
                                ("--sizes", a.sizes != DEFAULT_SIZES)) if v]
        if given:  # silently ignoring them would let a user believe they were applied
            raise UsageError(f"--resume carries on with the tune's own options: leave out {', '.join(given)}")
        directory = Path(a.resume)
        spec = load_spec(directory)
    else:
        collectives = a.collectives or list(TUNABLE)
        unknown = [c for c in collectives if c not in TUNABLE]
        if unknown:
            raise UsageError(f"tune knows no collective '{unknown[0]}': give some of {', '.join(TUNABLE)}")
        only = _only(a.algorithms)
        for coll in only:
            if coll not in collectives:
                raise UsageError(f"--algorithms names {coll}, which is not tuned: add it to the collectives")
        if a.verify_launches < 2:
            raise UsageError("--verify-launches must be 2 or more: one launch a side gives no interval")
        verify_max = a.verify_max_launches if a.verify_max_launches is not None else max(8, a.verify_launches)
        if verify_max < a.verify_launches:
            raise UsageError(f"--verify-max-launches ({verify_max}) is below --verify-launches ({a.verify_launches}): "
                             f"give at least {a.verify_launches}")
        spec = TuneSpec(mpi=a.mpi, collectives=collectives, ranks=a.ranks or [2], sizes=a.sizes, rounds=a.rounds,
                        verify_launches=a.verify_launches, verify_max=verify_max, max_time=a.max_time,
                        race=not a.exhaustive, only=only, live_launches=a.live_launches,
                        live_max=max(a.live_launches, 6),
                        launcher_args=list(split_args(a.launcher_args, "--launcher-args")), env=_env(a.env),
                        placement={"launcher": a.launcher, "hosts": _hosts(a.hosts), "hostfile": a.hostfile,
                                   "nodes": a.nodes, "ranks_per_node": a.ranks_per_node, "mapping": a.map_by,
                                   "binding": a.bind_to})
        if spec.live_launches < 0 or spec.live_launches == 1:
            raise UsageError("--live-launches must be 0 (no check) or 2 or more: one launch a side gives no interval")
        if spec.rounds < 2:
            raise UsageError("--rounds must be 2 or more: the race needs two launches to see the noise")
        _check_room(a, spec)
        directory = runs_dir / f"tune-{time.strftime('%Y%m%d-%H%M%S')}"
        directory.mkdir(parents=True, exist_ok=True)
    out.print(f"tune: {directory} (`mpiscope tune --resume {directory}` carries on after Ctrl-C)", highlight=False)
    session = Session(runs_dir, err, progress=not a.no_progress)
    try:
        result = tune(directory, spec, target(spec.mpi), session)
    except KeyboardInterrupt:
        err.print(f"mpiscope: interrupted; what was measured is kept: `mpiscope tune --resume {directory}` "
                  f"carries on", markup=False, highlight=False, soft_wrap=True)
        return 130
    print_result(out, result)
    out.print(f"report: {write_html(result, directory / 'tune.html')}", highlight=False)
    if result.get("error"):
        raise MpiscopeError(result["error"])
    out.print(f"tuning file: {result['file']} ({result['format']})", highlight=False)
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


def _hosts(hosts: list[str] | None) -> list[str] | None:
    """--hosts checked as `run` checks them (a name a launcher would choke on is refused here)."""
    from mpiscope.plan.describe import CLI, parse_field
    return None if hosts is None else list(parse_field("hosts", hosts, CLI))


def _env(items: list[str]) -> dict[str, str]:
    """--env checked as `run` checks it."""
    from mpiscope.plan.describe import CLI, parse_field
    return dict(parse_field("env", items, CLI)) if items else {}


def _check_room(a: argparse.Namespace, spec) -> None:
    from mpiscope.commands.options import check_ranks_room, placement_from_args
    check_ranks_room(a, max(spec.ranks), placement_from_args(a))


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    p = sub.add_parser("tune", parents=[runs_dir],
                       help="the fastest collective algorithm per size, written as the library's tuning file")
    p.add_argument("collectives", nargs="*", metavar="COLLECTIVE",
                   help=f"collectives to tune (default: {' '.join(TUNABLE)})")
    p.add_argument("--mpi", help="MPI library by name (`mpiscope mpi list`; default: the embedded MPICH)")
    p.add_argument("-n", "--ranks", type=_ranks, help="rank counts, e.g. 4 or 2,4 (default 2)")
    p.add_argument("--sizes", default=DEFAULT_SIZES, help=f"size expression (default {DEFAULT_SIZES})")
    p.add_argument("--algorithms", action="append", default=[], metavar="COLL=ALG,ALG",
                   help="race only these algorithms of a collective (the library's names; repeatable)")
    p.add_argument("--rounds", type=positive_int, default=4,
                   help="launches per algorithm and size at most (the race stops sooner where it is decided)")
    p.add_argument("--verify-launches", type=positive_int, default=3,
                   help="launches of the side-by-side run, default against the tuned file (default 3)")
    p.add_argument("--verify-max-launches", type=positive_int, default=None,
                   help="launches a side at most while a change's gain is inconclusive (default 8); a change "
                        "not proven faster by then is withdrawn")
    p.add_argument("--live-launches", type=int, default=3, metavar="N",
                   help="launches a side of the check that each knob reaches the timed calls (a poor choice "
                        "against the library's, up to 6 while inconclusive; default 3); 0 skips it and races "
                        "every knob unproven")
    p.add_argument("--max-time", type=positive_float, default=0.2, help="time cap per point and launch, s (0.2)")
    p.add_argument("--exhaustive", action="store_true",
                   help="no racing: every algorithm at every size in every round (to weigh the race's saving)")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                   help="a variable of every launch (repeatable), e.g. a layer forced: "
                        "MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM=mpir")
    p.add_argument("--launcher-args", help="extra launcher arguments, one quoted string")
    p.add_argument("--show", metavar="FILE", help="read a tuning file back as a table; measure nothing")
    p.add_argument("--resume", metavar="DIR", help="carry on with a tune cut short (its own options apply)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_placement_options(p)
    p.set_defaults(func=cmd_tune)
