"""The MPI library on every host (one plain command per host prints the version string of
the library the engine loads there), and the tuning variables in force for the job."""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field

from mpiscope.doctor import Check, fail, ok, skip, warn
from mpiscope.doctor.facts import Facts

GROUP = "library"
# Variables the launchers set for their own ranks, not tuning chosen by anyone.
LAUNCHER_SET = {"HYDRA_USER_PROVIDED_BINDING", "OMPI_MCA_PREFIXES", "OMPI_MCA_num_procs", "OMPI_MCA_cpu_type",
                "OMPI_MCA_initial_wdir", "PMIX_MCA_psec", "OMPI_MCA_orte_precondition_transports"}
MARK = "MPISCOPE-DOCTOR"  # the reach command's lines: MARK host {engine --mpi-info JSON}
SYS_MARK = "MPISCOPE-DOCTOR-SYS"  # and SYS_MARK host KIND VALUE: what the host itself says (host_facts)
# The environment prefixes of tuning variables (the engine's context records the same ones).
TUNING_PREFIXES = ("MPIR_CVAR_", "MPICH_", "OMPI_MCA_", "PMIX_MCA_", "PRTE_MCA_", "UCX_", "FI_", "I_MPI_", "HYDRA_",
                   "MV2_", "PSM2_")
TUNING_FIX = ("make every host run with the same settings: look for the variable in that host's shell start-up "
              "files, /etc/environment, the batch system's prolog, or the library's parameter files "
              "($prefix/etc/openmpi-mca-params.conf, ~/.openmpi/mca-params.conf); or set it for all with --env")
SAME_FIX = ("install the same MPI build on every host (same prefix, same version), or point every host at one "
            "shared installation; mixed libraries fail in MPI_Init or give wrong figures")


def answers(lines: list[str]) -> dict[str, dict]:
    """host -> what the engine's --mpi-info said there."""
    out: dict[str, dict] = {}
    for line in lines:
        if not line.startswith(MARK + " "):
            continue
        _, host, rest = (line.split(" ", 2) + [""])[:3]
        try:
            out[host] = json.loads(rest)
        except json.JSONDecodeError:
            out[host] = {"mpi_library_version": rest.strip() or "?"}
    return out


@dataclass
class HostFacts:
    """What one host said about itself through the launcher (the reach command)."""
    governors: dict[int, str] = field(default_factory=dict)   # CPU -> cpufreq governor
    clocksource: str | None = None
    clocksources: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)          # tuning variables a process started there sees
    params: dict[str, str] = field(default_factory=dict)       # eager limits as the library's tool reports them


def host_facts(lines: list[str], vendor: str, device: str | None = None) -> dict[str, HostFacts]:
    """host -> HostFacts from the SYS_MARK lines of the reach command."""
    out: dict[str, HostFacts] = {}
    tool: dict[str, list[str]] = {}
    for line in lines:
        if not line.startswith(SYS_MARK + " "):
            continue
        parts = line.split(" ", 3)
        if len(parts) < 4:
            continue
        _, host, kind, value = parts
        h = out.setdefault(host, HostFacts())
        if kind == "governor":
            cpu, _, gov = value.partition(" ")
            if cpu.isdigit() and gov.strip():
                h.governors[int(cpu)] = gov.strip()
        elif kind == "clocksource":
            h.clocksource = value.strip() or None
        elif kind == "clocksources":
            h.clocksources = value.split()
        elif kind == "env" and "=" in value:
            k, v = value.split("=", 1)
            h.env[k] = v
        elif kind == "param":
            tool.setdefault(host, []).append(value)
    for host, text in tool.items():
        out[host].params = eager_params(vendor, "\n".join(text), device)
    return out


def all_host_facts(f: Facts) -> dict[str, HostFacts]:
    if f.reach is None:
        return {}
    ctxs = f.job.contexts if f.job else []
    device = mpich_device(ctxs[0].mpi_library_version) if ctxs else None
    return host_facts([ln for r in (f.reach, *f.reach_bisection) for ln in r.stdout], f.vendor, device)


def first_line(info: dict) -> str:
    return str(info.get("mpi_library_version", "?")).split("\n")[0].strip()


OMPI_EAGER = re.compile(r"^mca:btl:(\w+):param:(btl_\w+_eager_limit):value:(.*)$")
# MPICH's protocol limits: eager sizes, the thresholds where a path changes (CMA, XPMEM, the
# netmods' eager limit) and the shared-memory cell a message must fit to go eager
MPICH_LIMIT = re.compile(r"^\s*(MPIR_CVAR_\w*(?:EAGER|P2P_THRESHOLD|EAGER_THRESHOLD|CELL_SIZE)\w*)\s*=([^\t]*)\t")
MPICH_DEVICE = re.compile(r"^MPICH Device:\s*(\S+)", re.M)
# MPI_T lists every control variable MPICH was written with, whichever device it was built for:
# a variable of another device, or of GPUs, is never read by the running library
OTHER_DEVICE = {"ch4": ("_CH3_", "_NEMESIS_"), "ch3": ("_CH4_",)}
NOT_PROTOCOL = ("CTXID", "GPU", "_RMA_", "UPPER_THRESHOLD")


