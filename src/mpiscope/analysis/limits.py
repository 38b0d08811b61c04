"""Which of the library's protocol limits stand where a measured switch is (issue 31): a switch
between the measured sizes lo and hi is tied to a limit whose value lies in (lo, hi], since the
message size at which the protocol changes is the limit itself or a header's bytes below it
(MPICH's CH4 shared memory: 8192-byte cells, a switch at ~8064 B)."""
from __future__ import annotations

from typing import Mapping


def settings_at(bracket: tuple[int, int], limits: Mapping[str, str]) -> list[str]:
    """`NAME=VALUE` of every limit whose value lies in the switch's bracket (lo, hi]."""
    lo, hi = bracket
    found = []
    for name, value in sorted(limits.items()):
        try:
            v = float(value)
        except ValueError:
            continue
        if lo < v <= hi:
            found.append(f"{name}={value}")
    return found
