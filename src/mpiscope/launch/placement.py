"""Where ranks go, from the user's options: checked once, then handed to every adapter
as the Job fields of RunSpec.placement (launcher, hosts, hostfile, nodes, ranks per node,
mapping, binding)."""
from __future__ import annotations

from pathlib import Path

from mpiscope.errors import UsageError
from mpiscope.launch.base import BINDINGS, MAPPINGS


def host_count(placement: dict) -> int | None:
    """How many nodes the placement names, when it names them (hosts or --nodes)."""
    if placement.get("hosts"):
        return len(placement["hosts"])
    return placement.get("nodes")


def make_placement(*, launcher: str | None = None, hosts: list[str] | None = None,
                   hostfile: str | None = None, nodes: int | None = None,
                   ranks_per_node: int | None = None, mapping: str | None = None,
                   binding: str | None = None) -> dict:
    """The placement dict with only the fields given; every value checked here, so a
    launcher never sees a combination it would reject half-way through a run."""
    if hosts is not None and hostfile is not None:
        raise UsageError("--hosts and --hostfile both name the hosts: give one of them")
    if hosts is not None and (not hosts or any(not h or h.startswith(":") for h in hosts)):
        raise UsageError(f"--hosts expects host names separated by commas (a,b or a:2,b:2), got {hosts}")
    if hostfile is not None:
        p = Path(hostfile)
        if not p.is_file():
            raise UsageError(f"--hostfile {hostfile}: no such file; give a file with one host per line")
        hostfile = str(p.resolve())  # the launcher may run elsewhere (a batch job's directory)
    for name, value in (("--ranks-per-node", ranks_per_node), ("--nodes", nodes)):
        if value is not None and value < 1:
            raise UsageError(f"{name} must be at least 1, got {value}")
    if hosts and nodes and nodes != len(hosts):
        raise UsageError(f"--nodes {nodes} but --hosts names {len(hosts)} host(s): give one of them")
    if mapping is not None and mapping not in MAPPINGS:
        raise UsageError(f"--map-by {mapping}: use one of {', '.join(MAPPINGS)}")
    if binding is not None and binding not in BINDINGS:
        raise UsageError(f"--bind-to {binding}: use one of {', '.join(BINDINGS)}")
    given = dict(launcher=launcher, hosts=hosts, hostfile=hostfile, nodes=nodes,
                 ranks_per_node=ranks_per_node, mapping=mapping, binding=binding)
    return {k: v for k, v in given.items() if v is not None}


def placement_ranks(placement: dict, ranks: int | None) -> int | None:
    """The rank count: the one asked for, checked against the room the placement gives,
    or, when none was asked for, ranks per node x nodes (None: the caller's default)."""
    per, count = placement.get("ranks_per_node"), host_count(placement)
    if ranks is None:
        return per * count if per and count else None
    if per and count and ranks > per * count:
        raise UsageError(f"-n {ranks} does not fit {count} node(s) x {per} rank(s) per node: use "
                         f"-n {per * count} or fewer, or more --ranks-per-node")
    return ranks


def add_placement_options(p) -> None:
    """`mpiscope run`'s launcher and placement options (an argparse parser)."""
    from mpiscope.launch import LAUNCHERS
    g = p.add_argument_group("launcher and placement")
    g.add_argument("--launcher", choices=LAUNCHERS,
                   help="the MPI's own mpiexec/mpirun, or Slurm's srun (default: srun inside a Slurm "
                        "allocation, else mpiexec)")
    g.add_argument("--hosts", type=lambda t: [h.strip() for h in t.split(",") if h.strip()],
                   help="hosts, comma-separated (a,b or a:2,b:2 with slots)")
    g.add_argument("--hostfile", help="file naming the hosts (the launcher's own format)")
    g.add_argument("--nodes", type=int, help="number of nodes (srun -N; default: from --hosts or ranks per node)")
    g.add_argument("--ranks-per-node", type=int, help="ranks on each node")
    g.add_argument("--map-by", choices=MAPPINGS, help="block: fill a node first; cyclic: deal ranks round the nodes")
    g.add_argument("--bind-to", choices=BINDINGS, help="pin each rank to a core, hwthread, socket, numa node, or none")


def placement_from_args(a) -> dict:
    return make_placement(launcher=a.launcher, hosts=a.hosts, hostfile=a.hostfile, nodes=a.nodes,
                          ranks_per_node=a.ranks_per_node, mapping=a.map_by, binding=a.bind_to)
