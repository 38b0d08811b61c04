"""The racing rule of `mpiscope tune` on synthetic launches with known per-algorithm
distributions: it keeps the true best (within the margin), spends at most half of measuring
every algorithm in every round, and keeps the default where it is as fast as the best."""
from __future__ import annotations

import numpy as np

from mpiscope.analysis.tune import MARGIN, choose, judge, race, separated, to_measure

ROUNDS = 8
# true launch-median time (us) of each algorithm at one point, and launch-to-launch noise (log sd)
TRUE = {"default": 12.0, "ring": 10.0, "recursive_doubling": 10.2, "linear": 25.0, "bruck": 16.0, "chain": 40.0}
NOISE = 0.04


def simulate(true: dict[str, float], rng: np.random.Generator, racing: bool = True) -> tuple[dict, int]:
    """The race over ROUNDS rounds as tune runs it: each round, one launch of every algorithm
    `to_measure` names; the launch median drawn from a log-normal around the true time."""
    samples: dict[str, list[float]] = {a: [] for a in true}
    spent = 0
    for r in range(ROUNDS):
        for a in to_measure(samples, r, MARGIN, racing):
            samples[a].append(true[a] * float(np.exp(rng.normal(0, NOISE))))
            spent += 1
    return samples, spent


def test_race_keeps_the_true_best_within_the_margin_at_half_the_cost_or_less():
    rng = np.random.default_rng(7)
    exhaustive = len(TRUE) * ROUNDS
    best_time = min(TRUE.values())
    total = 0
    trials = 200
    for trial in range(trials):
        samples, spent = simulate(TRUE, rng)
        chosen = choose(samples, "default")
        assert TRUE[chosen.leader] <= best_time * (1 + MARGIN), (trial, chosen, samples)
        assert chosen.algorithm in ("ring", "recursive_doubling"), (trial, chosen)  # 17 % faster than the default
        # a close race between the two best may run longer, never to the end for everyone
        assert spent <= 0.6 * exhaustive, (trial, spent, exhaustive)
        total += spent
    assert total <= trials * exhaustive / 2, (total / trials, exhaustive)  # the cost: at most half on average


def test_exhaustive_measures_everything_in_every_round():
    samples, spent = simulate(TRUE, np.random.default_rng(1), racing=False)
    assert spent == len(TRUE) * ROUNDS
    assert all(len(v) == ROUNDS for v in samples.values())


def test_a_default_within_the_noise_of_the_best_is_kept():
    rng = np.random.default_rng(3)
    kept = 0
    for _ in range(100):
        samples, _ = simulate({"default": 10.0, "ring": 10.1, "linear": 30.0}, rng)
        kept += choose(samples, "default").algorithm == "default"
    assert kept >= 95  # a change without evidence at most in the 5 % a test allows


def test_nobody_leaves_before_two_launches_and_a_clear_loser_leaves_after():
    one = {"a": [10.0], "b": [30.0]}
    assert race(one).running == ("a", "b") and not race(one).over
    two = {"a": [10.0, 10.3], "b": [30.0, 29.0]}
    st = race(two)
    assert st.leader == "a" and "b" in st.dropped and st.over
    assert separated([10.0, 10.3], [30.0, 29.0]) and not separated([10.0, 10.3], [10.5, 12.0])


def test_judge_verdicts():
    base = [10.0, 10.2, 9.9, 10.1]
    assert judge(base, [8.0, 8.1, 7.9, 8.05]).verdict == "faster"
    assert judge(base, [12.0, 12.1, 11.9, 12.2]).verdict == "slower"
    assert judge(base, [10.05, 10.1, 9.95, 10.0]).verdict == "same"
    assert judge(base, [9.0, 11.5, 8.0, 12.0]).verdict == "inconclusive"
    r = judge(base, [8.0, 8.1, 7.9, 8.05])
    assert r.low < r.ratio < r.high and r.launches == (4, 4)
