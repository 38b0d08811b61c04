"""The MPI library on every host (one plain command per host prints the version string of
the library the engine loads there), and the tuning variables in force for the job."""
from __future__ import annotations

import json
import re

from mpiscope.doctor import Check, fail, ok, skip
from mpiscope.doctor.facts import Facts

GROUP = "library"
# Variables the launchers set for their own ranks, not tuning chosen by anyone.
LAUNCHER_SET = {"HYDRA_USER_PROVIDED_BINDING", "OMPI_MCA_PREFIXES", "OMPI_MCA_num_procs", "OMPI_MCA_cpu_type",
                "OMPI_MCA_initial_wdir", "PMIX_MCA_psec", "OMPI_MCA_orte_precondition_transports"}
MARK = "MPISCOPE-DOCTOR"  # the reach command's lines: MARK host {engine --mpi-info JSON}
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


def first_line(info: dict) -> str:
    return str(info.get("mpi_library_version", "?")).split("\n")[0].strip()


OMPI_EAGER = re.compile(r"^mca:btl:(\w+):param:(btl_\w+_eager_limit):value:(.*)$")
MPICH_EAGER = re.compile(r"^\s*(MPIR_CVAR_\w*EAGER\w*)\s*=([^\t]*)\t")


def eager_params(vendor: str, text: str) -> dict[str, str]:
    """Eager limits from `ompi_info --param btl all --level 9 --parsable` (Open MPI) or from
    `mpivars` (MPICH, the MPI_T control variables)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if vendor == "Open MPI":
            m = OMPI_EAGER.match(line)
            if m and m.group(1) not in ("self", "vader"):
                out[m.group(2)] = m.group(3)
        else:
            m = MPICH_EAGER.match(line)
            if m and m.group(2).strip() and "CTXID" not in m.group(1):
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
    if f.library_params:
        limit = ", ".join(f"{k}={v}" for k, v in sorted(f.library_params.items())) + " (as the library reports them)"
    elif eager:
        limit = ", ".join(f"{k}={v}" for k, v in sorted(eager.items()))
    else:
        limit = "the library's default (no *EAGER* variable set; the library was not asked)"
    return ok(name, f"{shown}; eager limit: {limit}")


def checks(f: Facts) -> list[Check]:
    return [Check(**{**c.__dict__, "group": GROUP}) for c in (same_library(f), tuning(f))]
