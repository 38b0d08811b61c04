"""MPICH's Hydra `mpiexec` (also Intel MPI, MVAPICH): `-n N`, env via `-genv K V`,
hosts via `-hosts`/`-f`, placement via `-ppn`, binding via `-bind-to`."""
from __future__ import annotations

import math

from mpiscope.util.errors import UsageError
from mpiscope.launchers.base import Job, Launch, Launcher, nodes_need_hosts, local_cores


def _ppn(job: Job) -> int | None:
    """Hydra has no block/cyclic switch: it fills each host with -ppn ranks (or the host's
    slot count) and wraps round the host list. -ppn 1 therefore deals ranks out cyclically;
    block (also the default, as with Open MPI and srun) needs -ppn = ranks per host, because
    a host named without a slot count has 1 slot."""
    if job.mapping == "cyclic":
        return 1
    if job.ranks_per_node:
        return job.ranks_per_node
    if job.hosts and not any(":" in h for h in job.hosts):
        return math.ceil(job.ranks / len(job.hosts))
    return None


class Hydra(Launcher):
    def command(self, job: Job, cores: int | None = None) -> Launch:
        if any(a.startswith("--oversubscribe") or a == "-oversubscribe" for a in job.extra_args):
            raise UsageError("--oversubscribe is not accepted by MPICH's mpiexec: MPICH runs more ranks "
                             "than cores without it; remove it from --launcher-args")
        nodes_need_hosts(job)
        argv = [str(self.path), "-n", str(job.ranks)]
        if job.hosts:
            argv += ["-hosts", ",".join(job.hosts)]
        if job.hostfile:
            argv += ["-f", job.hostfile]
        ppn = _ppn(job)
        if ppn:
            argv += ["-ppn", str(ppn)]
        local = job.hosts is None and job.hostfile is None
        over = local and job.ranks > (cores or local_cores())
        if job.binding:  # mpiscope's binding names are Hydra's own (`mpiexec -bind-to -h`)
            argv += ["-bind-to", job.binding]
        elif local and not over and "-bind-to" not in job.extra_args:
            # Hydra leaves ranks unbound, free to migrate mid-measurement; Open MPI binds to
            # cores by default, and so does mpiscope here (not across hosts that may be
            # namespaces of one machine, where every "host" would bind to the same core).
            argv += ["-bind-to", "core"]
        for k, v in job.env.items():
            argv += ["-genv", k, v]
        argv += job.extra_args + job.program
        return Launch(argv=argv, env={}, oversubscribed=over)
