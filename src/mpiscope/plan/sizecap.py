"""The cap on a size list: how many sizes an expression asks for, counted before anything expands
it (the engine, the one interpreter of sizes, expands it when it plans; docs/engine.md), so a
list of a billion sizes is one line, not a plan the engine builds and Python reads. Only the
count is worked out here: a term this cannot read is left to the engine's own message."""
from __future__ import annotations

import math
import re

from mpiscope.util.errors import UsageError

MAX_SIZES = 10_000      # sizes in one list unless --max-sizes says more
ENGINE_MAX_SIZES = 100_000  # the engine's own limit (engine/src/sizes.c): --max-sizes goes no further
_NUMBER = re.compile(r"(\d+)([KMG]?)B?", re.IGNORECASE)
_SCALE = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def check_size_count(expr: str | None, limit: int | None) -> None:
    """Refuse `expr` when it asks for more sizes than `limit` (default MAX_SIZES), with the count
    and the flag that raises the limit. Bytes or words alike: the count is of the numbers."""
    if not expr:
        return
    cap = limit or MAX_SIZES
    count = sum(_term_count(t.strip()) for t in expr.split(","))
    if count <= cap:
        return
    fix = ("measure fewer sizes" if cap >= ENGINE_MAX_SIZES else
           f"measure fewer sizes, or raise the limit with --max-sizes N (up to {ENGINE_MAX_SIZES:,}, the engine's)")
    raise UsageError(f"--sizes '{expr}' asks for {count:,} sizes, more than the limit of {cap:,}: {fix}")


def _term_count(term: str) -> int:
    """The sizes one term asks for (an upper bound where the engine merges duplicates); 1 for a
    term this cannot read."""
    parts = term.split(":")
    ends = [_number(p) for p in parts[:2]]
    if len(parts) == 1 or len(parts) > 3 or None in ends or ends[0] > ends[1]:
        return 1
    first, last = ends
    step = parts[2] if len(parts) == 3 else "*2"
    if step.startswith("+") and step[1:].isdigit() and int(step[1:]) >= 1:
        return (last - first) // int(step[1:]) + 1
    if step == "2^k-1":
        return 2 * max(last, 1).bit_length() + 1
    if step.startswith("*"):
        try:
            factor = float(step[1:]) if len(parts) == 3 else 2.0
        except ValueError:
            return 1
        return _geometric_count(first, last, factor) if factor > 1 else 1
    return 1


def _geometric_count(x: int, last: int, factor: float) -> int:
    """Sizes x, max(round(F x), x + 1), ... up to `last`: steps of one while F x - x < 1.5
    (counted at once), then geometric ones (each at least 1.5, so their number is logarithmic)."""
    count = 0
    ones_until = min(last, math.ceil(1.5 / (factor - 1)))
    if x < ones_until:
        count, x = ones_until - x, ones_until
    while x <= last:
        if count > ENGINE_MAX_SIZES:  # far past any cap: the rest as the logarithm says, not one by one
            return count + math.ceil(math.log(last / x) / math.log(factor)) + 1
        count += 1
        x = max(int(x * factor + 0.5), x + 1)
    return count


def _number(text: str) -> int | None:
    m = _NUMBER.fullmatch(text.strip())
    return int(m.group(1)) * _SCALE[m.group(2).upper()] if m else None
