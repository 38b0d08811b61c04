"""Which transport carries each class of pair (same host, different hosts), from the
library's own reporting, confirmed by the latency the pair map measured.

What is read (doctor turns the reporting on for its launch):
- UCX (the MPICH wheel's default netmod; Open MPI's pml ucx): `UCX_LOG_LEVEL=info` makes every
  process print one line per endpoint configuration (UCX pads the pid: `[h0:1745 :0]`), `[host:pid:thread] ... ucp_context_0
  intra-node cfg#1 tag(sysv/memory cma/memory) ...`: UCX's own class of the peer (self,
  intra-node, inter-node) and the transports it uses for tagged messages.
- Open MPI: `OMPI_MCA_pml_base_verbose` / `OMPI_MCA_btl_base_verbose` print the pml selected
  (`select: component ob1 selected`) and every btl that initialised
  (`select: init of component tcp returned success`)."""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from mpiscope.doctor import Check, fail, ok, skip, warn
from mpiscope.doctor.facts import Facts
from mpiscope.records import Context, Point

GROUP = "transport"
UCX_EP = re.compile(r"\[([^:\]\s]+):\s*(\d+)\s*:\d+\].*ucp_context_\d+ (self|intra-node|inter-node) cfg#\d+ tag\(([^)]*)\)")
OMPI_PML = re.compile(r"\[([^:\]\s]+):\s*(\d+)\s*\] select: component (\w+) selected")
OMPI_BTL = re.compile(r"\[([^:\]\s]+):\s*(\d+)\s*\] select: init of component (\w+) returned success")
OFI_PROVIDER = re.compile(r"^libfabric provider: (\S+)")
OFI_CANDIDATE = re.compile(r"^provider: (\S+?),? score")
OFI_SLOW = {"tcp", "sockets", "udp", "tcp;ofi_rxm", "udp;ofi_rxd", "shm", "sm2"}
SHM_TLS = {"posix", "sysv", "cma", "knem", "xpmem", "self"}
RDMA_TLS = ("rc", "ud", "dc", "mlx", "verbs", "gga", "cuda_ipc", "rocm_ipc")
SAME_CLASS_RATIO = 2.0  # a cross-host pair within this factor of same-host latency looks like shared memory

UCX_SHM_FIX = ("UCX sees one machine (one kernel: containers or namespaces as hosts) and uses shared memory between "
               "them: set UCX_TLS=self,tcp (or self,sm,<your fabric>, e.g. self,sm,rc) and UCX_NET_DEVICES=<interface> "
               "(--env UCX_TLS=self,tcp)")
UCX_TCP_FIX = "UCX chose TCP though it offers {fast}: set UCX_TLS=self,sm,{first} (--env) and check the fabric's drivers"
OMPI_TCP_FIX = "Open MPI fell back to TCP though {fast} initialised: set OMPI_MCA_pml=ucx (--env) and check the fabric"


@dataclass
class Report:
    """What the library said, per process (host, pid)."""
    ucx: dict[tuple[str, int], dict[str, set[str]]] = field(default_factory=dict)  # class -> transports
    pml: dict[tuple[str, int], str] = field(default_factory=dict)
    ofi: str | None = None  # MPICH's OFI netmod: the provider chosen (MPIR_CVAR_DEBUG_SUMMARY, rank 0)
    ofi_offered: set[str] = field(default_factory=set)
    btl: dict[tuple[str, int], set[str]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.ucx or self.pml or self.btl or self.ofi)


def parse(lines: list[str]) -> Report:
    rep = Report()
    for line in lines:
        m = OFI_PROVIDER.match(line)
        if m:
            rep.ofi = m.group(1)
            continue
        m = OFI_CANDIDATE.match(line)
        if m:
            rep.ofi_offered.add(m.group(1))
            continue
        m = UCX_EP.search(line)
        if m:
            tls = {t.split("/")[0] for t in m.group(4).split()}
            rep.ucx.setdefault((m.group(1), int(m.group(2))), {}).setdefault(m.group(3), set()).update(tls)
            continue
        m = OMPI_PML.search(line)
        if m:
            rep.pml[(m.group(1), int(m.group(2)))] = m.group(3)
            continue
        m = OMPI_BTL.search(line)
        if m:
            rep.btl.setdefault((m.group(1), int(m.group(2))), set()).add(m.group(3))
    return rep


