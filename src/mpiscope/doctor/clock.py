"""The clock under the measurement: CPU governor and frequency, the kernel's clock source, the
engine's timer resolution and cost. With several hosts, governor and clock source are judged
host by host from what each host said through the launcher (library.host_facts); on one
machine, from this machine's sysfs."""
from __future__ import annotations

from mpiscope.analysis.checks import unsteady
from mpiscope.doctor.misconfig import GOVERNOR_FIX
from mpiscope.doctor import Check, ok, skip, warn
from mpiscope.doctor.facts import Facts
from mpiscope.doctor.library import HostFacts, all_host_facts

GROUP = "clock"
# Clock sources whose reading is a cheap instruction; others (hpet, acpi_pm) cost a device access.
FAST_CLOCKSOURCES = {"tsc", "kvm-clock", "arch_sys_counter", "hyperv_clocksource_tsc_page", "timebase"}
MHZ_SPREAD = 0.10      # ranks of one host whose clocks differ by more than this are scaling
RESOLUTION_S = 1e-7    # a timer coarser than this blurs sub-microsecond latencies
OVERHEAD_S = 1e-6      # a clock read dearer than this is in every sample


def _cpus(cpus: list[int]) -> str:
    return ",".join(map(str, cpus)) if len(cpus) <= 8 else f"{cpus[0]}-{cpus[-1]} ({len(cpus)})"


def used_cpus(f: Facts, host: str, h: HostFacts) -> list[int]:
    """The CPUs the job's ranks on `host` may run on (all the host's CPUs when no rank said)."""
    ctxs = f.job.contexts if f.job else []
    cpus = sorted({c for r in (ctxs[0].ranks if ctxs else ()) if r.host == host for c in r.cpus})
    return cpus or sorted(h.governors)


def governor_per_host(f: Facts, seen: dict[str, HostFacts]) -> Check:
    name = "CPU governor"
    per_host: dict[str, dict[str, list[int]]] = {}
    for host, h in sorted(seen.items()):
        found: dict[str, list[int]] = {}
        for cpu in used_cpus(f, host, h):
            if cpu in h.governors:
                found.setdefault(h.governors[cpu], []).append(cpu)
        per_host[host] = found
    exposed = {h: g for h, g in per_host.items() if g}
    if not exposed:
        return ok(name, f"cpufreq not exposed on any of {len(seen)} host(s) (VMs or fixed clocks): nothing scales it")
    bad = {h: unsteady(g) for h, g in exposed.items() if unsteady(g)}
    if bad:
        what = "; ".join(f"{h}: " + ", ".join(f"CPU(s) {_cpus(c)} {g}" for g, c in sorted(b.items()))
                         for h, b in sorted(bad.items()))
        return warn(name, f"{len(bad)} of {len(seen)} host(s) scale the clock: {what}",
                    f"on {', '.join(sorted(bad))}: {GOVERNOR_FIX}")
    shown = "; ".join(f"{h}: " + ", ".join(f"{g} on CPU(s) {_cpus(c)}" for g, c in sorted(g_.items()))
                      for h, g_ in sorted(exposed.items()))
    return ok(name, shown + (f" ({len(seen) - len(exposed)} host(s) without cpufreq)" if len(exposed) < len(seen)
                             else ""))


def clocksource_per_host(seen: dict[str, HostFacts]) -> Check:
    name = "clock source"
    known = {h: x for h, x in seen.items() if x.clocksource}
    if not known:
        return skip(name, f"not readable on any of {len(seen)} host(s)")
    groups: dict[str, list[str]] = {}
    for h, x in sorted(known.items()):
        groups.setdefault(x.clocksource or "?", []).append(h)
    shown = "; ".join(f"{c} on {', '.join(hs)}" for c, hs in sorted(groups.items()))
    slow = {h: x for h, x in known.items() if x.clocksource not in FAST_CLOCKSOURCES}
    if slow:
        fixes = []
        for h, x in sorted(slow.items()):
            better = [c for c in x.clocksources if c in FAST_CLOCKSOURCES]
            fixes.append(f"on {h}: echo {better[0]} > /sys/devices/system/clocksource/clocksource0/"
                         f"current_clocksource (as root)" if better else
                         f"on {h}: boot with a TSC the kernel trusts (tsc=reliable) or on hardware with a stable TSC")
        return warn(name, f"{', '.join(sorted(slow))}: every clock read is a device access ({shown})", "; ".join(fixes))
    return ok(name, shown + (f" ({len(seen) - len(known)} host(s) did not say)" if len(known) < len(seen) else ""))


def governor(f: Facts) -> Check:
    name = "CPU governor"
    seen = all_host_facts(f)
    if seen:
        return governor_per_host(f, seen)
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
    seen = all_host_facts(f)
    if seen:
        return clocksource_per_host(seen)
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
