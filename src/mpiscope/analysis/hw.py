"""The hardware's own limit for on-node communication (single-core memcpy
bandwidth, core-to-core cache-line latency; engine/src/kernels/hw.c) and how
close MPI's pingpong comes to it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from mpiscope.records import Record

from mpiscope.records.measured import Measured

from .measured import select

MEMCPY, CACHELINE = "memcpy", "cacheline"
REFERENCE_BYTES = 1 << 20      # the size the efficiency line is quoted at


@dataclass(frozen=True)
class Hardware:
    memcpy_MBps: dict[int, float]          # size -> median bandwidth (10^6 bytes/s)
    cacheline_us: float | None             # one-way core-to-core latency, half a round trip
    pingpong_MBps: dict[int, float]        # pingpong bandwidth at the same sizes, if measured
    efficiency_size: int | None            # where the efficiency is quoted
    efficiency: float | None               # pingpong / memcpy bandwidth there

    def to_json(self) -> dict:
        return {"memcpy_MBps": {str(k): v for k, v in self.memcpy_MBps.items()},
                "cacheline_us": self.cacheline_us,
                "pingpong_MBps": {str(k): v for k, v in self.pingpong_MBps.items()},
                "efficiency_size": self.efficiency_size, "efficiency": self.efficiency}


def _bandwidth(points: list[Measured]) -> dict[int, float]:
    """Median over repeats of size / time: bytes per microsecond = MB/s."""
    by: dict[int, list[float]] = {}
    for p in points:
        if p.size > 0 and p.median > 0:
            by.setdefault(p.size, []).append(p.size / p.median)
    return {s: sorted(v)[len(v) // 2] for s, v in sorted(by.items())}


def hardware_from_records(records: Iterable[Record | Measured]) -> Hardware | None:
    """None unless the records (typed, or any measurements) hold memcpy or cacheline points.

    The efficiency is pingpong bandwidth / memcpy bandwidth at 1 MiB, or at the
    common size nearest to it when 1 MiB was not measured by both. A pingpong
    moves the message once per direction through shared memory: MPICH and Open
    MPI copy it into a shared buffer and out again (two memcpys), or once with
    a kernel-assisted single copy (CMA, XPMEM) for large messages, so 50 % and
    100 % are the two natural ceilings."""
    recs = list(records)
    mc = _bandwidth(select(recs, MEMCPY))
    cl = select(recs, CACHELINE)
    if not mc and not cl:
        return None
    pp = _bandwidth(select(recs, "pingpong", ranks=2))
    common = sorted(set(mc) & set(pp))
    size = min(common, key=lambda s: abs(s - REFERENCE_BYTES) / min(s, REFERENCE_BYTES)) \
        if common else None
    lat = sorted(p.median for p in cl)[len(cl) // 2] if cl else None
    return Hardware(memcpy_MBps=mc, cacheline_us=lat, pingpong_MBps={s: pp[s] for s in common},
                    efficiency_size=size,
                    efficiency=pp[size] / mc[size] if size is not None else None)
