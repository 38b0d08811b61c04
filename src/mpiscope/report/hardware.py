"""The hardware ceiling (analysis/hw.py) and LogGP (analysis/loggp.py) as text."""
from __future__ import annotations

from mpiscope.analysis.hw import Hardware
from mpiscope.analysis.loggp import LogGP
from mpiscope.util.units import human_size


def format_hardware(h: Hardware) -> str:
    lines = ["Hardware limit (one core, this node):"]
    if h.cacheline_us is not None:
        lines.append(f"  core-to-core cache-line latency: {h.cacheline_us:.3g} us one way "
                     f"(half a round trip through shared memory)")
    if h.memcpy_MBps:
        sizes = sorted(h.memcpy_MBps)
        best = max(sizes, key=lambda s: h.memcpy_MBps[s])
        lines.append(f"  memcpy bandwidth: {h.memcpy_MBps[best]:,.0f} MB/s at {human_size(best)} (best), "
                     f"{h.memcpy_MBps[sizes[-1]]:,.0f} MB/s at {human_size(sizes[-1])} (largest)")
    if h.efficiency is not None and h.efficiency_size is not None:
        lines.append(f"pingpong reaches {h.efficiency:.0%} of memcpy at {human_size(h.efficiency_size)} "
                     f"({h.pingpong_MBps[h.efficiency_size]:,.0f} of "
                     f"{h.memcpy_MBps[h.efficiency_size]:,.0f} MB/s)")
    elif h.memcpy_MBps:
        lines.append("  (no pingpong at a memcpy size: measure both, e.g. -b pingpong,memcpy, "
                     "for the efficiency line)")
    return "\n".join(lines)


def format_loggp(m: LogGP) -> str:
    # 1/G in MB/s (10^6 bytes per second, as every bandwidth mpiscope prints)
    bw = f"{1 / m.G_us_per_byte:.4g} MB/s" if m.G_us_per_byte > 0 else "bandwidth not identifiable: G is not positive"
    return "\n".join([
        f"LogGP (ranks 0 and 1; netgauge method, small messages of {m.size} B):",
        f"  L    {m.L_us:10.4g} us        latency: half round trip - o_s - o_r",
        f"  o_s  {m.o_s_us:10.4g} us        send overhead: MPI_Send of a small message, timed alone",
        f"  o_r  {m.o_r_us:10.4g} us        receive overhead: MPI_Recv of a message already there",
        f"  g    {m.g_us:10.4g} us        gap: time per message in a stream of small messages",
        f"  G    {m.G_us_per_byte:10.4g} us/byte   gap per byte: streams of large messages "
        f"({bw})"])
