"""`mpiscope run --vs "FLAGS"`: the run's configuration and each variant (the same run with FLAGS
added) measured side by side in one interleaved session (execute/interleave.py), each as its own
run, ending with `mpiscope compare` of each variant against the first. Once every configuration's
own launches are done, the session looks at those comparisons: the points they leave undecided,
but that more blocks would decide, get a second stage of as many blocks again (`second_stage`),
and every slower or faster of the session is then at the level of each of its two looks."""
from __future__ import annotations

import argparse
import copy
from dataclasses import replace

from mpiscope.util.errors import MpiscopeError, UsageError

# run's options that belong to the whole session, not to one configuration
WHOLE = ("vs", "seed", "runs_dir", "no_progress", "no_report", "full", "clock_mhz", "resume", "again", "submit",
         "sbatch_args", "dry_run", "history")


class _Refused(Exception):
    """argparse's complaint about a variant's flags."""


def _refused(message: str) -> None:
    raise _Refused(message)


def variants(a: argparse.Namespace) -> list:
    """The description of each --vs: the run's flags with the variant's added (the variant's win;
    --env adds to the run's), each checked before anything is built or launched."""
    from mpiscope.commands.options import DEST, description, split_args
    from mpiscope.plan.describe import FIELDS
    fields = {DEST.get(name, name) for name in FIELDS}
    out = []
    for text in a.vs:
        def refuse(message: str, text: str = text) -> None:
            raise UsageError(f"--vs '{text}': {message.removeprefix('argument ')}")
        parser = copy.copy(a.run_parser)
        parser.error = _refused  # type: ignore[method-assign]  # one line naming the variant, not argparse's exit
        tokens = split_args(text, "--vs")
        if not tokens:
            refuse("no option given: add run flags, e.g. --vs \"--env NAME=VALUE\"")
        try:
            ns = parser.parse_args(list(tokens), argparse.Namespace(**{k: copy.copy(v) for k, v in vars(a).items()}))
        except (_Refused, UsageError) as e:  # argparse's, or an option's own check (-b names)
            refuse(str(e))
        whole = [k for k in vars(ns) if k not in fields and k in WHOLE and getattr(ns, k) != getattr(a, k)]
        if whole:
            refuse(f"--{whole[0].replace('_', '-')} applies to the whole session, not to one configuration: "
                   f"give it outside --vs")
        try:
            out.append(description(ns))
        except UsageError as e:
            refuse(str(e))
    return out


def refuse_alone(a: argparse.Namespace) -> None:
    """Options that measure one run, which --vs cannot go with."""
    for why, given in (("--resume finishes one run", a.resume), ("--again measures one stored run", a.again),
                       ("--submit measures in a batch job, one run per job", a.submit)):
        if given:
            raise UsageError(f"--vs measures configurations side by side here; {why}: leave out --vs")


def side_by_side(a: argparse.Namespace, base, show: list) -> int:
    """Measure `base` (a Description) and each --vs variant interleaved, conclude each run (what
    `show` presents of it), then compare each variant against the base as `mpiscope compare` does."""
    from mpiscope.execute.interleave import interleave, marked, new_session
    from mpiscope.execute.planner import measurement
    from mpiscope.execute.session import Session
    from mpiscope.execute.refine import run_steps
    from mpiscope.util import paths
    from mpiscope.util.console import err
    descriptions = [base, *variants(a)]
    labels = ["base", *a.vs]
    runs_dir = paths.runs_dir(a.runs_dir)
    measurements = []
    for d in descriptions:  # every plan checked and every engine built before the first launch
        m = measurement(d)
        measurements.append(replace(m, policy=replace(m.policy, history=a.history)))
    session_id, drawn = new_session()
    seed = drawn if a.seed is None else a.seed
    session = Session(runs_dir, err, progress=not a.no_progress)
    err.print(f"side by side ({len(measurements)} configurations, their launches interleaved, seed {seed}): "
              + "; ".join(labels), markup=False, highlight=False)
    ended: dict[int, object] = {}
    steps = [lambda m=m, d=d, label=label, i=i: run_steps(session, replace(m, extra=marked(m.extra, session_id, seed,
                                                                                           label, i)), d, linger=True)
             for i, (m, d, label) in enumerate(zip(measurements, descriptions, labels))]
    interleave(steps, seed, session_id, lambda e: ended.__setitem__(e.index, e), second_stage=second_stage)
    return _conclude(a, labels, [ended.get(i) for i in range(len(labels))], show)