def latencies(ctx: Context, point: Point | None) -> dict[str, list[float]]:
    """Same-host and cross-host one-pair-at-a-time latencies (us) of the pair map."""
    out: dict[str, list[float]] = {"same": [], "cross": []}
    if point is None:
        return out
    rows = (point.details.get("pair_map") or {}).get("one_pair", {}).get("matrix_us") or []
    host = {r.rank: r.host for r in ctx.ranks}
    for a, row in enumerate(rows):
        for b, v in enumerate(row):
            if b > a and v is not None:
                out["same" if host.get(a) == host.get(b) else "cross"].append(float(v))
    return out


def _med(v: list[float]) -> str:
    return f"{statistics.median(v):.3g} us" if v else "not measured"


def _rank_of(ctx: Context) -> dict[tuple[str, int], int]:
    return {(r.host, r.pid): r.rank for r in ctx.ranks if r.pid is not None}


def cross_ranks(ctx: Context) -> set[int]:
    """Ranks with at least one peer on another host."""
    hosts = {r.host for r in ctx.ranks}
    return {r.rank for r in ctx.ranks} if len(hosts) > 1 else set()


def checks(f: Facts) -> list[Check]:
    name_same, name_cross = "transport, same host", "transport, different hosts"
    job = f.pairs
    ctxs = job.contexts if job else []
    if not ctxs or (job and len(ctxs) > 1):
        return [Check(n, "skip", "no one job to read", group=GROUP) for n in (name_same, name_cross)]
    ctx = ctxs[0]
    small = min(job.points("pairs"), key=lambda p: p.size, default=None) if job else None
    lat = latencies(ctx, small)
    rep = parse((job.stdout + job.stderr) if job else [])  # UCX logs to stdout, Open MPI to stderr
    multi_host = any(len(h) > 1 for h in ctx.ranks_by_host)
    out = [_same(rep, lat, multi_host, name_same, f), _cross(rep, lat, ctx, name_cross, f)]
    return [Check(**{**c.__dict__, "group": GROUP}) for c in out]


def _same(rep: Report, lat: dict[str, list[float]], present: bool, name: str, f: Facts) -> Check:
    if not present:
        return skip(name, "no two ranks share a host")
    fig = f"median latency {_med(lat['same'])}"
    if rep.pml:
        pmls = sorted(set(rep.pml.values()))
        btls = sorted(set.union(*rep.btl.values())) if rep.btl else []
        if pmls == ["ob1"] and "sm" not in btls:
            return warn(name, f"pml ob1 without the sm btl (btls: {', '.join(btls)}); {fig}",
                        "enable shared memory: leave OMPI_MCA_btl unset or include sm (self,sm,tcp)")
        return ok(name, f"Open MPI pml {'/'.join(pmls)}, btls {', '.join(btls) or '?'} (sm within a host); {fig}")
    if f.vendor.lower().startswith("mpich"):
        return ok(name, f"MPICH's own shared memory (ch4 shm) within a host; {fig}")
    if rep.ucx:
        tls = sorted(set().union(*(v.get("intra-node", set()) for v in rep.ucx.values())))
        return ok(name, f"UCX {', '.join(tls) or '?'}; {fig}")
    return ok(name, f"the library reported nothing; {fig}")


