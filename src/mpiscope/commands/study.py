"""`mpiscope study ring|grid`: fixed experiments from the reference material, each one run
measured by the session (studies/ holds what each measures and shows)."""
from __future__ import annotations

import argparse
from dataclasses import replace

from mpiscope.util import paths
from mpiscope.commands.options import add_launch_options, add_placement_options, description, one_size, parse_env
from mpiscope.util.errors import UsageError


def parse_env_levels(items: list[str]) -> dict[str, list[str]]:
    """--env NAME=v1,v2 (repeatable): the levels of each tuning variable."""
    return {k: [v for v in vals.split(",") if v] or [""] for k, vals in parse_env(items).items()}


def ring_config(a: argparse.Namespace, d, cores: int):
    from mpiscope.studies.ring import QUICK_NBLOCKS, RingStudyConfig
    cfg = RingStudyConfig(ranks=d.ranks if d.ranks is not None else max(2, min(4, cores - cores % 2)))
    if a.quick:
        cfg.max_words, cfg.step, cfg.nblocks, cfg.max_time, cfg.warmup_bytes = 2048, 2.0, list(QUICK_NBLOCKS), 0.02, "256K"
    if a.max_words is not None:
        cfg.max_words = one_size(a.max_words, "--max-words", "words") // 8
    if cfg.max_words < 1:
        raise UsageError(f"--max-words must be at least 1, got {cfg.max_words}")
    cfg.sizes_expr = a.sizes
    if a.imbalance is not None:
        try:
            parts = [int(x) for x in a.imbalance.split(",")]
        except ValueError:
            parts = []
        if len(parts) != 2 or min(parts) < 0:
            raise UsageError(f"--imbalance expects A,B (multiplications per element), e.g. 1,200; got '{a.imbalance}'")
        cfg.imbalance = (parts[0], parts[1])
    if a.nblocks is not None:
        try:
            cfg.nblocks = [int(x) for x in a.nblocks.split(",") if x.strip()]
        except ValueError:
            cfg.nblocks = []
        if not cfg.nblocks or min(cfg.nblocks) < 1:
            raise UsageError(f"--nblocks expects positive integers, e.g. 128,1024,16384; got '{a.nblocks}'")
    cfg.max_time = d.max_time or cfg.max_time
    cfg.ci_target = d.ci_target or cfg.ci_target
    cfg.env_levels = parse_env_levels(a.env)
    if cfg.ranks < 2 or cfg.ranks % 2:
        raise UsageError(f"the ring case study needs an even number of ranks (ranks exchange in pairs): "
                         f"use -n {max(2, cfg.ranks + 1)}")
    return cfg


def cmd_ring(a: argparse.Namespace) -> int:
    from mpiscope.util.console import err, out
    from mpiscope.launchers import local_cores
    from mpiscope.execute.session import Session, conclude, target
    from mpiscope.studies import ring
    d = description(a, env=a.base_env or None)
    cfg = ring_config(a, d, local_cores())
    t = target(d.mpi)
    m = ring.measurement(cfg, d, t)
    session = Session(paths.runs_dir(a.runs_dir), err, progress=not a.no_progress)
    run, outcome = session.run(m, announce=lambda run: out.print(
        f"ring case study: {len(m.parts)} series on {cfg.ranks} ranks of {t.lib.name}, run {run.id}"))
    if outcome.error and outcome.status != "interrupted":
        outcome.error = f"some series failed ({outcome.error})"
    return conclude(run, outcome, show=[ring.show_results(cfg)], report=False)


def cmd_grid(a: argparse.Namespace) -> int:
    from mpiscope.util.console import err
    from mpiscope.launchers import local_cores
    from mpiscope.execute.planner import placement
    from mpiscope.execute.session import Session, conclude
    from mpiscope.studies import grid
    d = description(a)
    beside = grid.beside(a.beside, paths.runs_dir(a.runs_dir)) if a.beside else None  # refused before measuring
    if d.platform and d.ranks_per_node:  # a twin's nodes run several ranks each: the task order places them
        from mpiscope.execute.simulate import placed
        ranks = d.ranks or local_cores()
        platform, hosts = placed(d.platform, ranks, d.ranks_per_node)
        d = replace(d, ranks=ranks, ranks_per_node=None, platform=platform, hostfile=hosts)
    d = replace(d, ranks=placement(d).ranks(d.ranks) or local_cores())
    m = grid.measurement(d)
    run, outcome = Session(paths.runs_dir(a.runs_dir), err, progress=not a.no_progress).run(m)
    return conclude(run, outcome, show=[grid.show_results, *([beside] if beside else [])], report=False)


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    study = sub.add_parser("study", help="case studies: the ring (five ways to write it, load imbalance, deadlock) and the process grid (P x Q, task order)")
    names = study.add_subparsers(dest="study", required=True, metavar="STUDY")

    p = names.add_parser("grid", parents=[runs_dir],
                         help="every P x Q process grid under block and cyclic ordering (HPL's pattern)")
    p.add_argument("--mpi", help="MPI library by name (default: the embedded MPICH)")
    p.add_argument("-n", "--ranks", help="number of ranks (default: the local cores)")
    p.add_argument("--sizes", default="64K,1M", help="panel sizes in bytes (default 64K,1M)")
    p.add_argument("--max-time", default="0.2", help="time cap per point and phase, seconds (0.2)")
    p.add_argument("--env", action="append", default=[], metavar="K=V", help="environment for the ranks")
    p.add_argument("--launcher-args", help="extra launcher arguments, one quoted string")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--beside", metavar="RUN",
                   help="a grid study measured at small scale (on the real machine) whose ranking is shown beside "
                        "this one's (with --mpi smpi --platform: a twin at scale; docs/simulation.md)")
    add_launch_options(p)
    add_placement_options(p)
    p.set_defaults(func=cmd_grid)

    p = names.add_parser("ring", parents=[runs_dir],
                         help="the ring case study: five algorithms, load imbalance, MPI_Testall, deadlock")
    p.add_argument("--mpi", help="MPI library by name (default: the embedded MPICH)")
    p.add_argument("-n", "--ranks", help="even number of ranks (default: 4, or the cores if fewer)")
    p.add_argument("--max-words", help="largest message in 8-byte words (default 500000 = 4 MB)")
    p.add_argument("--oversubscribe", action="store_true",
                   help="launch even far more ranks than the cores (refused otherwise)")
    p.add_argument("--sizes", help="message sizes in words, engine grammar (default 0:MAX_WORDS:*1.2)")
    p.add_argument("--imbalance", help="ncompute A,B for the unbalanced series (default 1,200)")
    p.add_argument("--nblocks", help="algorithm 5's elements between MPI_Testall calls (default 128..16384, powers of two)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=v1,v2",
                   help="sweep a tuning variable: every series runs once per level")
    p.add_argument("--base-env", action="append", default=[], metavar="K=V", help="fixed environment for the ranks")
    p.add_argument("--max-time", help="time cap per point, seconds (default 0.1; --quick 0.02)")
    p.add_argument("--ci-target", help="stop a point when the 95%% CI is within +-F (default 0.05)")
    p.add_argument("--quick", action="store_true", help="small sizes (up to 2048 words), 3 nblocks, short points")
    p.add_argument("--check", action="store_true", help="verify the ring's contents before timing each point")
    p.add_argument("--launcher-args", help="extra launcher arguments, one quoted string")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_launch_options(p)
    p.set_defaults(func=cmd_ring)
