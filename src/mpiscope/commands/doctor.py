"""`mpiscope doctor`: a checklist of what is wrong with an MPI setup (docs/doctor.md), from one
machine, from named hosts, or inside a Slurm allocation. Exit 0 when nothing failed, 1 otherwise."""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path


def cmd_doctor(a: argparse.Namespace) -> int:
    from rich.markup import escape

    from mpiscope.commands.options import check_ranks_room, parse_env, placement_from_args, split_args
    from mpiscope.util.console import err, out
    from mpiscope.doctor import exit_status
    from mpiscope.doctor.facts import Facts
    from mpiscope.doctor.judge import judge, lines, to_json
    from mpiscope.util import bounded
    from mpiscope.util.errors import UsageError

    if not (a.timeout > 0 and math.isfinite(a.timeout)):
        raise UsageError(f"--timeout must be a positive number of seconds, got {a.timeout}")
    if a.save_facts and not Path(a.save_facts).resolve().parent.is_dir():
        raise UsageError(f"--save-facts {a.save_facts}: no such directory; give a file in an existing directory")
    if a.facts:
        try:
            facts = Facts.load(Path(a.facts))
        except (OSError, ValueError, TypeError) as e:
            why = bounded.why(e) if isinstance(e, (OSError, ValueError)) else bounded.excerpt(str(e), 200)
            raise UsageError(f"--facts {a.facts}: not a facts file written by --save-facts ({why})") from e
    else:
        from mpiscope.execute.probe import Setup, gather
        from mpiscope.execute.session import target
        placement = placement_from_args(a)
        if a.ranks is not None and a.ranks < 1:
            raise UsageError(f"-n/--ranks must be at least 1, got {a.ranks}")
        check_ranks_room(a, placement.ranks(a.ranks), placement)
        setup = Setup(target(a.mpi), placement, a.ranks, parse_env(a.env),
                      list(split_args(a.launcher_args, "--launcher-args")), a.timeout)
        if not a.json:
            err.print(f"doctor: launching {setup.target.lib.name} ({setup.target.lib.vendor} "
                      f"{setup.target.lib.version}), at most {a.timeout:g} s per launch ...", highlight=False)
        facts = gather(setup)
        if a.save_facts:
            try:
                facts.save(Path(a.save_facts))
            except OSError as e:
                raise UsageError(f"--save-facts {a.save_facts}: cannot write it ({e.strerror or e}); give a "
                                 f"writable file") from e
    checks = judge(facts)
    if a.json:
        print(json.dumps(to_json(facts, checks), indent=1))
    else:
        for mark, style, text, fix in lines(checks):
            out.print(f"[{style}]{mark:>4}[/] {escape(text)}", soft_wrap=True)
            if fix:
                out.print(f"      fix: {escape(fix)}", soft_wrap=True, style="dim" if mark == "ok" else None)
        failed = sum(c.status == "fail" for c in checks)
        warned = sum(c.status == "warn" for c in checks)
        out.print(f"{failed} fail, {warned} warn, {len(checks) - failed - warned} ok/skip")
    return exit_status(checks)


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    from mpiscope.commands.options import add_placement_options
    p = sub.add_parser("doctor", help="check the MPI setup: launch, placement, transport, clock, noise, hosts")
    p.add_argument("--mpi", help="MPI library by name (`mpiscope mpi list`; default: the embedded MPICH)")
    p.add_argument("-n", "--ranks", type=int, help="ranks (default: one per host, or 2 on this machine)")
    p.add_argument("--launcher-args", help="extra launcher arguments, one quoted string")
    p.add_argument("--env", action="append", default=[], metavar="K=V", help="environment for the ranks")
    p.add_argument("--timeout", type=float, default=60.0, help="limit of every launch, seconds (60)")
    p.add_argument("--json", action="store_true", help="the checklist as JSON")
    p.add_argument("--save-facts", metavar="FILE", help="also write what was measured (to judge again with --facts)")
    p.add_argument("--facts", metavar="FILE", help="judge facts saved by --save-facts; launch nothing")
    add_placement_options(p)
    p.set_defaults(func=cmd_doctor)
