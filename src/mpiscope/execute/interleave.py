"""Configurations measured side by side: their launches in randomised blocks (Kalibera and Jones;
google/benchmark's random interleaving). Block k holds the next launch of every configuration
still measuring, in an order drawn from a seeded generator, so that a slow change of the
machine's state (a fast and a slow state lasting tens of seconds) falls on every configuration
alike instead of on whichever was measured while it lasted (docs/statistics.md, Interleaving).

Each configuration is still its own run: a `Session.steps` (or `resume_steps`) generator that
yields its run after each launch. The schedule is kept in every run's run.json
(extra["interleave"]): the session, the seed, the session's runs, and when each of its launches
ran in which block.

A session can end with a second stage (`run --vs`): its runs linger once their own launches are
done (`Waiting`), the session looks at its comparisons once, and the points they leave undecided
get as many blocks again, of those points only, before every run ends; the stage is kept in
each run's mark (`STAGES`) so that the comparison's level accounts for the two looks."""
from __future__ import annotations

import random
import secrets
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from mpiscope.execute.part import Outcome
from mpiscope.execute.session import CUT, Steps, Waiting
from mpiscope.store.runs import Run, utc_now
from mpiscope.util.errors import MpiscopeError

KEY = "interleave"  # run.json extra

# A second stage: the session's runs so far (by index) and the blocks of its first stage ->
# the points each run measures in the second (by index; none: no second stage) and its blocks.
SecondStage = Callable[[dict[int, Run], int], tuple[dict[int, set], int]]


def new_session() -> tuple[str, int]:
    """A session id and the seed of its blocks' order."""
    return secrets.token_hex(4), secrets.randbits(32)


def marked(extra: dict[str, Any], session: str, seed: int, label: str, index: int | None = None) -> dict[str, Any]:
    """A run's extra naming its interleaved session, before its first launch (`index`: its
    configuration's place in the session, kept so a resume finds the session's order)."""
    mark = {"session": session, "seed": seed, "label": label, "steps": []}
    return {**extra, KEY: mark if index is None else {**mark, "index": index}}


def next_block(runs: Sequence[Run]) -> int:
    """The first block number no launch of `runs` used: where a resumed session goes on, so that
    its blocks pair apart from the ones before the cut."""
    used = [step["block"] for run in runs for step in (run.meta().extra.get(KEY) or {}).get("steps", ())
            if isinstance(step, dict) and isinstance(step.get("block"), int)]
    return max(used, default=-1) + 1


@dataclass
class Ended:
    """How one configuration's steps ended: its run and outcome, or the error that stopped it
    before it had a run (a launcher that cannot start, a plan refused)."""
    index: int
    run: Run | None = None
    outcome: Any = None
    error: str | None = None


@dataclass
class Schedule:
    seed: int
    blocks: list[list[int]] = field(default_factory=list)  # configuration indices, in launch order
    interrupted: bool = False


