"""The machine-state control (docs/statistics.md, "The machine-state control"): each launch's
control record, each run's level and noise per piece, the launches whose control moved beyond
that noise, and whether two runs (or two sides of runs) were measured in different states of
the machine. The pieces no configuration can change (`PIECES`) decide everywhere; the MPI
pingpong decides only between launches of one configuration (`IDENTITY_PIECES`: a run's own
launches, or two sides of the same configuration identity, results.history.same_configuration),
where nothing but the machine can move it.

A run's level for a piece is its main state's (`Level.states`: launches split at a switch, the
larger group, or on a tie the first launch's; a tie makes the other group a state of the run
too), its noise the larger of those launches' spread (a robust SD of their log medians) and
what one launch's median can tell (its repetitions' log SD over the root of their number),
never below the policy's floor: a shift is a move of the level beyond
`POLICY.control_shift_sd` times that noise and beyond `POLICY.control_min_ratio`."""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Mapping, Sequence

import numpy as np

from mpiscope.records.model import Control
from mpiscope.results.points import launch_of
from mpiscope.results.policy import POLICY, Policy

PIECES = ("compute_us", "copy_us", "handoff_us")  # what no option, environment or library changes
# ...and what only the machine can change between launches of one configuration (same library,
# environment, options and placement): it moved 2.5x with Open MPI's whole-run states here
RECORDED = IDENTITY_PIECES = PIECES + ("mpi_pingpong_us",)
NAMES = {"compute_us": "compute loop", "copy_us": "memory copy", "handoff_us": "cache-line handoff",
         "mpi_pingpong_us": "MPI pingpong"}


def _mad(logs: np.ndarray, policy: Policy) -> float:
    """A robust SD of `logs`: the MAD's (0 for fewer than 2 values)."""
    if len(logs) < 2:
        return 0.0
    return float(policy.mad_sigma * np.median(np.abs(logs - np.median(logs))))


@dataclass(frozen=True)
class States:
    """A piece's launches split where the machine's state switched: the main state's level and
    spread (log SD), and the other state's level when it held as many launches (else None)."""
    level: float
    between: float
    other: float | None


@dataclass(frozen=True)
class Level:
    """One piece of the control over a run's launches (or over a side's runs)."""
    piece: str
    launches: tuple[float, ...]  # each launch's median, µs, in launch order
    within: float  # the median over launches of their repetitions' log SD

    @cached_property
    def _states(self) -> States:  # a pooled level is compared with each of its runs: once
        return self._split(POLICY)

    def states(self, policy: Policy = POLICY) -> States:
        return self._states if policy is POLICY else self._split(policy)

    @property
    def level(self) -> float:
        return self._states.level

    def between(self, policy: Policy = POLICY) -> float:
        return self.states(policy).between

    def noise(self, policy: Policy = POLICY) -> float:
        """The log SD one launch's median has about the level: the larger of the main state's
        launches' spread and a median of the repetitions' own, never below the floor."""
        return self._noise(self.states(policy).between, policy)

    def _noise(self, between: float, policy: Policy) -> float:
        return max(between, self.within / math.sqrt(policy.control_reps), policy.control_noise_floor)

    def _split(self, policy: Policy) -> States:
        """Two states where the launches' medians fall into two groups whose widest gap is a
        switch (`moved_by` against the groups' own noise); the main state is the larger group, or
        on a tie the one holding the first launch. On a tie the other group is a state of the
        run too (`States.other`): neither holds a majority of its launches. A minority is only
        flagged: counting two launches of six as a state voided most comparisons apart on a
        machine that switches often (power 2/8 against 6/8 on the idle bench of 3 December)
        with no false verdict to save. One median and MAD over all launches would sit between
        two states that took three launches each and hide both (a run here: the handoff at
        0.07 us in three launches, 0.26-0.33 in three)."""
        logs = np.log(np.asarray(self.launches, float))
        whole = States(float(np.exp(np.median(logs))), _mad(logs, policy), None)
        # two launches 1.25x apart are no two states; the copy names no launch (its launches
        # moved 1.3-1.9x with the points unmoved) and so splits no run either
        if len(logs) < policy.min_launches or self.piece in policy.control_launch_excluded:
            return whole
        order = np.argsort(logs, kind="stable")
        gaps = np.diff(logs[order])
        cut = int(np.argmax(gaps)) + 1
        low, high = order[:cut], order[cut:]
        spread = max(_mad(logs[low], policy), _mad(logs[high], policy))
        if not moved_by(float(np.exp(gaps[cut - 1])), self._noise(spread, policy), policy, self.piece):
            return whole
        main, other = (low, high) if len(low) > len(high) or (len(low) == len(high) and 0 in low) else (high, low)
        return States(float(np.exp(np.median(logs[main]))), _mad(logs[main], policy),
                      float(np.exp(np.median(logs[other])))
                      if len(other) == len(main) and len(other) >= policy.mode_min_launches else None)


