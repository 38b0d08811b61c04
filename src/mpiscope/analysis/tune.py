"""The tuning decisions: the race between a collective's algorithms at one size (which are
clearly slower and leave, when the race is over), the choice that keeps the library's default
unless another algorithm is faster beyond the noise, and the one comparison of two sets of
launch-level samples (ratio, interval, verdict) that both use.

The launch is the unit of evidence (docs/statistics.md): every figure here is a launch median."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from mpiscope.analysis.policy import ANALYSIS
from mpiscope.results.compare import compare_launches_of_point
from mpiscope.results.launches import LaunchPoint, aggregate_by
from mpiscope.results.policy import POLICY

MARGIN = POLICY.margin  # changes below it are the same (docs/statistics.md, the constants)
# The screen (`screened`): an algorithm leaves on fewer than two launches only when it is slower
# than the leader by more than SCREEN_Z standard errors of the machine's launch-to-launch noise;
# one-sided, 3 sigma is wrong once in 740 comparisons for normal log launch medians.
SCREEN_Z = 3.0


@dataclass(frozen=True)
class Ratio:
    """candidate / baseline of the launch medians' geometric means, its interval and verdict."""
    ratio: float
    low: float
    high: float
    verdict: str  # faster | slower | same | inconclusive (the candidate against the baseline)
    launches: tuple[int, int] = (0, 0)
    needed: int | None = None  # inconclusive: launches a side that would decide it at this noise (None: none would)


def judge(baseline: Sequence[float], candidate: Sequence[float], margin: float = MARGIN) -> Ratio:
    """The one comparison of tune: two sets of launch medians of a point, judged by the results
    layer (`results.compare.compare_launches_of_point`: Welch's interval of the ratio on the log
    launch medians, wild launches left out, `results.verdict.decide`'s verdict: faster/slower when
    significant and beyond `margin`, same when the interval lies inside the margin, else
    inconclusive). Fewer than two launches a side: inconclusive, no interval."""
    if len(baseline) < 2 or len(candidate) < 2:
        ratio = math.exp(float(np.mean(np.log(candidate)) - np.mean(np.log(baseline))))
        return Ratio(ratio, float("nan"), float("nan"), "inconclusive", (len(baseline), len(candidate)))
    v = compare_launches_of_point(baseline, candidate, margin)
    return Ratio(v.ratio, v.low, v.high, v.verdict, (len(baseline), len(candidate)), v.launches_needed)


def launch_points(points, key: str = "algorithm") -> dict[tuple, LaunchPoint]:
    """(collective, ranks, size, algorithm) -> the point over its launches, as the results layer
    groups them (`results.launches.aggregate_by`, every part of a tune's run one launch, disturbed
    launches left out, in launch order); the algorithm is the one the point's launch forced for
    its collective (key "algorithm"), or the launch's tag[key] (the side-by-side's "side", the
    liveness check's "probe")."""
    def name_of(p):
        tag = getattr(p, "tag", {}) or {}
        return tag.get("algorithms", {}).get(p.benchmark) if key == "algorithm" else tag.get(key)
    return {(lp.benchmark, lp.ranks, lp.size, name): lp for name, lps in aggregate_by(points, name_of).items()
            for lp in lps}


def launch_medians(points, key: str = "algorithm") -> dict[tuple, list[float]]:
    """`launch_points`' launch medians."""
    return {k: list(lp.launch_medians) for k, lp in launch_points(points, key).items()}


def fastest_mode(lp: LaunchPoint) -> list[float]:
    """The launch medians of the point's fastest mode, when the results layer finds several and
    the fastest holds at least half of the launches (the machine's usual state); else all of them.
    On a loaded machine a whole launch runs 100-1000 x slower now and then whatever it forces, and
    those launches say what the machine did, not what the knob did; a fast mode of a few launches
    is the rare state, and comparing it with the other side's usual one would compare states."""
    fastest = min(lp.modes, key=lambda m: m.median) if len(lp.modes) >= 2 else None
    if fastest is None or fastest.share < ANALYSIS.usual_mode_share:
        return list(lp.launch_medians)
    return sorted(lp.launch_medians)[:fastest.launches]


def best(samples: Mapping[str, Sequence[float]]) -> str:
    """The algorithm with the lowest geometric mean of its launch medians."""
    return min(samples, key=lambda a: float(np.mean(np.log(samples[a]))))


