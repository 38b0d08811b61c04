"""Telling a rate limiter's burst from a protocol switch (docs/models.md, "A token bucket").

A token bucket (`tc tbf`, a cloud NIC's burst allowance) sends a message at the line rate while
tokens last and at the shaped rate after, so a sweep bends where messages outgrow the bucket, the
shape of a protocol switch. What a switch never does is split one point's samples: above a burst,
a sample that starts with the bucket refilled (after the pause of a synchronised start) goes at
the line rate and the next ones, on an empty bucket, at the shaped rate. So just above a burst a
point's fastest samples are far faster than the new regime's per-byte cost alone allows (its
bytes times beta, latency aside), which no protocol can do: a protocol is fixed per size, and a
point slowed by a busy machine has a slow median but its fastest samples on the regime's line.

Measured here (two namespace hosts, tbf 200 Mbit/s, burst 64 kB, MPICH over TCP, load 12-18):
the fastest sample of 16-64 KiB is 1/100-1/5 of the shaped regime's bytes x beta (median/fastest
4-52); from 128 KiB the points are whole again (1.0-1.3), the bucket too small to matter."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .policy import ANALYSIS

def _records(point) -> list:
    return [r for r in (getattr(point, "points", ()) or [point])
            if getattr(r, "time_us", None) is not None and r.time_us.min and r.time_us.median]


def fastest(point) -> float | None:
    """The fastest sample over a point's launches (µs)."""
    mins = [r.time_us.min for r in _records(point)]
    return min(mins) if mins else None


def split_ratio(point) -> float | None:
    """How far a point's median sits above its fastest sample (the median over its launches'
    records; None without both)."""
    ratios = [r.time_us.median / r.time_us.min for r in _records(point) if r.time_us.min > 0]
    return float(np.median(ratios)) if ratios else None


def is_burst(bracket: tuple[int, int], points: Sequence, beta_after: float | None) -> bool:
    """Whether the break between `bracket`'s sizes is the burst of a rate limiter: enough of the
    sizes either side of it are split (a median far above the fastest sample), with a fastest
    sample well below their bytes x `beta_after` (the per-byte cost of the regime after the break,
    the shaped one, µs per byte), and the largest size measured is whole again (the `burst_*`
    thresholds of `analysis.policy`). A busy machine
    splits points too, but their fastest samples stay on their regime's line, at or above its
    bytes x beta."""
    if beta_after is None or not math.isfinite(beta_after) or beta_after <= 0:
        return False
    lo, hi = bracket
    below = sorted((p for p in points if p.size <= lo), key=lambda p: p.size)
    beyond = sorted((p for p in points if p.size >= hi), key=lambda p: p.size)
    # far above a burst the bucket's share of a message is small and its points are whole again;
    # a busy machine splits the longest points most
    if not beyond or (split_ratio(beyond[-1]) or 1.0) >= ANALYSIS.burst_split_ratio:
        return False

    def fast(p) -> bool:  # split, and faster than the shaped regime allows
        return (split_ratio(p) or 1.0) >= ANALYSIS.burst_split_ratio \
            and ANALYSIS.burst_fast_share * (fastest(p) or math.inf) <= beta_after * p.size
    near = ANALYSIS.burst_split_near
    return bool(sum(map(fast, below[-near:] + beyond[:near])) >= ANALYSIS.burst_split_min)