@dataclass(frozen=True)
class RunControl:
    """The control of one run (or of a side of several runs): by launch, each piece's median."""
    launches: Mapping[tuple[str, int], Control]  # (run id, launch) -> its control record

    @cached_property
    def levels(self) -> dict[str, Level]:
        """Each piece measured in some launch: its launches' medians and repetitions' spread."""
        out = {}
        for piece in RECORDED:
            figures = [getattr(c, piece) for c in self.launches.values()]
            figures = [f for f in figures if f is not None and f.median > 0]
            if figures:
                spread = [float(np.std(np.log(f.samples), ddof=1)) for f in figures
                          if len(f.samples) >= 2 and min(f.samples) > 0]
                out[piece] = Level(piece, tuple(f.median for f in figures),
                                   float(np.median(spread)) if spread else 0.0)
        return out

    def switched(self, policy: Policy = POLICY) -> dict[tuple[str, int], str]:
        """The launches whose control moved beyond the run's noise from its level, each with the
        cause ("machine state switched: ...", the piece that moved most against its noise); a run
        of fewer than `policy.min_launches` launches has no level to move from. A run is one
        configuration, so its MPI pingpong decides too (`moved_by`). The copy names no launch
        (`policy.control_launch_excluded`): its launches moved 1.3-1.9x from their run's with the
        points unmoved (docs/statistics.md)."""
        if len(self.launches) < policy.min_launches:
            return {}
        best: dict[tuple[str, int], tuple[float, str]] = {}
        for piece, lv in self.levels.items():
            if piece not in deciding(policy, True) or piece in policy.control_launch_excluded \
                    or len(lv.launches) < policy.min_launches:
                continue
            noise = lv.noise(policy)
            for key, c in self.launches.items():
                fig = getattr(c, piece)
                if fig is None:
                    continue
                ratio = fig.median / lv.states(policy).level
                moved = moved_by(ratio, noise, policy, piece)
                against = abs(math.log(ratio)) / noise
                if moved and against > best.get(key, (0.0, ""))[0]:
                    best[key] = (against, f"machine state switched: {NAMES[piece]} {moved} the run's level")
        return {key: cause for key, (_, cause) in best.items()}


def deciding(policy: Policy, same_config: bool) -> tuple[str, ...]:
    """The pieces that may tell a switch of state: the MPI pingpong too between launches of one
    configuration, unless the policy's switch (`control_mpi_same_config`) turns that off."""
    return IDENTITY_PIECES if same_config and policy.control_mpi_same_config else PIECES


def moved_by(ratio: float, noise: float, policy: Policy, piece: str = "") -> str:
    """'x2.9 of' when `ratio` lies beyond the noise and the piece's least ratio, else ''. An MPI
    pingpong beyond `control_max_cover` is no state: its ranks waited for a time slice during
    the control (x240-x1000 a launch, a run's level at 197 us, under a load of 12-16), which the
    disturbance counters judge on the points themselves."""
    d = abs(math.log(ratio))
    mpi = piece == "mpi_pingpong_us"
    if mpi and d > math.log(policy.control_max_cover):
        return ""
    least = policy.control_mpi_min_ratio if mpi else policy.control_min_ratio
    if d > policy.control_shift_sd * noise and d > math.log(least):
        return f"x{ratio:.3g} of"
    return ""


