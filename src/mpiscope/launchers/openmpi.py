"""Open MPI's `mpirun` (prterun): `-n N`, env via `-x K=V`, hosts via `--host`/`--hostfile`,
placement via `--map-by`/`--rank-by`, binding via `--bind-to`; explicit consent for root
and oversubscription."""
from __future__ import annotations

import math

from mpiscope.launchers.base import Job, Launch, Launcher, nodes_need_hosts, is_root, local_cores

# mpiscope's binding names in PRRTE's words (a socket is a "package" there).
BIND = {"none": "none", "core": "core", "hwthread": "hwthread", "socket": "package", "numa": "numa"}


def _hosts(job: Job) -> list[str]:
    """A host named without slots has one slot in PRRTE, too few for more ranks than hosts:
    give it the ranks per node, or an even share of the ranks."""
    hosts = job.hosts or []
    per = job.ranks_per_node or (math.ceil(job.ranks / len(hosts)) if hosts else 1)
    return [h if ":" in h else f"{h}:{per}" for h in hosts]


def _mapping(job: Job) -> list[str]:
    if job.ranks_per_node:
        # ppr fixes how many ranks land on each node; rank-by decides their numbering:
        # by slot fills a node before the next (block), by node deals them out (cyclic)
        rank_by = ["--rank-by", "node"] if job.mapping == "cyclic" else []
        return ["--map-by", f"ppr:{job.ranks_per_node}:node", *rank_by]
    if job.mapping == "cyclic":
        return ["--map-by", "node"]
    if job.mapping == "block":
        return ["--map-by", "slot"]
    return []


class OpenMpi(Launcher):
    def command(self, job: Job, cores: int | None = None) -> Launch:
        nodes_need_hosts(job)
        argv = [str(self.path), "-n", str(job.ranks)]
        env: dict[str, str] = {}
        if is_root():
            # Open MPI refuses to start as root without consent; the environment form
            # keeps argv free of flags another vendor's mpiexec would reject.
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        if job.hosts:
            argv += ["--host", ",".join(_hosts(job))]
        if job.hostfile:
            argv += ["--hostfile", job.hostfile]
        argv += _mapping(job)
        if job.binding:
            argv += ["--bind-to", BIND.get(job.binding, job.binding)]
        over = job.hosts is None and job.hostfile is None and job.ranks > (cores or local_cores())
        if over and "--oversubscribe" not in job.extra_args:
            argv.append("--oversubscribe")  # otherwise mpirun refuses more ranks than slots
        for k, v in job.env.items():
            argv += ["-x", f"{k}={v}"]
        argv += job.extra_args + job.program
        return Launch(argv=argv, env=env, oversubscribed=over)
