"""LogGP parameters of a pair of ranks and how they are derived from the
netgauge-style measurements the engine is to provide (kernels not written yet;
the required measurements are listed in docs/models.md)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .hockney import fit_hockney
from .points import Point


@dataclass(frozen=True)
class LogGP:
    L_us: float          # wire latency: half round trip minus both overheads
    o_s_us: float        # send overhead: time a rank is busy posting a send
    o_r_us: float        # receive overhead: time busy completing a receive
    g_us: float          # gap: minimum time between consecutive small messages
    G_us_per_byte: float  # gap per byte: 1 / streaming bandwidth for long messages
    P: int = 2

    def ptp_time(self, n: int) -> float:
        """One message of n bytes, LogGP: o_s + (n-1) G + L + o_r."""
        return self.o_s_us + max(n - 1, 0) * self.G_us_per_byte + self.L_us + self.o_r_us

    def stream_time(self, k: int, n: int) -> float:
        """k back-to-back messages of n bytes from one sender."""
        per = max(self.g_us, self.o_s_us, (n - 1) * self.G_us_per_byte)
        return (self.o_s_us + (k - 1) * per + max(n - 1, 0) * self.G_us_per_byte
                + self.L_us + self.o_r_us)


def loggp_from_measurements(pingpong_small_us: float, send_overhead_us: float,
                            recv_overhead_us: float, stream: Sequence[Point],
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
