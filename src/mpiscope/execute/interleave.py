"""Configurations measured side by side: their launches in randomised blocks (Kalibera and Jones;
google/benchmark's random interleaving). Block k holds the next launch of every configuration
still measuring, in an order drawn from a seeded generator, so that a slow change of the
machine's state (a fast and a slow state lasting tens of seconds) falls on every configuration
alike instead of on whichever was measured while it lasted (docs/statistics.md, Interleaving).

Each configuration is still its own run: a `Session.steps` (or `resume_steps`) generator that
yields its run after each launch. The schedule is kept in every run's run.json
(extra["interleave"]): the session, the seed, the session's runs, and when each of its launches
ran in which block."""
from __future__ import annotations

import random
import secrets
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from mpiscope.execute.part import Outcome
from mpiscope.execute.session import Steps
from mpiscope.store.runs import Run, utc_now
from mpiscope.util.errors import MpiscopeError

KEY = "interleave"  # run.json extra


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
               first_block: int = 0) -> Schedule:
    """Advance every configuration's steps in randomised blocks until each has ended (`on_end`,
    as it ends; `on_step(i)` before each step). A configuration that fails leaves the others
    going; an interrupted launch or Ctrl-C between launches interrupts every configuration still
    measuring (each run says so, and is resumable), then ends the session. `known`: the runs of
    configurations that resume one (`Session.resume_steps`), by index; `first_block`: the number
    of the first block (a resumed session's go on after the blocks before its cut)."""
    gens = [make() for make in steps]
    rng = random.Random(seed)
    schedule = Schedule(seed)
    alive, started = list(range(len(gens))), set()
    runs: dict[int, Run] = dict(known or {})

    def end(i: int, value: Any) -> None:
        alive.remove(i)
        run, outcome = value
        runs[i] = run
        on_end(Ended(i, run, outcome))
        if outcome is not None and outcome.status == "interrupted":
            schedule.interrupted = True

    try:
        while alive and not schedule.interrupted:
            order = list(alive)
            rng.shuffle(order)
            schedule.blocks.append(order)
            for i in order:
                if schedule.interrupted:
                    break
                on_step(i)
                began = utc_now()
                before = len(runs[i].meta().launches) if i in runs else 0
                started.add(i)
                try:
                    runs[i] = next(gens[i])
                except StopIteration as stop:
                    end(i, stop.value)
                except MpiscopeError as e:
                    alive.remove(i)
                    on_end(Ended(i, error=str(e)))
                    continue
                _note_step(runs[i], session, first_block + len(schedule.blocks) - 1, began, before)
    except KeyboardInterrupt:
        schedule.interrupted = True
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
