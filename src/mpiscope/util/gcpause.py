"""Building hundreds of thousands of small objects without the cycle collector: records, their
table and its columns hold no reference cycles, so reference counting frees them all, and the
collector, run every few thousand allocations, would walk every object made so far again.
In the `mpiscope` command (one short process, `one_process`), what a block made is then frozen
out of the collector's later walks too (gc.freeze); a library caller's heap is never frozen."""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

_freeze = False


def one_process() -> None:
    """Called by the `mpiscope` command only: this process ends with its command, so objects
    that bulk reads made can be left out of every later collection (a 200 MB records file is
    millions of objects, walked in full by each collection after it was read: seconds)."""
    global _freeze
    _freeze = True


@contextmanager
def paused() -> Iterator[None]:
    """The cycle collector off inside the block (left as it was found: off stays off)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if _freeze:
            gc.freeze()
        if collecting:
            gc.enable()
