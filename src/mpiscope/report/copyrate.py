"""The copy-rate mark as every table shows it; analysis/cache.py decides which figure carries it."""
from __future__ import annotations

from mpiscope.analysis.policy import ANALYSIS

MARK = "‡"
MARK_NOTE = (f"{MARK} more than {ANALYSIS.copy_margin:g}x faster than this launch's memcpy of the same bytes (of "
             "its working set; out of cache where every operation of an event went to one place, buffers single): "
             "a cache rate or data that did not move, not a transfer rate (working_set_bytes, copy_MB_per_s, "
             "memory_copy_MB_per_s)")
