"""SimGrid's `smpirun`: every rank a simulated process on a simulated platform, all in one
host process. `-np N -platform XML -hostfile FILE`, SimGrid options as `--cfg=KEY:VALUE`
(passed through from --launcher-args), env vars inherited (the ranks are this process's)."""
from __future__ import annotations

import hashlib

from mpiscope.util import paths
from mpiscope.util.errors import UsageError
from mpiscope.launchers.base import Job, Launch, Launcher
from mpiscope.launchers.platform import parse, write

DEFAULT_PLATFORM = "cluster"
# Computation between MPI calls takes no simulated time: the figures are the network model's
# alone, the same on a loaded host as on an idle one (`--cfg=smpi/simulate-computation:yes`
# in --launcher-args times the host's computation instead). SimGrid's start-up chatter is off.
# Collectives choose their algorithm as MPICH does: SimGrid's own default allgather and alltoall
# post a message to every rank and wait on all of them (an allgather of 4 B at 64 ranks took
# 10 host seconds a point, and grows as ranks^3); `smpi/coll-selector` or `smpi/<coll>` given wins.
DEFAULT_CFG = ("--cfg=smpi/simulate-computation:no", "--cfg=smpi/coll-selector:mpich", "--log=root.thresh:warning")
# Under the mpich selector SimGrid runs its SMP-aware two-level bcast, reduce and allreduce on
# any communicator but a node's own, and their first call finds the nodes with two ring
# allgathers: ranks^2 messages (33 host seconds at 1024 ranks, about ranks^2.7; 4096 ranks wrote
# no point in 27 CPU minutes). With one rank a node the two levels are one: allreduce is
# recursive doubling and bcast a binomial tree at every size (the same simulated times,
# measured), so those are named, and the discovery never runs. Reduce on one rank a node is
# MPICH's rule (binomial below 2 KiB, scatter-gather above), which no one setting names: it
# is binomial here. A given smpi/<collective> wins, and a given selector (mpich too) drops all three.
SMP_FREE = ("--cfg=smpi/allreduce:rdb", "--cfg=smpi/bcast:binomial_tree", "--cfg=smpi/reduce:binomial")
# The block SMPI maps over every shared payload again and again (the engine allocates whole
# blocks, sim.c): larger blocks need fewer of the kernel's 65,530 mappings, but every mapping is
# populated up front, so a 4-byte point maps a whole block per rank (1 GiB blocks: 138 host
# seconds for two points at 256 ranks). 16 MiB: an allgather of 1 MiB fits at 512 ranks.
BLOCK_KEY = "--cfg=smpi/shared-malloc-blocksize"
SHARED_BLOCK = 16 << 20


class Smpirun(Launcher):
    def command(self, job: Job, cores: int | None = None) -> Launch:
        if job.hosts or job.nodes or job.binding or job.ranks_per_node or job.mapping:
            raise UsageError("a simulated run places its ranks on the platform's nodes in order: leave out "
                             "--hosts, --nodes, --bind-to, --ranks-per-node and --map-by (the node count is "
                             "--platform's nodes=N), or give --hostfile")
        platform = parse(job.platform or DEFAULT_PLATFORM, job.ranks)
        key = hashlib.sha256(f"{platform.description}\0{job.ranks}".encode()).hexdigest()[:16]
        xml, hostfile = write(platform, job.ranks, paths.home() / "platforms" / key)
        if job.hostfile:
            hostfile = job.hostfile
        if hostfile is None:
            raise UsageError(f"--platform {platform.description}: give --hostfile naming its hosts, one a line")
        given = " ".join(job.extra_args)
        smp_free = () if "smpi/coll-selector" in given else SMP_FREE
        cfg = [a for a in (*DEFAULT_CFG, *smp_free, f"{BLOCK_KEY}:{SHARED_BLOCK}") if a.split(":")[0] + ":" not in given]
        block = next((a.split(":", 1)[1] for a in job.extra_args if a.startswith(BLOCK_KEY + ":")), str(SHARED_BLOCK))
        argv = [str(self.path), "-np", str(job.ranks), "-platform", str(xml), "-hostfile", str(hostfile),
                *cfg, *job.extra_args, *job.program]
        env = {**job.env, "MPISCOPE_PLATFORM": platform.description, "MPISCOPE_SIM_BLOCK": block}
        return Launch(argv=argv, env=env, oversubscribed=False)