def _cross(rep: Report, lat: dict[str, list[float]], ctx: Context, name: str, f: Facts) -> Check:
    if len(ctx.hosts) < 2:
        return skip(name, "one host")
    fig = f"median latency {_med(lat['cross'])} (same host {_med(lat['same'])})"
    looks_shm = bool(lat["cross"] and lat["same"]) and statistics.median(lat["cross"]) <= SAME_CLASS_RATIO * statistics.median(lat["same"])
    rank_of = _rank_of(ctx)
    crossing = cross_ranks(ctx)
    if rep.ucx:
        shm_between: list[int] = []
        inter: set[str] = set()
        offered: set[str] = set()
        for proc, classes in rep.ucx.items():
            offered |= set().union(*classes.values())
            inter |= classes.get("inter-node", set())
            rank = rank_of.get(proc)
            if rank in crossing and "inter-node" not in classes and "intra-node" in classes:
                shm_between.append(rank)
        if shm_between:
            shm = sorted(set().union(*(v.get("intra-node", set()) for v in rep.ucx.values())) & SHM_TLS)
            return fail(name, f"UCX on rank(s) {', '.join(map(str, sorted(shm_between)[:8]))} reports only intra-node "
                              f"transports ({', '.join(shm) or 'shared memory'}) for peers on other hosts; {fig}",
                        UCX_SHM_FIX)
        fast = sorted(t for t in offered if t.startswith(RDMA_TLS))
        if inter and inter <= {"tcp", "self"} and fast:
            return fail(name, f"UCX uses {', '.join(sorted(inter))} between hosts; {fig}",
                        UCX_TCP_FIX.format(fast=", ".join(fast), first=fast[0]))
        if inter:
            verdict = ok(name, f"UCX {', '.join(sorted(inter))} between hosts; {fig}")
            return _confirm(verdict, looks_shm, fig)
        return skip(name, f"UCX reported no inter-node endpoint; {fig}")
    if rep.ofi:
        fast = sorted(p for p in rep.ofi_offered if p not in OFI_SLOW and not p.startswith(("tcp", "udp", "shm")))
        if rep.ofi in ("shm", "sm2"):
            return fail(name, f"libfabric provider {rep.ofi} (shared memory) between hosts; {fig}",
                        "name a network provider: FI_PROVIDER=tcp (or your fabric's: verbs, psm3, cxi, efa) (--env)")
        if rep.ofi in OFI_SLOW and fast:
            return fail(name, f"libfabric provider {rep.ofi} though {', '.join(fast)} was offered; {fig}",
                        f"FI_PROVIDER={fast[0]} (--env), and check that provider's drivers")
        return _confirm(ok(name, f"libfabric provider {rep.ofi} (MPICH OFI netmod) between hosts; {fig}"),
                        looks_shm, fig)
    if rep.pml:
        pmls = sorted(set(rep.pml.values()))
        btls = sorted(set.union(*rep.btl.values())) if rep.btl else []
        if pmls == ["ob1"]:
            fast = [b for b in btls if b in ("ofi", "openib")]
            carrier = "tcp" if "tcp" in btls else "/".join(b for b in btls if b not in ("self", "sm")) or "?"
            if carrier == "tcp" and fast:
                return fail(name, f"pml ob1 over tcp though {', '.join(fast)} initialised; {fig}",
                            OMPI_TCP_FIX.format(fast=", ".join(fast)))
            return _confirm(ok(name, f"Open MPI pml ob1, btl {carrier} between hosts "
                                     f"(no faster btl initialised); {fig}"), looks_shm, fig)
        return _confirm(ok(name, f"Open MPI pml {'/'.join(pmls)}; {fig}"), looks_shm, fig)
    return skip(name, f"the library reported nothing doctor can read; {fig}")


def _confirm(verdict: Check, looks_shm: bool, fig: str) -> Check:
    """The library says network; the latency says otherwise."""
    if looks_shm:
        return warn(verdict.name, f"{verdict.figure}; but cross-host pairs are within {SAME_CLASS_RATIO:g}x of "
                                  f"same-host latency, as shared memory would be",
                    "check that the hosts are separate machines; if they share a kernel, restrict the "
                    "transport to the network (UCX_TLS=self,tcp, OMPI_MCA_btl=self,tcp)")
    return verdict