def run_control(records: Iterable, run_id: str = "") -> RunControl | None:
    """The control records of a run's records (or of several runs', each with its id); None when
    it has none (runs measured before the control, imports, simulations)."""
    found = {(run_id, launch_of(r)): r for r in records if isinstance(r, Control)}
    return RunControl(found) if found else None


def side_control(runs: Sequence[tuple[str, Iterable]]) -> RunControl | None:
    """One side of a comparison: the control of each (run id, records) together."""
    found: dict[tuple[str, int], Control] = {}
    for run_id, records in runs:
        rc = run_control(records, run_id)
        if rc is not None:
            found.update(rc.launches)
    return RunControl(found) if found else None


@dataclass(frozen=True)
class Shift:
    """Two runs' (or sides') controls: the piece that moved most against its noise, the ratio of
    its levels (candidate / baseline) and whether that is a switch of the machine's state."""
    piece: str
    ratio: float
    noise: float  # the larger side's log noise of that piece
    shifted: bool
    covers: float = 0.0  # the log change the switch can explain (`cover`)

    def cover(self) -> float:
        """The log change the machine's switch can explain, a point's change within it cannot be
        told from the state's (`control_shift` sets it from its policy)."""
        return self.covers

    @property
    def text(self) -> str:
        return (f"the machine's state differs (control: {NAMES[self.piece]} x{self.ratio:.3g}, "
                f"beyond its noise of {100 * math.expm1(self.noise):.0f}%)" if self.shifted else
                f"the controls agree ({NAMES[self.piece]} x{self.ratio:.3g})")


def control_shift(base: RunControl | None, cand: RunControl | None, policy: Policy = POLICY,
                  same_config: bool = False, states: bool = False) -> Shift | None:
    """Whether `cand` was measured in another state of the machine than `base`: the piece
    measured on both sides whose levels differ most against the larger of their noises, of
    `PIECES`, or of `IDENTITY_PIECES` when both sides are one configuration (`same_config`);
    None when a side has no control. With `states`, a side whose launches fell into two states
    (`Level.states`) differs by its other state too, against the other side's level: for
    estimates over all of a side's launches (`compare`), not for history's, which leave a
    switched launch out of its run's estimate."""
    if base is None or cand is None:
        return None
    bl, cl = base.levels, cand.levels
    best: Shift | None = None
    for piece in deciding(policy, same_config):
        if piece not in bl or piece not in cl:
            continue
        b, c = bl[piece].states(policy), cl[piece].states(policy)
        noise = max(bl[piece].noise(policy), cl[piece].noise(policy))
        ratios = [c.level / b.level]
        if states:  # two runs split alike but led by different states read as differing: inconclusive, not wrong
            ratios += [c.other / b.level] if c.other is not None else []
            ratios += [c.level / b.other] if b.other is not None else []
        for ratio in ratios:
            s = Shift(piece, ratio, noise, bool(moved_by(ratio, noise, policy, piece)), _covers(ratio, policy))
            if best is None or _rank(s) > _rank(best):
                best = s
    return best


def _covers(ratio: float, policy: Policy) -> float:
    """The log change a switch of state can give a point: up to the most one was seen to give
    (`control_max_cover`) whatever the control's own move, since a point moves by more than the
    piece that shows the switch (Open MPI's 2 KiB pingpong 3.8x where the handoff moved 3.7x and
    the MPI pingpong 2.5x); with `control_cover_max` off (the rule before), the control's own
    move up to that (a handoff that waited for a time slice moves by 1000x)."""
    most = math.log(policy.control_max_cover)
    return most if policy.control_cover_max else min(abs(math.log(ratio)), most)


def _rank(s: Shift) -> tuple[bool, float]:
    """Shifts first, the largest move among them; else the nearest to one."""
    move = abs(math.log(s.ratio))
    return s.shifted, move if s.shifted else move / s.noise
