"""Building hundreds of thousands of small objects without the cycle collector: records, their
table and its columns hold no reference cycles, so reference counting frees them all, and the
collector, run every few thousand allocations, would walk every object made so far again."""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def paused() -> Iterator[None]:
    """The cycle collector off inside the block (left as it was found: off stays off)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
