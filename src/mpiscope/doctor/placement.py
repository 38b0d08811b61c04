"""Where each rank runs (host, core set): ranks sharing a core, unbound ranks, more ranks
than cores on a host."""
from __future__ import annotations

from collections import defaultdict

from mpiscope.analysis.checks import loose_ranks
from mpiscope.doctor.misconfig import UNBOUND_FIX
from mpiscope.doctor import Check, fail, ok, warn
from mpiscope.doctor.facts import Facts
from mpiscope.records import Context

GROUP = "placement"
SHARED_FIX = ("give every rank a core of its own: --bind-to core (mpiexec -bind-to core, mpirun --bind-to core, "
              "srun --cpu-bind=cores), and no more ranks per host than cores")
OVER_FIX = "use at most as many ranks per host as it has cores (-n, --ranks-per-node), or more hosts"


def _cpus(cpus: tuple[int, ...]) -> str:
    return ",".join(map(str, cpus)) if len(cpus) <= 8 else f"{cpus[0]}-{cpus[-1]} ({len(cpus)})"


def where(ctx: Context) -> str:
    return "; ".join(f"{r.rank}:{r.host}/{_cpus(r.cpus)}" for r in ctx.ranks[:16]) + (
        " ..." if len(ctx.ranks) > 16 else "")


def shared_cores(ctx: Context) -> list[tuple[str, int, int, tuple[int, ...]]]:
    """(host, rank a, rank b, the CPUs they share) for bound ranks of one host whose core sets meet."""
    out = []
    by_host: dict[str, list] = defaultdict(list)
    for r in ctx.ranks:
        if r.bound:
            by_host[r.host].append(r)
    for host, ranks in by_host.items():
        for i, a in enumerate(ranks):
            for b in ranks[i + 1:]:
                common = tuple(sorted(set(a.cpus) & set(b.cpus)))
                if common:
                    out.append((host, a.rank, b.rank, common))
    return out


def overloaded(ctx: Context) -> dict[str, tuple[int, int]]:
    """host -> (ranks on it, its cores online) where ranks outnumber cores."""
    count: dict[str, int] = defaultdict(int)
    cores: dict[str, int] = {}
    for r in ctx.ranks:
        count[r.host] += 1
        if r.cores_online:
            cores[r.host] = r.cores_online
    return {h: (n, cores[h]) for h, n in count.items() if h in cores and n > cores[h]}


def checks(f: Facts) -> list[Check]:
    ctxs = f.job.contexts if f.job else []
    names = ("rank placement", "no two ranks share a core", "ranks bound", "not oversubscribed")
    if not ctxs:
        return [Check(n, "skip", "no rank reported", group=GROUP) for n in names]
    ctx = ctxs[0]
    if f.vendor == "SMPI":  # every simulated rank is an actor of one host process
        return [Check(names[0], "ok", where(ctx), group=GROUP)] + [
            Check(n, "skip", "simulated ranks have no cores of this host", group=GROUP) for n in names[1:]]
    out = [ok(names[0], where(ctx))]
    shared = shared_cores(ctx)
    if shared:
        h, a, b, cpus = shared[0]
        more = f" (and {len(shared) - 1} more pair(s))" if len(shared) > 1 else ""
        out.append(fail(names[1], f"ranks {a} and {b} on {h} are both bound to CPU(s) {_cpus(cpus)}{more}",
                        SHARED_FIX))
    else:
        out.append(ok(names[1], f"{sum(1 for r in ctx.ranks if r.bound)} bound rank(s), no core set shared"))
    loose = loose_ranks(ctx)
    if loose:
        out.append(warn(names[2], f"rank(s) {', '.join(map(str, loose[:8]))} may run on any core "
                                  f"({len(loose)} of {len(ctx.ranks)} unbound)", UNBOUND_FIX[0].upper() + UNBOUND_FIX[1:]))
    else:
        out.append(ok(names[2], f"all {len(ctx.ranks)} ranks bound"))
    over = overloaded(ctx)
    if over:
        what = ", ".join(f"{h}: {n} ranks on {c} cores" for h, (n, c) in sorted(over.items()))
        out.append(fail(names[3], what, OVER_FIX))
    elif ctx.oversubscribed:
        out.append(fail(names[3], "the engine reports more ranks than cores on a host", OVER_FIX))
    else:
        per = max(len(v) for v in ctx.ranks_by_host) if ctx.ranks_by_host else len(ctx.ranks)
        out.append(ok(names[3], f"at most {per} rank(s) per host, {ctx.cores_online or '?'} cores online"))
    return [Check(**{**c.__dict__, "group": GROUP}) for c in out]

