"""The clock under the measurement: CPU governor and frequency, the kernel's clock source, the
engine's timer resolution and cost."""
from __future__ import annotations

from mpiscope.checks import GOVERNOR_FIX, unsteady
from mpiscope.doctor import Check, ok, skip, warn
from mpiscope.doctor.facts import Facts

GROUP = "clock"
# Clock sources whose reading is a cheap instruction; others (hpet, acpi_pm) cost a device access.
FAST_CLOCKSOURCES = {"tsc", "kvm-clock", "arch_sys_counter", "hyperv_clocksource_tsc_page", "timebase"}
MHZ_SPREAD = 0.10      # ranks of one host whose clocks differ by more than this are scaling
RESOLUTION_S = 1e-7    # a timer coarser than this blurs sub-microsecond latencies
OVERHEAD_S = 1e-6      # a clock read dearer than this is in every sample


def governor(f: Facts) -> Check:
    name = "CPU governor"
    if not f.governors:
        return ok(name, "cpufreq not exposed on this machine (a VM or a fixed clock): nothing scales it")
    bad = unsteady(f.governors)
    if bad:
        what = "; ".join(f"CPU(s) {','.join(map(str, c))}: {g}" for g, c in sorted(bad.items()))
        return warn(name, what, GOVERNOR_FIX[0].upper() + GOVERNOR_FIX[1:])
    return ok(name, "; ".join(f"{g} on CPU(s) {','.join(map(str, c))}" for g, c in sorted(f.governors.items())))


def frequency(f: Facts) -> Check:
    name = "CPU frequency"
    ctxs = f.job.contexts if f.job else []
    if not ctxs:
        return skip(name, "no rank reported")
    by_host: dict[str, list[float]] = {}
    for r in ctxs[0].ranks:
        if r.cpu_mhz:
            by_host.setdefault(r.host, []).append(r.cpu_mhz)
    if not by_host:
        return skip(name, "the kernel does not report the cores' clock")
    spread = {h: (min(v), max(v)) for h, v in by_host.items()}
    uneven = {h: mm for h, mm in spread.items() if mm[1] > mm[0] * (1 + MHZ_SPREAD)}
    figure = "; ".join(f"{h}: {lo:.0f}-{hi:.0f} MHz" if hi != lo else f"{h}: {lo:.0f} MHz"
                       for h, (lo, hi) in sorted(spread.items()))
    if uneven:
        return warn(name, f"clocks differ by more than {MHZ_SPREAD:.0%} on one host ({figure})", GOVERNOR_FIX)
    return ok(name, figure)


def clocksource(f: Facts) -> Check:
    name = "clock source"
    if not f.clocksource:
        return skip(name, "not readable on this machine")
    if f.clocksource in FAST_CLOCKSOURCES:
        return ok(name, f"{f.clocksource} (available: {' '.join(f.clocksources) or '?'})")
    better = [c for c in f.clocksources if c in FAST_CLOCKSOURCES]
    fix = (f"echo {better[0]} > /sys/devices/system/clocksource/clocksource0/current_clocksource (as root)"
           if better else "boot with a TSC the kernel trusts (tsc=reliable) or on hardware with a stable TSC")
    return warn(name, f"{f.clocksource}: every clock read is a device access", fix)


def timer(f: Facts) -> Check:
    name = "timer resolution"
    ctxs = f.job.contexts if f.job else []
    if not ctxs or not ctxs[0].timer:
        return skip(name, "no rank reported")
    t = ctxs[0].timer
    res, cost = float(t.get("resolution_s") or 0), float(t.get("overhead_s") or 0)
    figure = f"{t.get('source', '?')}: resolution {res * 1e9:.0f} ns, read cost {cost * 1e9:.0f} ns"
    if res > RESOLUTION_S or cost > OVERHEAD_S:
        return warn(name, figure, "use a fast clock source (see 'clock source'); small-message figures "
                                  "below a few timer ticks are not trustworthy: time many calls per sample")
    return ok(name, figure)


def checks(f: Facts) -> list[Check]:
    return [Check(**{**c.__dict__, "group": GROUP}) for c in (governor(f), frequency(f), clocksource(f), timer(f))]
