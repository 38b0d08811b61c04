"""Open MPI's `mpirun` (prterun): `-n N`, env via `-x K=V`, explicit consent for root and oversubscription."""
from __future__ import annotations

from mpiscope.launch.base import Job, Launch, Launcher, is_root, local_cores


class OpenMpi(Launcher):
    family = "openmpi"

    def command(self, job: Job, cores: int | None = None) -> Launch:
        argv = [str(self.path), "-n", str(job.ranks)]
        env: dict[str, str] = {}
        if is_root():
            # Open MPI refuses to start as root without consent; the environment form
            # keeps argv free of flags another vendor's mpiexec would reject.
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        if job.hosts:
            argv += ["--host", ",".join(job.hosts)]
        if job.hostfile:
            argv += ["--hostfile", job.hostfile]
        if job.ranks_per_node:
            argv += ["--map-by", f"ppr:{job.ranks_per_node}:node"]
        elif job.mapping:
            argv += ["--map-by", job.mapping]
        if job.binding:
            argv += ["--bind-to", job.binding]
        over = job.hosts is None and job.hostfile is None and job.ranks > (cores or local_cores())
        if over and "--oversubscribe" not in job.extra_args:
            argv.append("--oversubscribe")  # otherwise mpirun refuses more ranks than slots
        for k, v in job.env.items():
            argv += ["-x", f"{k}={v}"]
        argv += job.extra_args + job.program
        return Launch(argv=argv, env=env, oversubscribed=over)
