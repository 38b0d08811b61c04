"""MPICH's Hydra `mpiexec` (also Intel MPI, MVAPICH): `-n N`, env via `-genv K V`."""
from __future__ import annotations

from mpiscope.errors import UsageError
from mpiscope.launch.base import Job, Launch, Launcher, local_cores


class Hydra(Launcher):
    family = "hydra"

    def command(self, job: Job, cores: int | None = None) -> Launch:
        if any(a.startswith("--oversubscribe") or a == "-oversubscribe" for a in job.extra_args):
            raise UsageError("--oversubscribe is not accepted by MPICH's mpiexec: MPICH runs more ranks "
                             "than cores without it; remove it from --launcher-args")
        argv = [str(self.path), "-n", str(job.ranks)]
        if job.hosts:
            argv += ["-hosts", ",".join(job.hosts)]
        if job.hostfile:
            argv += ["-f", job.hostfile]
        if job.ranks_per_node:
            argv += ["-ppn", str(job.ranks_per_node)]
        if job.binding:
            argv += ["-bind-to", job.binding]
        for k, v in job.env.items():
            argv += ["-genv", k, v]
        argv += job.extra_args + job.program
        over = job.hosts is None and job.hostfile is None and job.ranks > (cores or local_cores())
        return Launch(argv=argv, env={}, oversubscribed=over)
