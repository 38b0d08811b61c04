"""Options several commands share, and the checks that turn their text into values."""
from __future__ import annotations

import argparse
import math
import shlex

from mpiscope.util.errors import UsageError
from mpiscope.launchers import BINDINGS, LAUNCHERS, MAPPINGS
from mpiscope.launchers.placement import Placement, make_placement

SYSTEMS = ("slurm",)  # the batch systems --submit writes jobs for (submit.py)


def csv(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def names(text: str) -> list[str]:
    """A comma-separated list that must name something (`-b ''` is a slip, not the default)."""
    found = csv(text)
    if not found:
        raise argparse.ArgumentTypeError(f"expects one or more names, comma-separated, got '{text}'")
    return found


def _number(kind: type, text: str, low: float, strict: bool) -> float:
    number = "a whole number" if kind is int else "a number"
    try:
        v = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expects {number}, got '{text}'")
    if not math.isfinite(v) or v < low or (strict and v == low):
        bound = f"above {low:g}" if strict else f"of at least {low:g}"
        raise argparse.ArgumentTypeError(f"expects {number} {bound}, got '{text}'")
    return v


def positive_float(text: str) -> float:
    return _number(float, text, 0, strict=True)


def nonneg_float(text: str) -> float:
    return _number(float, text, 0, strict=False)


def positive_int(text: str) -> int:
    return int(_number(int, text, 1, strict=False))


def nonneg_int(text: str) -> int:
    return int(_number(int, text, 0, strict=False))


def parse_env(items: list[str]) -> dict[str, str]:
    """--env NAME=VALUE items, checked as the description checks them (each name once)."""
    from mpiscope.plan.describe import CLI, parse_field
    return parse_field("env", items, CLI) if items else {}


def one_size(text: str | int, option: str, units: str | None = None) -> int:
    """A size option in the engine's one size grammar (64K, 1M, 4096B), in bytes (in `units`' count:
    words are 8 bytes); the engine of the default MPI reads it, as it reads --sizes."""
    if isinstance(text, int):
        return text
    from mpiscope.plan.engine import expand_sizes
    from mpiscope.execute.session import target
    try:
        sizes = expand_sizes(target(None).engine, text, units)
    except UsageError as e:
        raise UsageError(f"{option} {text}: {e}") from None
    if len(sizes) != 1:
        raise UsageError(f"{option} takes one size such as 64K, got '{text}' ({len(sizes)} sizes)")
    return sizes[0]


# argparse's names of the description's fields that commands spell otherwise
DEST = {"benchmarks": "bench"}


def given_options(a: argparse.Namespace) -> dict:
    """The description's fields a command's flags gave (field name -> value as typed)."""
    from mpiscope.plan.describe import FIELDS
    values = {name: getattr(a, DEST.get(name, name), None) for name in FIELDS}
    return {k: v for k, v in values.items() if v is not None and v is not False and v != []}


def description(a: argparse.Namespace, **values):
    """The description from a command's flags (and `values` over them), checked once (describe.py)."""
    from mpiscope.plan.describe import CLI, describe
    return describe({**given_options(a), **values}, CLI)


def split_args(text: str | None, option: str) -> tuple[str, ...]:
    """One shell-quoted string of arguments (--launcher-args, --sbatch-args)."""
    try:
        return tuple(shlex.split(text or ""))
    except ValueError as e:
        raise UsageError(f"{option} '{text}' cannot be split ({e}): balance the quotes") from e


def add_launch_options(p: argparse.ArgumentParser) -> None:
    """--launches and --launch-target (docs/statistics.md)."""
    from mpiscope.plan.repetition import LAUNCH_TARGET, MAX_LAUNCHES, MIN_LAUNCHES
    g = p.add_argument_group("launches (the unit of evidence)")
    g.add_argument("--launches", metavar="N|auto",
                   help=f"measure every point in N launches, each in its own shuffled order (default auto: "
                        f"{MIN_LAUNCHES}, then up to {MAX_LAUNCHES} while the interval is wider than "
                        f"--launch-target and the time budget allows); 1: one launch, whose interval covers "
                        f"that launch only")
    g.add_argument("--launch-target", metavar="F",
                   help=f"auto launches: the launch-level 95%% interval's aim, +-F x estimate (0.05 or 5%%; "
                        f"default {LAUNCH_TARGET})")
    g.add_argument("--history", default="auto", metavar="none|auto|RUNS",
                   help="the earlier runs the drift from run to run is learnt from: auto (this configuration's "
                        "latest runs here), none (a stated prior only), or RUN1,RUN2,... (default auto)")


def add_placement_options(p: argparse.ArgumentParser) -> None:
    """The launcher and placement options of commands that measure."""
    g = p.add_argument_group("launcher and placement")
    g.add_argument("--launcher", choices=LAUNCHERS,
                   help="the MPI's own mpiexec/mpirun, or Slurm's srun (default: srun inside a Slurm "
                        "allocation, else mpiexec)")
    g.add_argument("--hosts", type=names, help="hosts, comma-separated (a,b or a:2,b:2 with slots)")
    g.add_argument("--max-hosts", type=positive_int, metavar="N",
                   help="refuse --hosts lists longer than N (default 1000)")
    g.add_argument("--hostfile", help="file naming the hosts (the launcher's own format)")
    g.add_argument("--nodes", type=positive_int, help="number of nodes (srun -N; default: from --hosts or ranks per node)")
    g.add_argument("--ranks-per-node", type=positive_int, help="ranks on each node")
    g.add_argument("--map-by", choices=MAPPINGS, help="block: fill a node first; cyclic: deal ranks round the nodes")
    g.add_argument("--bind-to", choices=BINDINGS, help="pin each rank to a core, hwthread, socket, numa node, or none")
    g.add_argument("--platform", metavar="DESC|FILE.xml",
                   help="simulated platform for --mpi smpi, e.g. fattree:nodes=64,per-switch=8,bw=12.5GBps,lat=1us "
                        "or cluster:nodes=64,slow-link=3 (docs/simulation.md; default: a cluster, one node a rank)")
    g.add_argument("--oversubscribe", action="store_true",
                   help="launch even far more ranks than the cores the job can see (refused otherwise)")


def check_ranks_room(a: argparse.Namespace, ranks: int | None, placement: Placement,
                     more_hosts: str | None = "--hosts, --nodes") -> None:
    """-n far beyond the cores and hosts: refused unless --oversubscribe."""
    from mpiscope.launchers import local_cores
    from mpiscope.launchers.placement import check_room
    if ranks is not None and not getattr(a, "submit", None):  # a batch job's nodes are not known here
        check_room(ranks, placement, local_cores(), insist=getattr(a, "oversubscribe", False), more_hosts=more_hosts)


def placement_from_args(a: argparse.Namespace) -> Placement:
    return make_placement(launcher=a.launcher, hosts=a.hosts, hostfile=a.hostfile, nodes=a.nodes,
                          ranks_per_node=a.ranks_per_node, mapping=a.map_by, binding=a.bind_to,
                          max_hosts=getattr(a, "max_hosts", None), platform=getattr(a, "platform", None))


def add_submit_options(p: argparse.ArgumentParser, dry_run: bool = True) -> None:
    """--submit, --sbatch-args (and --dry-run, unless the command has its own)."""
    g = p.add_argument_group("batch submission")
    g.add_argument("--submit", choices=SYSTEMS,
                   help="do not measure now: write one batch script per configuration and submit it")
    if dry_run:
        g.add_argument("--dry-run", action="store_true", help="with --submit: print the scripts, submit nothing")
    g.add_argument("--sbatch-args", default="", help="extra sbatch options for every job, e.g. \"-p debug -A proj\"")
