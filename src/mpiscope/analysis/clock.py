"""The core clock used to turn microseconds into cycles, and where it came from."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mpiscope.records import Context


@dataclass(frozen=True)
class Clock:
    mhz: float
    source: str      # "override", "context", "cpufreq max (...)", "/proc/cpuinfo ..."

    def cycles(self, microseconds: float) -> float:
        return microseconds * self.mhz


def _cpufreq_max_mhz(root: Path, cpus: list[int] | None) -> float | None:
    base = root / "sys/devices/system/cpu"
    names = [f"cpu{c}" for c in cpus] if cpus else \
        sorted(p.name for p in base.glob("cpu[0-9]*")) if base.is_dir() else []
    vals = []
    for name in names:
        f = base / name / "cpufreq" / "cpuinfo_max_freq"
        try:
            vals.append(int(f.read_text().split()[0]) / 1000.0)   # kHz -> MHz
        except (OSError, ValueError, IndexError):
            continue
    return max(vals) if vals else None


def _cpuinfo_mhz(root: Path, cpus: list[int] | None) -> float | None:
    try:
        text = (root / "proc/cpuinfo").read_text()
    except OSError:
        return None
    vals: dict[int, float] = {}
    cur = -1
    for line in text.splitlines():
        if m := re.match(r"processor\s*:\s*(\d+)", line):
            cur = int(m.group(1))
        elif m := re.match(r"cpu MHz\s*:\s*([\d.]+)", line):
            vals[cur] = float(m.group(1))
    chosen = [v for c, v in vals.items() if not cpus or c in cpus]
    return max(chosen) if chosen else None


def detect_clock(override_mhz: float | None = None, context: Context | None = None,
                 cpus: list[int] | None = None, root: str | Path = "/") -> Clock | None:
    """The clock in MHz, in order of trust: an explicit override; a `cpu_mhz`
    field in the run's context record (the run's host, not this one); the
    cpufreq maximum (the nominal turbo-free ceiling a busy-polling rank runs
    at); the current "cpu MHz" in /proc/cpuinfo (may be a throttled snapshot,
    and on a VM is the host's nominal clock). None when nothing is known.

    `cpus` restricts the lookup to the cores the ranks were bound to (the
    context's rank -> cpus map)."""
    if override_mhz is not None:
        return Clock(float(override_mhz), "override")
    if context is not None and context.cpu_mhz:
        return Clock(context.cpu_mhz, "context record cpu_mhz")
    root = Path(root)
    if (mhz := _cpufreq_max_mhz(root, cpus)) is not None:
        return Clock(mhz, "/sys cpufreq cpuinfo_max_freq")
    if (mhz := _cpuinfo_mhz(root, cpus)) is not None:
        return Clock(mhz, "/proc/cpuinfo cpu MHz")
    return None


def cpus_of_context(context: Context | None) -> list[int] | None:
    """Cores the ranks of a run were bound to, if the context says."""
    cpus = sorted({c for r in context.ranks for c in r.cpus}) if context is not None else []
    return cpus or None