def mpich_device(version_text: str) -> str | None:
    """'ch4:ucx' from MPI_Get_library_version's (or mpichversion's) 'MPICH Device:' line."""
    m = MPICH_DEVICE.search(version_text or "")
    return m.group(1) if m else None


def eager_params(vendor: str, text: str, device: str | None = None) -> dict[str, str]:
    """Eager limits from `ompi_info --param btl all --level 9 --parsable` (Open MPI), or MPICH's
    protocol limits from `mpivars` (the MPI_T control variables) that `device` (ch4:..., ch3:...)
    reads; without a device, every one MPI_T lists."""
    family = (device or "").split(":")[0]
    skip = OTHER_DEVICE.get(family, ()) + NOT_PROTOCOL
    out: dict[str, str] = {}
    for line in text.splitlines():
        if vendor == "Open MPI":
            m = OMPI_EAGER.match(line)
            if m and m.group(1) not in ("self", "vader"):
                out[m.group(2)] = m.group(3)
        else:
            m = MPICH_LIMIT.match(line)
            if m and m.group(2).strip() and not any(word in m.group(1) for word in skip):
                out[m.group(1)] = m.group(2).strip()
    return out


def same_library(f: Facts) -> Check:
    name = "same MPI library on every host"
    if f.reach is None:
        ctxs = f.job.contexts if f.job else []
        if ctxs:
            return ok(name, f"one host: {first_line({'mpi_library_version': ctxs[0].mpi_library_version})}")
        return skip(name, "no host answered")
    seen = answers([ln for r in (f.reach, *f.reach_bisection) for ln in r.stdout])
    if not seen:
        return skip(name, "no host answered")
    groups: dict[str, list[str]] = {}
    for host, info in sorted(seen.items()):
        groups.setdefault(first_line(info), []).append(host)
    if len(groups) > 1:
        what = "; ".join(f"{v} on {', '.join(h)}" for v, h in sorted(groups.items(), key=lambda kv: -len(kv[1])))
        return fail(name, what, SAME_FIX)
    (version, hosts), = groups.items()
    return ok(name, f"{version} on {len(hosts)} host(s)")


def tuning(f: Facts) -> Check:
    name = "tuning variables in force"
    ctxs = f.job.contexts if f.job else []
    if not ctxs:
        return skip(name, "no rank reported")
    env = {k: v for k, v in ctxs[0].env.items() if k not in f.doctor_env and k not in LAUNCHER_SET}
    eager = {k: v for k, v in env.items() if "EAGER" in k.upper()}
    shown = ", ".join(f"{k}={v}" for k, v in sorted(env.items())) or "none: the library's defaults"
    device = mpich_device(ctxs[0].mpi_library_version)
    if f.library_params:
        limit = ", ".join(f"{k}={v}" for k, v in sorted(f.library_params.items())) + \
            (f" (as the library reports them; those device {device} reads)" if device else
             " (as the library reports them)")
    elif eager:
        limit = ", ".join(f"{k}={v}" for k, v in sorted(eager.items()))
    else:
        limit = "the library's default (no *EAGER* variable set; the library was not asked)"
    return ok(name, f"{shown}; eager limit: {limit}")


def same_tuning(f: Facts) -> Check:
    """The tuning variables and the library's eager limits, host by host: a host whose setting
    differs from the others' (or that lacks one the others have) is named."""
    name = "same tuning on every host"
    seen = all_host_facts(f)
    if len(seen) < 2:
        return skip(name, "one host" if f.reach is None or len(seen) == 1 else "no host reported its settings")
    # in the order the hosts were given, so that on a tie (two hosts) the first host's value is the reference
    order = [h for h in f.hosts if h in seen] + sorted(h for h in seen if h not in f.hosts)
    mine = {h: {**{k: v for k, v in seen[h].env.items() if k not in f.doctor_env and k not in LAUNCHER_SET},
                **seen[h].params} for h in order}
    keys = sorted({k for v in mine.values() for k in v})
    odd: dict[str, list[str]] = {}
    for k in keys:
        values = Counter(v.get(k, "(unset)") for v in mine.values())
        if len(values) < 2:
            continue
        common, _ = values.most_common(1)[0]
        for h, v in mine.items():
            if v.get(k, "(unset)") != common:
                odd.setdefault(h, []).append(f"{k}={v.get(k, '(unset)')} (others: {common})")
    eager = sorted({k for v in mine.values() for k in v if "EAGER" in k.upper()})
    shown = ", ".join(f"{k}={next(iter(mine.values())).get(k, '(unset)')}" for k in eager) or "none reported"
    if odd:
        what = "; ".join(f"{h}: {', '.join(d[:6])}" for h, d in sorted(odd.items()))
        return warn(name, f"{len(odd)} of {len(mine)} host(s) differ: {what}",
                    f"{', '.join(sorted(odd))}: " + TUNING_FIX)
    return ok(name, f"{len(keys)} setting(s) alike on {len(mine)} host(s); eager limits: {shown}")


def checks(f: Facts) -> list[Check]:
    return [Check(**{**c.__dict__, "group": GROUP}) for c in (same_library(f), tuning(f), same_tuning(f))]