@dataclass(frozen=True)
class RaceState:
    """Where the race at one point stands after a round."""
    leader: str
    dropped: dict[str, Ratio]  # algorithm -> its ratio to the leader, clearly slower
    running: tuple[str, ...]  # still in the race (the leader among them)
    over: bool  # nothing left to learn: one left, or none of the rest faster than the leader beyond the margin


def separated(leader: Sequence[float], other: Sequence[float], margin: float = MARGIN) -> bool:
    """Every launch of `other` slower than every launch of the leader by more than `margin`: with
    two launches each, launches of two equal algorithms fall so by chance once in six even
    without the margin, and the margin makes it rarer still, where a t interval on two launches
    (one degree of freedom) would keep a twice slower algorithm in the race."""
    return min(other) > max(leader) * (1 + margin)


def launch_noise(launches: Sequence[Sequence[float]]) -> float | None:
    """The machine's launch-to-launch noise at a collective and rank count: the largest standard
    deviation of the log launch medians over its points that have three launches or more (the
    library's default measured in the liveness check's launches); None when none has."""
    sds = [float(np.std(np.log(v), ddof=1)) for v in launches if len(v) >= 3]
    return max(sds) if sds else None


def screened(samples: Mapping[str, Sequence[float]], leader: str, noise: float, margin: float = MARGIN,
             default: str | None = None) -> dict[str, Ratio]:
    """The algorithms (never the default) whose geometric mean is above the leader's by more than
    `margin` and SCREEN_Z standard errors of the launch-to-launch `noise` (the standard deviation
    of a log launch median, measured on the default's launches): clearly slower on one launch
    each, where Welch's interval would need two or more."""
    out = {}
    lead = np.log(samples[leader])
    for a, v in samples.items():
        if a in (leader, default):
            continue
        gap = float(np.mean(np.log(v)) - np.mean(lead))
        bound = SCREEN_Z * noise * math.sqrt(1 / len(v) + 1 / len(lead)) + math.log1p(margin)
        if gap > bound:
            out[a] = Ratio(math.exp(gap), float("nan"), float("nan"), "slower", (len(lead), len(v)))
    return out


def race(samples: Mapping[str, Sequence[float]], margin: float = MARGIN, min_launches: int = 2,
         default: str | None = None, noise: float | None = None) -> RaceState:
    """One round's verdict on the algorithms still running at a point (their launch medians):
    an algorithm clearly slower than the leader leaves (its launches all slower than all of the
    leader's by more than `margin`, or its ratio's interval above 1 by at least `margin`); the
    race is over when one is left or no other can be faster than the leader by more than `margin`. Before
    `min_launches` launches each, nobody leaves. The `default` is the baseline the leader must be
    proven "faster" than (`choose`, on all launches of both): it leaves only on the verdict
    "slower" with more than `min_launches` launches (on two, Welch's interval has one degree of
    freedom and a verdict reached there comes undone once the leader has more launches than it),
    and the race is not over while more launches may still prove the leader faster than it. With
    the machine's launch-to-launch `noise` known, an algorithm clearly slower leaves on one launch
    (`screened`), before Welch's interval can say so. Once two algorithms have `min_launches`,
    they are the field the verdicts are reached in (`judged`): one with fewer launches behind the
    field's leader was screened or halved out (`halved`) and runs no more; one ahead of it runs
    until it has launches to compare."""
    field = judged(samples, min_launches)
    if len(field) < 2:
        leader = best(samples)
        dropped = screened(samples, leader, noise, margin, default) if noise is not None else {}
        running = tuple(a for a in samples if a not in dropped)
        return RaceState(leader, dropped, running, len(running) == 1)
    leader = best(field)
    ahead = [a for a in samples if a not in field and np.mean(np.log(samples[a])) < np.mean(np.log(field[leader]))]
    samples = field
    ratios = {a: judge(samples[leader], s, margin) for a, s in samples.items() if a != leader}
    dropped = {a: r for a, r in ratios.items()
               if (a != default and (r.verdict == "slower" or separated(samples[leader], samples[a], margin)))
               or (a == default and r.verdict == "slower" and len(samples[a]) > min_launches)}
    running = tuple(a for a in samples if a not in dropped) + tuple(ahead)
    # over when no runner can be faster than the leader by more than the margin: the leader is
    # then within the margin of the true best, whatever more launches would show; and when the
    # default is proven slower than the leader, or cannot be slower by more than the margin (else
    # more launches may prove the gain)
    d = ratios.get(default)
    over = all(ratios[a].low >= 1 / (1 + margin) for a in running if a not in (leader, default, *ahead)) and \
        (d is None or d.verdict == "slower" or d.high < 1 + margin) and not ahead
    return RaceState(leader, dropped, running, over)


