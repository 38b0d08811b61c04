"""Size expressions, parsed exactly as the engine does (docs/engine.md).

Python checks them before anything is built or launched, so a typo costs no
compile and no mpiexec; tests cross-check this parser against the engine's.
"""
from __future__ import annotations

import re

from mpiscope.errors import UsageError

SIZE_MAX_BYTES = 2**31 - 1  # MPI counts are int
MAX_SIZES = 100_000
_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_NUMBER = re.compile(r"([0-9]+)(.*)", re.S)


def _number(text: str, unit: int) -> int:
    m = _NUMBER.fullmatch(text)
    if not m:
        raise UsageError(f"'{text}' is not a size: expected a number such as 64, 4K or 1M")
    digits, rest = m.groups()
    suffix = rest[:1].upper() if rest[:1].upper() in "KMG" and rest else ""
    tail = rest[len(suffix):]
    if tail[:1] in ("B", "b"):
        tail = tail[1:]
    if tail:
        raise UsageError(f"'{text}' is not a size: unknown suffix '{tail}' (use K, M or G)")
    value = int(digits) * _SUFFIX[suffix] * unit
    if value > SIZE_MAX_BYTES:
        raise UsageError(f"size '{text}' is larger than 2^31-1 bytes, the largest MPI count")
    return value


def _push(out: list[int], x: int) -> None:
    if len(out) >= MAX_SIZES:
        raise UsageError(f"too many sizes (more than {MAX_SIZES})")
    out.append(x)


def _term(term: str, unit: int, out: list[int]) -> None:
    parts = term.split(":")
    if len(parts) > 3:
        raise UsageError(f"'{term}': a range has at most three parts, A:B:STEP")
    a = _number(parts[0], unit)
    if len(parts) == 1:
        _push(out, a)
        return
    b = _number(parts[1], unit)
    if a > b:
        raise UsageError(f"range {parts[0]}:{parts[1]} is empty: the start is larger than the end")
    step = parts[2] if len(parts) == 3 else "*2"
    if step == "2^k-1":
        if a == 0:
            _push(out, 0)
        p = 1
        while p * unit <= b:
            if (p - 1) * unit >= a and p > 1:
                _push(out, (p - 1) * unit)
            if p * unit >= a:
                _push(out, p * unit)
            if p * unit > SIZE_MAX_BYTES // 2:
                break
            p *= 2
        return
    if step[:1] == "+" and step[1:2].isdigit():
        if not re.fullmatch(r"\+[0-9]+", step) or int(step[1:]) < 1:
            raise UsageError(f"step '{step}': use +N with N >= 1")
        out.extend(range(a, b + 1, int(step[1:]) * unit)[: MAX_SIZES - len(out) + 1])
        if len(out) > MAX_SIZES:
            raise UsageError(f"too many sizes (more than {MAX_SIZES})")
        return
    if step[:1] == "*" and step[1:2].isdigit():
        _geometric(step, a, b, unit, implicit=len(parts) == 2, out=out)
        return
    raise UsageError(f"unknown step '{step}': use +N (linear), *F (geometric) or 2^k-1")


def _geometric(step: str, a: int, b: int, unit: int, implicit: bool, out: list[int]) -> None:
    """*F counted in units: each size max(round(F x), x + 1), so *1.2 in words is the ring case
    study's n = max(nint(1.2 n), n + 1); A:B alone is *2 from A rounded up to a power of two."""
    try:
        f = float(step[1:])
    except ValueError:
        f = float("nan")
    if not re.fullmatch(r"\*[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?", step) or not 1.0 < f <= 1e6:
        raise UsageError(f"step '{step}': use *F with F > 1 (*2, *4, *1.2)")
    x = a // unit
    if implicit and x > 0:
        p = 1
        while p < x:
            p *= 2
        x = p
    while x * unit <= b:
        _push(out, x * unit)
        nxt = x * f + 0.5
        if nxt > SIZE_MAX_BYTES:
            break
        x = max(int(nxt), x + 1)


def parse_sizes(expr: str, units: str = "bytes") -> list[int]:
    """The sorted, de-duplicated sizes in bytes, or a UsageError naming the fix."""
    if units not in ("bytes", "words"):
        raise UsageError(f"--units expects 'bytes' or 'words', got '{units}'")
    unit = 8 if units == "words" else 1
    if expr == "":
        raise UsageError("empty size expression")
    out: list[int] = []
    # like strtok: empty terms between commas are skipped, leading blanks dropped
    for term in expr.split(","):
        if term == "":
            continue
        _term(term.lstrip(" \t\n\v\f\r"), unit, out)
    if not out:
        raise UsageError(f"'{expr}' gives no sizes")
    return sorted(set(out))


def human_size(n: int) -> str:
    """4096 -> '4 KiB'; sizes that are not whole binary units stay in bytes."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"
