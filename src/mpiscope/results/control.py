"""The machine-state control (docs/statistics.md, "The machine-state control"): each launch's
control record, each run's level and noise per piece, the launches whose control moved beyond
that noise, and whether two runs (or two sides of runs) were measured in different states of
the machine. Only the pieces no configuration can change (`PIECES`) decide; the MPI pingpong is
kept for the reader.

A run's noise for a piece is the larger of its launches' spread (a robust SD of their log
medians) and what one launch's median can tell (its repetitions' log SD over the root of their
number), never below the policy's floor: a shift is a move of the level beyond
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
RECORDED = PIECES + ("mpi_pingpong_us",)
NAMES = {"compute_us": "compute loop", "copy_us": "memory copy", "handoff_us": "cache-line handoff",
         "mpi_pingpong_us": "MPI pingpong"}


def _log_sd(xs: Sequence[float], policy: Policy) -> float:
    """A robust SD of the logs: the MAD's (0 for fewer than 2 values)."""
    if len(xs) < 2:
        return 0.0
    logs = np.log(np.asarray(xs, float))
    return float(policy.mad_sigma * np.median(np.abs(logs - np.median(logs))))


@dataclass(frozen=True)
class Level:
    """One piece of the control over a run's launches (or over a side's runs)."""
    piece: str
    launches: tuple[float, ...]  # each launch's median, µs
    within: float  # the median over launches of their repetitions' log SD

    @cached_property
    def level(self) -> float:  # a pooled level is compared with each of its runs: once
        return float(np.median(self.launches))

    @cached_property
    def _between(self) -> float:  # a pooled level is compared with each of its runs: its spread once
        return _log_sd(self.launches, POLICY)

    def between(self, policy: Policy = POLICY) -> float:
        return self._between if policy is POLICY else _log_sd(self.launches, policy)

    def noise(self, policy: Policy = POLICY) -> float:
        """The log SD one launch's median has about the level: the larger of the launches' spread
        and a median of the repetitions' own, never below the floor."""
        reps = self.within / math.sqrt(policy.control_reps)
        return max(self.between(policy), reps, policy.control_noise_floor)


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
        cause ("machine state switched: ..."); a run of fewer than `policy.min_launches` launches
        has no level to move from."""
        if len(self.launches) < policy.min_launches:
            return {}
        out: dict[tuple[str, int], str] = {}
        for piece, lv in self.levels.items():
            if piece not in PIECES or len(lv.launches) < policy.min_launches:
                continue
            for key, c in self.launches.items():
                fig = getattr(c, piece)
                if fig is None or key in out:
                    continue
                moved = _moved(fig.median / lv.level, lv.noise(policy), policy)
                if moved:
                    out[key] = f"machine state switched: {NAMES[piece]} {moved} the run's level"
        return out


def _moved(ratio: float, noise: float, policy: Policy) -> str:
    """'x2.9 of' when `ratio` lies beyond the noise and the least ratio, else ''."""
    d = abs(math.log(ratio))
    if d > policy.control_shift_sd * noise and d > math.log(policy.control_min_ratio):
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

    def cover(self, policy: Policy = POLICY) -> float:
        """The log change the machine's own move can explain, a point's change within it cannot
        be told from the state's: the control's, up to the largest move a switch of state was
        seen to give a point (a handoff that waited for a time slice moves by 1000x)."""
        return min(abs(math.log(self.ratio)), math.log(policy.control_max_cover))

    @property
    def text(self) -> str:
        return (f"the machine's state differs (control: {NAMES[self.piece]} x{self.ratio:.3g}, "
                f"beyond its noise of {100 * math.expm1(self.noise):.0f}%)" if self.shifted else
                f"the controls agree ({NAMES[self.piece]} x{self.ratio:.3g})")


def control_shift(base: RunControl | None, cand: RunControl | None, policy: Policy = POLICY) -> Shift | None:
    """Whether `cand` was measured in another state of the machine than `base`: the piece of
    `PIECES` measured on both sides whose levels differ most against the larger of their noises;
    None when a side has no control."""
    if base is None or cand is None:
        return None
    bl, cl = base.levels, cand.levels
    best: Shift | None = None
    for piece in PIECES:
        if piece not in bl or piece not in cl:
            continue
        ratio = cl[piece].level / bl[piece].level
        noise = max(bl[piece].noise(policy), cl[piece].noise(policy))
        s = Shift(piece, ratio, noise, bool(_moved(ratio, noise, policy)))
        if best is None or _rank(s) > _rank(best):
            best = s
    return best


def _rank(s: Shift) -> tuple[bool, float]:
    """Shifts first, the largest move among them; else the nearest to one."""
    move = abs(math.log(s.ratio))
    return s.shifted, move if s.shifted else move / s.noise