def judged(samples: Mapping[str, Sequence[float]], min_launches: int = 2) -> dict[str, Sequence[float]]:
    """The algorithms with launches enough to compare (`min_launches`)."""
    return {a: v for a, v in samples.items() if len(v) >= min_launches}


@dataclass(frozen=True)
class Choice:
    """What tune writes for a point: the algorithm and its evidence against the default."""
    algorithm: str  # DEFAULT: leave the library's own choice
    leader: str
    against_default: Ratio | None  # the leader / default (None: the default was not measured)


def choose(samples: Mapping[str, Sequence[float]], default: str, margin: float = MARGIN) -> Choice:
    """The leader only where its verdict against the default is "faster" (significant and beyond
    `margin`, on every launch measured); else the default: no change without evidence. The
    leader is among the algorithms with launches to compare where any has (`judged`)."""
    leader = best(judged(samples) or samples)
    if leader == default or default not in samples:
        return Choice(default if leader == default else leader, leader, None)
    r = judge(samples[default], samples[leader], margin)
    return Choice(leader if r.verdict == "faster" else default, leader, r)


KEEP, MEASURE, WITHDRAW = "keep", "measure", "withdraw"


def settle(side_by_side: Ratio, cap: int) -> str:
    """What becomes of a change after its side-by-side run (`side_by_side`: tuned against the
    default): KEEP when the verdict is "faster"; MEASURE while it is inconclusive and fewer than
    `cap` launches a side were run; else WITHDRAW (the file keeps the library's choice there).
    Only a proven gain is written; report/tune.py's `settle_reason` says why."""
    r = side_by_side
    if r.verdict == "faster":
        return KEEP
    if r.verdict == "inconclusive" and min(r.launches) < cap:
        return MEASURE
    return WITHDRAW


def void_by_controls(rows: list[dict], default: str, reason: Callable[[dict], str]) -> list[dict]:
    """The side-by-side's rows with every kept change withdrawn where a control of the same rank
    count moved: at a control both sides run the library's choice (`default`), so a verdict "faster" or
    "slower" there is the machine drifting between the two sides' launches by more than the
    margin, and a gain measured in those launches cannot be told apart from that drift.
    `reason(control_row)` words the withdrawal (report/tune.py's `control_reason`)."""
    moved: dict[int, dict] = {}
    for r in rows:
        if r["algorithm"] == default and r["verdict"] in ("faster", "slower"):
            moved.setdefault(r["ranks"], r)
    out = []
    for r in rows:
        c = moved.get(r["ranks"])
        if c is not None and r["settle"] == KEEP:
            r = {**r, "settle": WITHDRAW, "reason": reason(c)}
        out.append(r)
    return out


def to_measure(samples: Mapping[str, Sequence[float]], round_: int, margin: float = MARGIN,
               racing: bool = True, default: str | None = None, noise: float | None = None,
               points: int = 1) -> list[str]:
    """The algorithms of one point that get a launch in round `round_` (0-based): all of them
    until each has a launch, then those still in a race that is not over, halved round by round
    (`halved`, the round's launches shared among the `points` raced in one launch; without
    `racing`: all, every round). An algorithm that already has this round's launch is done."""
    names = list(samples)
    if racing and all(samples[a] for a in names):
        st = race(samples, margin, default=default, noise=noise)
        names = [] if st.over else halved(samples, st.running, round_, default, points)
    return [a for a in names if len(samples[a]) <= round_]


def halved(samples: Mapping[str, Sequence[float]], running: Sequence[str], round_: int,
           default: str | None = None, points: int = 1) -> list[str]:
    """Successive halving: in round r >= 1, of the N algorithms raced besides the default, the
    best ceil(N / (2^(r+1) points)) still running by the geometric mean of their launch medians
    (at least the leader), and the default (the baseline, never left out by rank). A launch's
    start-up costs as much as its points, and one launch measures an algorithm at all the
    `points` (sizes) it races at: the round's launches, N / 2^(r+1), are shared among the sizes.
    The launches spent on runners not clearly slower, only unlikely to lead, are what halving
    saves: N (1 + 1/4 + 1/8 + ...) launches and the leaders', where measuring everything spends N
    a round."""
    contenders = [a for a in samples if a != default]
    keep = math.ceil(len(contenders) / (2 ** (round_ + 1) * points)) if round_ else len(contenders)
    ranked = sorted((a for a in running if a != default), key=lambda a: float(np.mean(np.log(samples[a]))))
    return [a for a in running if a == default or a in ranked[:keep]]