def second_stage(runs: dict, first: int) -> tuple[dict[int, set], int]:
    """The session's look after its `first` blocks: each variant against the base (index 0) at
    the level of each of two looks (results.verdict.two_look_alpha), and the points left
    inconclusive that the second stage's blocks would decide (results.sides.undecided); those, for
    the variant and the base, and the blocks of the second stage (as many as the first, at
    most the auto launches' cap; none after fewer blocks than pair)."""
    from mpiscope.results.policy import POLICY
    from mpiscope.results.sides import undecided
    from mpiscope.results.verdict import two_look_alpha
    if first < POLICY.min_launches:  # too few blocks to pair: nothing to look at
        return {}, 0
    more = min(first, POLICY.max_launches)
    alpha = two_look_alpha(POLICY.alpha, first, first + more)
    live = {i: run for i, run in runs.items() if run.meta().status == "running"}  # lingering, not failed
    points: dict[int, set] = {}
    for i, run in live.items():
        if i == 0 or 0 not in live:
            continue
        found = undecided(live[0], run, alpha, POLICY.margin, more)
        if found:
            points[i] = found
            points[0] = points.get(0, set()) | found
    return points, more


def resume_side_by_side(a: argparse.Namespace, run, runs_dir, show: list) -> int:
    """`--resume RUN` of a run measured side by side: every run of its session that was cut off
    goes on, still interleaved with the others cut off (in blocks numbered after the session's
    earlier ones, so the paired comparison stays by block), then the session ends as it would
    have: each run concluded, each variant compared against the base."""
    from mpiscope.execute.interleave import KEY, Ended, interleave, link_session, next_block
    from mpiscope.execute.session import Session
    from mpiscope.util.console import err, out
    runs = session_runs(run, runs_dir)
    labels = [r.meta().extra[KEY]["label"] for r in runs]
    cut = [i for i, r in enumerate(runs) if r.meta().status != "ok"]
    if not cut:
        out.print(f"the side-by-side session of run {run.id} is complete: nothing to resume")
        return 0
    session = Session(runs_dir, err, progress=not a.no_progress)
    mark = runs[0].meta().extra[KEY]
    first = next_block(runs)
    err.print(f"side by side, resumed from block {first} ({len(cut)} of {len(runs)} configurations cut off): "
              + "; ".join(labels[i] for i in cut), markup=False, highlight=False)
    ended: dict[int, Ended] = {i: Ended(i, r, None) for i, r in enumerate(runs) if i not in cut}
    interleave([lambda r=runs[i]: session.resume_steps(r) for i in cut], mark["seed"] + first, mark["session"],
               lambda e: ended.__setitem__(cut[e.index], replace(e, index=cut[e.index])),
               known={k: runs[i] for k, i in enumerate(cut)}, first_block=first)
    link_session(dict(enumerate(runs)))
    return _conclude(a, labels, [ended.get(i) for i in range(len(runs))], show)


def session_runs(run, runs_dir) -> list:
    """The runs of `run`'s side-by-side session in configuration order (the base first): its
    runs as they name one another, else every run in `runs_dir` marked with its session."""
    from mpiscope.execute.interleave import KEY
    from mpiscope.store.runs import list_runs
    session = run.meta().extra[KEY]["session"]
    found = [r for r in list_runs(runs_dir) if (r.meta().extra.get(KEY) or {}).get("session") == session]
    if run.id not in {r.id for r in found}:
        found.append(run)

    def order(r) -> tuple:
        mark = r.meta().extra[KEY]
        return (mark.get("index", 0 if mark.get("label") == "base" else 1), r.meta().started or "")
    return sorted(found, key=order)


def _conclude(a: argparse.Namespace, labels: list[str], ended: list, show: list) -> int:
    """Each configuration's run concluded as `mpiscope run` concludes one (a run whose outcome is
    None was complete before: named only), then each variant compared against the base."""
    from mpiscope.execute.session import conclude
    from mpiscope.util.console import err, out
    status = 0
    for label, e in zip(labels, ended):
        if e is None or e.run is None:
            err.print(f"mpiscope: {label}: {e.error if e is not None else 'not started'}", markup=False)
            status = max(status, 130 if e is None or e.error == "interrupted" else 2)
            continue
        if e.outcome is None:
            out.print(f"{label}: run {e.run.id} (complete)", markup=False, highlight=False)
            continue
        out.print(f"{label}: run {e.run.id}", markup=False, highlight=False)
        try:
            status = max(status, conclude(e.run, e.outcome, show=show, report=not a.no_report))
        except MpiscopeError as ex:  # this configuration failed: the others are still concluded
            err.print(f"mpiscope: error: {label}: {ex}", markup=False, highlight=False, soft_wrap=True)
            status = max(status, 2)
    if status == 0:
        for i in range(1, len(labels)):
            out.print(f"{labels[i]} against base:", markup=False, highlight=False)
            compare_runs(ended[0].run, ended[i].run, a.runs_dir)
    return status


def compare_runs(baseline, candidate, runs_dir: str | None) -> int:
    """`mpiscope compare BASELINE CANDIDATE`, with its own options' defaults."""
    from mpiscope.commands import compare
    p = argparse.ArgumentParser()
    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument("--runs-dir")
    compare.register(p.add_subparsers(), shared)
    args = p.parse_args(["compare", str(baseline.path), str(candidate.path),
                         *(["--runs-dir", runs_dir] if runs_dir else [])])
    return args.func(args)
