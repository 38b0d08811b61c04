"""Sizes as people read them."""
from __future__ import annotations


def human_size(n: int) -> str:
    """4096 -> '4 KiB'; sizes that are not whole binary units stay in bytes."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"