def interleave(steps: Sequence[Callable[[], Steps]], seed: int, session: str,
               on_end: Callable[[Ended], None] = lambda e: None,
               on_step: Callable[[int], None] = lambda i: None, known: dict[int, Run] | None = None,
               first_block: int = 0, second_stage: SecondStage | None = None) -> Schedule:
    """Advance every configuration's steps in randomised blocks until each has ended (`on_end`,
    as it ends; `on_step(i)` before each step). A configuration that fails leaves the others
    going; an interrupted launch or Ctrl-C between launches interrupts every configuration still
    measuring (each run says so, and is resumable), then ends the session. `known`: the runs of
    configurations that resume one (`Session.resume_steps`), by index; `first_block`: the number
    of the first block (a resumed session's go on after the blocks before its cut);
    `second_stage`: the steps linger (`Waiting`) once their own launches are done, and when
    every configuration has, it names the points of a second stage and its blocks (see the
    module), then every lingering run is told to end."""
    gens = [make() for make in steps]
    rng = random.Random(seed)
    schedule = Schedule(seed)
    alive, started = list(range(len(gens))), set()
    waiting: list[int] = []  # lingering: their own launches done
    runs: dict[int, Run] = dict(known or {})

    def end(i: int, value: Any) -> None:
        alive.remove(i)
        run, outcome = value
        runs[i] = run
        on_end(Ended(i, run, outcome))
        if outcome is not None and outcome.status == "interrupted":
            schedule.interrupted = True

    def step(i: int, sent: set | None = None) -> None:
        """One launch of configuration i (`sent`: a lingering run's points), noted in its block."""
        on_step(i)
        began = utc_now()
        before = len(runs[i].meta().launches) if i in runs else 0
        started.add(i)
        try:
            got = gens[i].send(sent) if i in waiting else next(gens[i])
            if isinstance(got, Waiting) and i in alive:
                alive.remove(i)
                waiting.append(i)
            elif not isinstance(got, Waiting) and i in waiting:  # told to end, it measures on (`then`)
                waiting.remove(i)
                alive.append(i)
            runs[i] = got.run if isinstance(got, Waiting) else got
        except StopIteration as stop:  # its last launch ended the run (none, when told to end)
            if i in waiting:
                waiting.remove(i)
                alive.append(i)
            end(i, stop.value)
        except MpiscopeError as e:
            (waiting if i in waiting else alive).remove(i)
            on_end(Ended(i, error=str(e)))
            return
        _note_step(runs[i], session, first_block + len(schedule.blocks) - 1, began, before)

    def blocks(members: Callable[[], list[int]], points: dict[int, set] | None = None, count: int | None = None) -> None:
        while members() and not schedule.interrupted and (count is None or count > 0):
            order = list(members())
            rng.shuffle(order)
            schedule.blocks.append(order)
            for i in order:
                if schedule.interrupted:
                    break
                if points is None or i in waiting:
                    step(i, points[i] if points is not None else None)
            count = None if count is None else count - 1

    try:
        blocks(lambda: alive)
        if second_stage is not None and waiting and not schedule.interrupted:
            first = len(schedule.blocks)
            try:
                points, more = second_stage(dict(runs), first)
            except (MpiscopeError, ValueError, OSError, ArithmeticError):  # no look: one stage, as before it
                points, more = {}, 0
            points = {i: p for i, p in points.items() if p and i in waiting}
            if points and more > 0:
                _note_stages({i: runs[i] for i in waiting}, first, more)  # every verdict of the session looked twice
                blocks(lambda: [i for i in points if i in waiting], points, more)
        for i in list(waiting):  # every lingering run ends (or goes on with what follows, `then`)
            if not schedule.interrupted:
                step(i)
        blocks(lambda: alive)
    except KeyboardInterrupt:
        schedule.interrupted = True
    # a lingering run measured all its own launches: it ends as measured, nothing more
    for i in list(waiting):
        waiting.remove(i)
        alive.append(i)
        try:
            gens[i].send(CUT)
        except StopIteration as stop:
            end(i, stop.value)
        except (KeyboardInterrupt, MpiscopeError):
            pass  # told below that it was interrupted
    # what is still measuring is told it was interrupted, between its launches
    for i in list(alive):
        if i not in started:
            gens[i].close()
            alive.remove(i)
            continue
        try:
            gens[i].throw(KeyboardInterrupt)
        except StopIteration as stop:
            end(i, stop.value)
        except (KeyboardInterrupt, MpiscopeError) as e:
            alive.remove(i)
            why = str(e) or "interrupted"
            on_end(Ended(i, runs.get(i), Outcome(status="interrupted", error=why) if i in runs else None, why))
    link_session(runs)
    return schedule


def _note_stages(runs: dict[int, Run], first: int, second: int) -> None:
    """Before the second stage's first launch: its runs' marks say the session looks twice."""
    from mpiscope.results.sides import STAGES  # the comparison reads it (a sweep never needs it)
    for run in runs.values():
        meta = run.meta()
        if KEY in meta.extra:
            run.update(extra={**meta.extra, KEY: {**meta.extra[KEY], STAGES: {"first": first, "second": second}}})


def _note_step(run: Run, session: str, block: int, began: str, before: int) -> None:
    """The launches this step made, in run.json: which block, and when it began and ended."""
    meta = run.meta()
    new = meta.launches[before:]
    if KEY not in meta.extra or not new:
        return
    launches = sorted({log.tag.get("launch", 0) for log in new})
    mine = meta.extra[KEY]
    step = {"session": session, "block": block, "launches": launches, "began": began, "ended": utc_now()}
    run.update(extra={**meta.extra, KEY: {**mine, "steps": [*mine.get("steps", []), step]}})


def link_session(runs: dict[int, Run]) -> None:
    """Every run of the session names the others (in configuration order)."""
    ids = [runs[i].id for i in sorted(runs)]
    for run in runs.values():
        meta = run.meta()
        if KEY in meta.extra and meta.status != "unreadable":
            run.update(extra={**meta.extra, KEY: {**meta.extra[KEY], "runs": ids}})
