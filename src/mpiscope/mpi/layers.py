"""Which layer of an MPI library serves a collective, asked of the library itself, and the knobs
of each layer (what `mpiscope tune` may race, docs/tune.md "Layers").

MPICH (CH4): across nodes a composition (`MPIR_CVAR_<C>_COMPOSITION`) splits the call into
inter-node (netmod) and node (shared-memory) steps; on one node the POSIX shared-memory collective
(`MPIR_CVAR_<C>_POSIX_INTRA_ALGORITHM`: release_gather, or mpir to fall back) serves allreduce,
bcast, reduce and barrier once `MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD` such calls were made; only
the MPIR layer underneath reads `MPIR_CVAR_<C>_INTRA_ALGORITHM` and the JSON selection tree.
`mpivars` lists every variable with its values and default.

Open MPI: per communicator the `coll` components that accept it are stacked by priority and
each collective is served by the highest one that implements it (`coll_base_verbose` prints the
components "Enabled" on every communicator); `coll_tuned_<c>_algorithm` steers only coll/tuned."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from mpiscope.mpi.collectives import Algorithm

POSIX, MPIR, COMPOSITION = "posix", "mpir", "composition"
# MPICH names its compositions alpha, beta, ... in the CH4 tree, numbered 1, 2, ... by the CVAR
GREEK = ("alpha", "beta", "gamma", "delta")
ENV_TRUE = ("1", "yes", "true", "on")


@dataclass(frozen=True)
class Knob:
    """A variable of one layer and the choices it offers."""
    layer: str
    variable: str
    values: tuple[str, ...]
    default: str
    labels: tuple[str, ...] = ()    # the library's words for each value, where it gives them
    poor: str = ""                  # the deliberately poor value a liveness check forces ("": none)


@dataclass(frozen=True)
class Serving:
    """Which layer and component serve a collective at a placement, and why (the library's words)."""
    collective: str
    layer: str                      # posix | mpir | composition (MPICH); the component (Open MPI)
    component: str                  # release_gather, MPIR, tuned, han, sm, ...
    why: str
    algorithms_steer: bool          # the algorithm variable tune races reaches the timed call
    knobs: tuple[Knob, ...] = ()    # the layer's own variables (above the algorithms)
    others: dict[str, str] = field(default_factory=dict)  # what else could serve it, and why it does not


# -- MPICH ---------------------------------------------------------------------------------------

def _blocks(mpivars: str) -> dict[str, tuple[str, list[str], str]]:
    """Every `\tMPIR_CVAR_X=DEFAULT ... description` line with the `value - what` lines after it:
    name -> (default, values, description)."""
    out: dict[str, tuple[str, list[str], str]] = {}
    current = None
    for line in mpivars.splitlines():
        m = re.match(r"^\t(MPIR_CVAR_\w+)\s*=(\S*)\t.*\t([^\t]*)$", line)
        if m:
            current = m.group(1)
            out[current] = (m.group(2), [], m.group(3))
        elif current and re.match(r"^[a-z_0-9]+\s+-\s", line):
            out[current][1].append(line.split()[0])
        elif line.startswith("\t"):
            current = None
    return out


def _numbered(description: str) -> dict[str, str]:
    """The numbered choices of a composition's description ('0 Auto selection 1 NM + SHM ...'):
    number -> the library's words for it."""
    marks = list(re.finditer(r"(?:^|\s)(\d+) (?=[A-Z])", description))
    return {m.group(1): description[m.end():marks[k + 1].start() if k + 1 < len(marks) else None].strip()
            for k, m in enumerate(marks)}


def _nm_only(choices: dict[str, str]) -> str:
    """A composition's deliberately poor choice across nodes: the netmod alone, which also carries
    the ranks of one node between each other instead of shared memory."""
    return next((v for v, words in choices.items() if v != "0" and "NM only" in words), "")


def _value(default: str, values: list[str]) -> str:
    """mpivars prints an enum's default as its index into the listed values."""
    return values[int(default)] if default.isdigit() and int(default) < len(values) else default


def mpich_serving(mpivars: str, collective: str, nodes: int = 1, env: dict[str, str] | None = None) -> Serving:
    """The layer that serves `collective` at `nodes` nodes, under the environment `env` (a layer
    forced by the user), from `mpivars`."""
    env = env or {}
    blocks = _blocks(mpivars)
    c = collective.upper()
    posix, comp = f"MPIR_CVAR_{c}_POSIX_INTRA_ALGORITHM", f"MPIR_CVAR_{c}_COMPOSITION"
    threshold = blocks.get("MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD", ("?", [], ""))[0]
    knobs, others = [], {}
    if posix in blocks:
        default, values, _ = blocks[posix]
        knobs.append(Knob(POSIX, posix, tuple(values), _value(default, values),
                          poor=POSIX_POOR if POSIX_POOR in values else ""))
    if nodes > 1 and comp in blocks:
        default, _, text = blocks[comp]
        choices = _numbered(text)
        knobs.insert(0, Knob(COMPOSITION, comp, tuple(choices), default, tuple(choices.values()), _nm_only(choices)))
        chosen = env.get(comp, default)
        return Serving(collective, COMPOSITION, f"composition {chosen}",
                       f"{comp}={chosen} on {nodes} nodes: the inter-node step runs MPIR's algorithms on the "
                       f"netmod, the node step the shared-memory collective", True, tuple(knobs))
    if posix not in blocks:
        return Serving(collective, MPIR, "MPIR", f"mpivars lists no {posix}: MPIR serves it on a node", True,
                       tuple(knobs))
    chosen = env.get(posix, knobs[-1].default)
    if chosen == "mpir" or "release_gather" not in knobs[-1].values:
        return Serving(collective, MPIR, "MPIR", f"{posix}={chosen}: the POSIX layer falls back to MPIR", True,
                       tuple(knobs))
    others["MPIR"] = (f"the fallback only: the first {threshold} allreduce/bcast/reduce/barrier calls of a "
                      f"communicator, or {posix}=mpir")
    return Serving(collective, POSIX, "release_gather",
                   f"{posix}={chosen} on one node: the shared-memory release_gather collective serves it after "
                   f"MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD={threshold} calls; MPIR_CVAR_{c}_INTRA_ALGORITHM and the "
                   f"JSON tree steer only the MPIR fallback", False, tuple(knobs), others)


# -- Open MPI ------------------------------------------------------------------------------------

# The blocking collectives each coll component of Open MPI 5.0 implements (its module's
# function table, ompi/mca/coll/<component>/coll_<component>_module.c); tuned and basic all.
OMPI_PROVIDES = {
    "han": {"allgather", "allreduce", "barrier", "bcast", "gather", "reduce", "scatter", "alltoall"},
    "sm": {"allreduce", "barrier", "bcast", "reduce"},
    "adapt": {"bcast", "reduce"},
    "self": set(),  # MPI_COMM_SELF only
}


def ompi_enabled(verbose: str) -> dict[int, tuple[str, dict[str, int]]]:
    """Per communicator (cid) its name and the components `coll_base_verbose` says were selected
    Enabled, with their priorities ('coll:base:comm_select: selecting tuned, priority 30, Enabled'),
    read per process (the ranks' lines interleave). Communicators coll/han made for itself (han
    "disqualified ... due to communicator info key") are left out: they serve han, not the call."""
    out: dict[int, tuple[str, dict[str, int]]] = {}
    own: set[int] = set()
    current: dict[str, int] = {}
    for line in verbose.splitlines():
        who = line.split("]", 1)[0] if line.startswith("[") else ""
        m = re.search(r"coll:base:comm_select: new communicator: (.*?) ?\(cid (\d+)\)", line)
        if m:
            current[who] = int(m.group(2))
            out.setdefault(current[who], (m.group(1).strip(), {}))
        elif who in current and (m := re.search(r"selecting\s+(\w+), priority\s+(-?\d+), Enabled", line)):
            out[current[who]][1][m.group(1)] = int(m.group(2))
        elif who in current and "disqualified: han (due to communicator info key)" in line:
            own.add(current[who])
    return {cid: v for cid, v in out.items() if cid not in own}


def timed_communicator(verbose: str) -> tuple[str, dict[str, int]] | None:
    """The communicator the engine times: its own split of MPI_COMM_WORLD, the first created after
    MPI_COMM_WORLD and MPI_COMM_SELF (cid 0 and 1); else MPI_COMM_WORLD."""
    comms = ompi_enabled(verbose)
    later = [cid for cid in sorted(comms) if cid > 1 and comms[cid][1]]
    return comms[later[0]] if later else comms.get(0)


def ompi_serving(verbose: str, collective: str) -> Serving:
    """The component serving `collective` on the communicator the engine times: the Enabled one
    of highest priority that implements it."""
    comm = timed_communicator(verbose)
    able = [(p, c) for c, p in (comm[1] if comm else {}).items()
            if c in ("tuned", "basic") or collective in OMPI_PROVIDES.get(c, ())]
    if not able:
        return Serving(collective, "unknown", "unknown", "coll_base_verbose named no component for it", False)
    top = max(able)[1]
    name, comps = comm
    stack = ", ".join(f"{c} {p}" for c, p in sorted(comps.items(), key=lambda kv: (-kv[1], kv[0])))
    others = {c: f"priority {p}, below {top}" for p, c in able if c != top}
    return Serving(collective, f"coll/{top}", top,
                   f"coll_base_verbose on {name or 'the timed communicator'}: Enabled by priority {stack}; {top} is "
                   f"the highest that implements {collective}", top == "tuned",
                   (Knob(f"coll/{top}", f"OMPI_MCA_coll_{top}_priority", (), str(comps[top])),), others)


# coll/han's own choices (Open MPI 5.0, coll_han_dynamic.h): per collective and topological level
# the component han calls, set by `coll_han_<c>_dynamic_<level>_module` (a component id) or its
# rules file; at the global level a component other than han hands the whole call to it.
HAN = "coll/han"
HAN_COMPONENTS = ("self", "basic", "libnbc", "tuned", "sm", "adapt", "han")  # COMPONENT_T: the ids
HAN_LEVELS = ("intra_node", "inter_node", "global_communicator")  # the rules file's levels 0, 1, 2
HAN_DYNAMIC = {"allgather", "allreduce", "bcast", "gather", "reduce", "scatter"}  # what han's rules steer
HAN_POOR = "basic"  # at the global level: basic's linear algorithms over the whole communicator


def with_han_knobs(s: Serving, parsable: str, enabled: set[str]) -> Serving:
    """`s` with coll/han's per-level component choices as knobs, where han serves the collective:
    the values are the components Enabled on the timed communicator that implement it (han's
    storage holds only those), the defaults `ompi_info` prints."""
    if s.component != "han" or s.collective not in HAN_DYNAMIC:
        return s
    # libnbc implements only the nonblocking collectives: han finds its module and says it "cannot
    # handle this collective" (Open MPI 5.0.11, coll_han_verbose)
    able = [c for c in HAN_COMPONENTS if c in enabled and c not in ("self", "han", "libnbc")
            and (c in ("tuned", "basic") or s.collective in OMPI_PROVIDES.get(c, ()))]
    knobs = []
    for level in HAN_LEVELS:
        var = f"coll_han_{s.collective}_dynamic_{level}_module"
        m = re.search(rf"^mca:coll:han:param:{var}:value:(\d+)$", parsable, re.M)
        if m is None:
            continue
        names = able + (["han"] if level == "global_communicator" else [])
        poor = str(HAN_COMPONENTS.index(HAN_POOR)) if level == "global_communicator" and HAN_POOR in able else ""
        knobs.append(Knob(HAN, "OMPI_MCA_" + var, tuple(str(HAN_COMPONENTS.index(c)) for c in names), m.group(1),
                          tuple(names), poor))
    return replace(s, knobs=s.knobs + tuple(knobs))


def layer_algorithms(s: Serving, strings: set[str] | None = None) -> tuple[list[Algorithm], dict[str, str]]:
    """The choices of the layer serving a collective across nodes, raced beside its algorithms:
    MPICH's compositions (`MPIR_CVAR_<C>_COMPOSITION`, written as the CH4 tree's
    `composition=MPIDI_<Coll>_intra_composition_<alpha..delta>`, checked in libmpi's `strings`),
    coll/han's component per level. Each value but the default (and MPICH's 0, auto) is one;
    what cannot be written to a file is left out with the reason."""
    out: list[Algorithm] = []
    left: dict[str, str] = {}
    for k in s.knobs:
        if k.layer == COMPOSITION:
            coll = s.collective.capitalize()
            for v, words in zip(k.values, k.labels):
                if v in ("0", k.default):
                    continue
                name = f"composition:{v}"
                json_name = f"MPIDI_{coll}_intra_composition_{GREEK[int(v) - 1]}" if int(v) <= len(GREEK) else ""
                if strings is not None and f"composition={json_name}" not in strings and json_name not in strings:
                    left[name] = f"libmpi has no {json_name or 'composition ' + v} for the CH4 selection tree ({words})"
                    continue
                out.append(Algorithm(name, {k.variable: v, "MPIR_CVAR_COLLECTIVE_FALLBACK": "error"}, v, json_name,
                                     layer=COMPOSITION))
        elif k.layer == HAN:
            level = k.variable.removeprefix(f"OMPI_MCA_coll_han_{s.collective}_dynamic_").removesuffix("_module")
            for v, component in zip(k.values, k.labels):
                if v != k.default:
                    out.append(Algorithm(f"han:{level}={component}", {k.variable: v}, f"{level}={component}",
                                         layer=HAN))
    return out, left


def ompi_verbose_lines(verbose: str) -> str:
    """The lines of `coll_base_verbose` output that say which component serves what."""
    return "\n".join(ln for ln in verbose.splitlines() if "coll:base:comm_select: new communicator" in ln
                     or "Enabled" in ln or "due to communicator info key" in ln)


def ompi_verbose_env() -> dict[str, str]:
    """What makes Open MPI print its component choice per communicator."""
    return {"OMPI_MCA_coll_base_verbose": "20"}


# -- the deliberately poor choice a liveness check forces -----------------------------------------

# MPICH's MPIR algorithm per collective that, where MPIR serves, should be clearly slower than
# MPICH's own choice at large sizes; a pipelined tree is made poorer still by a chunk of 64 bytes
# (a 64 KiB call becomes a thousand messages), so that its slowdown stands out of launch-to-launch
# noise of 2-3 x. A collective not named here is probed with its first listed algorithm.
MPICH_POOR = {"allreduce": "tree", "bcast": "pipelined_tree", "reduce": "reduce_scatter_gather",
              "allgather": "brucks", "alltoall": "brucks", "barrier": "k_dissemination",
              "reduce_scatter": "noncommutative"}
MPICH_POOR_PARAMETERS = {("allreduce", "tree"): {"TREE_PIPELINE_CHUNK_SIZE": "64"},
                         ("bcast", "pipelined_tree"): {"TREE_PIPELINE_CHUNK_SIZE": "64"}}
# The POSIX layer's poor choice: falling back to MPIR (3-7.5 x slower than release_gather, OSU).
POSIX_POOR = "mpir"


def poor_algorithm(vendor: str, collective: str, values: list[str]) -> str | None:
    """The CVAR value (MPICH) or number (Open MPI) of the algorithm a liveness check forces, among
    `values` (the candidates' values, in the library's order): Open MPI's number 1 (the linear
    algorithm every coll_tuned list starts with), MPICH's MPICH_POOR, else the first."""
    if not values:
        return None
    wanted = "1" if vendor == "openmpi" else MPICH_POOR.get(collective)
    return wanted if wanted in values else values[0]


def poor_parameters(vendor: str, collective: str, value: str) -> dict[str, str]:
    """The CVARs that make MPICH's poor algorithm poorer (its pipeline chunk), as variables."""
    if vendor != "mpich":
        return {}
    return {f"MPIR_CVAR_{collective.upper()}_{k}": v for k, v in MPICH_POOR_PARAMETERS.get((collective, value), {}).items()}


def steady_env(vendor: str, mpivars_text: str) -> dict[str, str]:
    """What makes the liveness check time the calls a layer serves in its steady state: MPICH
    hands the first MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD calls of every communicator to MPIR
    whatever the POSIX layer, and a poor MPIR choice there slows the engine's warm-up and the
    timing it plans from it; at 0 the POSIX layer serves from the first call."""
    if vendor == "mpich" and "MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD" in mpivars_text:
        return {"MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD": "0"}
    return {}
