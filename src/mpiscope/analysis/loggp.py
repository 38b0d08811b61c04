"""LogGP parameters of a pair of ranks, derived netgauge-style from the engine's
overhead_send, overhead_recv, pingpong and bw records (docs/models.md)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from mpiscope.records import Record

from .hockney import fit_hockney
from mpiscope.records.measured import Measured

from .measured import select
from .policy import ANALYSIS


@dataclass(frozen=True)
class LogGP:
    L_us: float          # wire latency: half round trip minus both overheads
    o_s_us: float        # send overhead: time a rank is busy posting a send
    o_r_us: float        # receive overhead: time busy completing a receive
    g_us: float          # gap: minimum time between consecutive small messages
    G_us_per_byte: float  # gap per byte: 1 / streaming bandwidth for long messages
    P: int = 2
    size: int = 1         # message size at which o_s, o_r and L were taken

    def ptp_time(self, n: int) -> float:
        """One message of n bytes, LogGP: o_s + (n-1) G + L + o_r."""
        return self.o_s_us + max(n - 1, 0) * self.G_us_per_byte + self.L_us + self.o_r_us

    def stream_time(self, k: int, n: int) -> float:
        """k back-to-back messages of n bytes from one sender."""
        per = max(self.g_us, self.o_s_us, (n - 1) * self.G_us_per_byte)
        return (self.o_s_us + (k - 1) * per + max(n - 1, 0) * self.G_us_per_byte
                + self.L_us + self.o_r_us)


def loggp_from_measurements(pingpong_small_us: float, send_overhead_us: float,
                            recv_overhead_us: float, stream: Sequence[Measured],
                            window: int) -> LogGP:
    """Combine netgauge-style measurements into LogGP.

    `stream` are points of the engine's `bw` benchmark (time per message when
    `window` messages are in flight, i.e. event / window): its Hockney fit has
    intercept ~ g and slope ~ G. L follows from the small-message half round
    trip: RTT/2 = o_s + L + o_r."""
    fit = fit_hockney(stream)
    g = max(fit.alpha_us, send_overhead_us)
    L = max(pingpong_small_us - send_overhead_us - recv_overhead_us, 0.0)
    return LogGP(L_us=L, o_s_us=send_overhead_us, o_r_us=recv_overhead_us,
                 g_us=g, G_us_per_byte=fit.beta_us_per_byte)


# The kernels that make LogGP measurable (engine/src/kernels/loggp.c).
OVERHEAD_SEND, OVERHEAD_RECV = "overhead_send", "overhead_recv"


def _at_smallest(points: Sequence[Measured], size: int | None = None) -> Measured | None:
    """The point at `size`, else at the smallest size measured (median of repeats)."""
    if not points:
        return None
    want = size if size is not None and any(p.size == size for p in points) \
        else min(p.size for p in points)
    same = sorted((p for p in points if p.size == want), key=lambda p: p.median)
    return same[len(same) // 2]


def loggp_from_records(records: Iterable[Record | Measured]) -> LogGP | None:
    """LogGP of ranks 0 and 1 from one run's (or several runs') records, or None
    when overhead_send, overhead_recv, pingpong and bw are not all there.

    o_s, o_r and the pingpong half round trip are taken at the smallest size
    the overhead kernels measured (the same size for all three when pingpong
    has it); g is bw's time per message at its smallest size (a stream of small
    messages is limited by the gap); G is the slope of bw's time per message
    over its large sizes (>= 64 KiB, or the largest three)."""
    recs = list(records)
    os_pts = select(recs, OVERHEAD_SEND)
    or_pts = select(recs, OVERHEAD_RECV)
    pp = select(recs, "pingpong", ranks=2)
    bw = select(recs, "bw", ranks=2)
    if not (os_pts and or_pts and pp and bw):
        return None
    small = min(p.size for p in os_pts)
    o_s, o_r = _at_smallest(os_pts, small), _at_smallest(or_pts, small)
    half_rtt = _at_smallest(pp, o_s.size)
    large = [p for p in bw if p.size >= ANALYSIS.loggp_large_bytes]
    sizes = sorted({p.size for p in bw})
    if len({p.size for p in large}) < ANALYSIS.loggp_large_sizes:
        large = [p for p in bw if p.size >= sizes[max(0, len(sizes) - ANALYSIS.loggp_large_sizes)]]
    G = fit_hockney(large).beta_us_per_byte if len({p.size for p in large}) >= 2 else float("nan")
    g = max(_at_smallest(bw).median, o_s.median)
    L = max(half_rtt.median - o_s.median - o_r.median, 0.0)
    return LogGP(L_us=L, o_s_us=o_s.median, o_r_us=o_r.median, g_us=g, G_us_per_byte=G,
                 size=o_s.size)
