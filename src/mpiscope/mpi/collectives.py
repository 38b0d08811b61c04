"""Which collective algorithms an MPI library offers, asked of the library itself: Open MPI's
`ompi_info --param coll tuned --level 9 --parsable`, MPICH's `mpivars` (its CVAR list) checked
against the algorithm names compiled into its libmpi; and how to force one through the
environment. MPICH's built-in selection tree (the JSON a tuning file must carry whole) is read
from the same libmpi."""
from __future__ import annotations

import itertools
import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from mpiscope.util.errors import MpiscopeError, UsageError
from mpiscope.mpi.library import MpiLibrary

TUNABLE = ("allreduce", "bcast", "reduce", "allgather", "alltoall", "barrier", "reduce_scatter", "gather",
           "scatter")
TUNE_SIZES = "8,1K,64K,1M"  # what tune measures unless told: a latency-bound, a middle and two bandwidth-bound sizes
DEFAULT = "default"  # the library's own choice: nothing forced
# MPICH values that are no algorithm of their own: a wrapper round the nonblocking collective,
# an offload library, or the selection itself.
MPICH_NOT_ALGORITHMS = {"auto": "the built-in selection", "nb": "a wrapper round the nonblocking collective",
                        "ccl": "needs an offload library (CCL) this build does not use"}


@dataclass(frozen=True)
class Algorithm:
    name: str  # the library's name, with its parameters for MPICH's k-ary and tree ones: tree:k=2,tree_type=kary
    env: dict[str, str] = field(default_factory=dict)  # what forces it
    value: str = ""  # Open MPI: its number; MPICH: the CVAR value
    json_name: str | None = None  # MPICH: its name in the selection tree (None: not writable there)
    params: dict[str, str] = field(default_factory=dict)  # MPICH: its tree leaf's parameter keys (k, tree_type, ...)
    layer: str = ""  # "": an algorithm of the MPIR/coll_tuned layer; else the layer whose choice it is (mpi.layers)


@dataclass(frozen=True)
class Choices:
    """One collective's algorithms in one library, or why it offers no choice."""
    collective: str
    algorithms: tuple[Algorithm, ...] = ()
    why_not: str | None = None  # set: the library cannot be told which algorithm to use
    left_out: dict[str, str] = field(default_factory=dict)  # algorithm -> why tune does not race it

    def named(self, name: str) -> list[Algorithm]:
        """The algorithm of that name; an MPICH k-ary or tree algorithm's name gives every variant
        of it that tune races (tree: tree:k=2,tree_type=kary, ...)."""
        exact = [a for a in self.algorithms if a.name == name]
        found = exact or [a for a in self.algorithms if a.params and a.value == name]
        found = found or [a for a in self.algorithms if a.layer and a.name.split(":")[0] == name]
        if found:
            return found
        if name == DEFAULT:
            return [Algorithm(DEFAULT)]
        raise UsageError(f"{self.collective}: the library has no algorithm '{name}': it offers "
                         f"{', '.join(a.name for a in self.algorithms) or 'none'}")


def vendor_of(lib: MpiLibrary) -> str:
    v = lib.vendor.lower()
    if "open" in v and "mpi" in v:
        return "openmpi"
    if "mpich" in v:
        return "mpich"
    raise UsageError(f"{lib.name} is {lib.vendor or 'an unknown library'}: tune knows how to steer Open MPI's "
                     f"coll/tuned and MPICH's collective selection only")


def _tool(lib: MpiLibrary, name: str) -> Path:
    path = lib.mpicc.parent / name
    if not path.is_file():
        raise MpiscopeError(f"{path} is missing: tune asks the library's own `{name}` which algorithms it has; "
                            f"reinstall {lib.name}")
    return path


def _ask(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MpiscopeError(f"{argv[0]} did not answer ({e}): check the MPI installation") from e
    return done.stdout


def mpivars(lib: MpiLibrary) -> str:
    """MPICH's list of its CVARs, each with its default and values (`mpivars`)."""
    return _ask([str(_tool(lib, "mpivars"))])


def ompi_han_parameters(lib: MpiLibrary) -> str:
    """Open MPI's coll/han parameters with their values (`ompi_info --param coll han --level 9 --parsable`)."""
    return _ask([str(_tool(lib, "ompi_info")), "--param", "coll", "han", "--level", "9", "--parsable"])


def discover(lib: MpiLibrary, collectives: tuple[str, ...] = TUNABLE, ranks: int = 2) -> dict[str, Choices]:
    """Each collective's algorithms as the library lists them (MPICH's radixes up to `ranks`)."""
    if vendor_of(lib) == "openmpi":
        return openmpi_choices(_ask([str(_tool(lib, "ompi_info")), "--param", "coll", "tuned", "--level", "9",
                                     "--parsable"]), collectives)
    return mpich_choices(mpivars(lib), libmpi_strings(lib), collectives, ranks)


def openmpi_choices(parsable: str, collectives: tuple[str, ...]) -> dict[str, Choices]:
    """From `ompi_info --parsable` lines `mca:coll:tuned:param:coll_tuned_<c>_algorithm:enumerator:
    value:<N>:<name>`; 0 ("ignore") is the built-in rules, not an algorithm."""
    found: dict[str, list[Algorithm]] = {}
    pattern = re.compile(r"^mca:coll:tuned:param:coll_tuned_(\w+)_algorithm:enumerator:value:(\d+):(\S+)$")
    for line in parsable.splitlines():
        m = pattern.match(line.strip())
        if m and m.group(2) != "0":
            coll, number, name = m.groups()
            found.setdefault(coll, []).append(Algorithm(name, {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                                                               f"OMPI_MCA_coll_tuned_{coll}_algorithm": number},
                                                        number))
    return {c: Choices(c, tuple(found[c])) if c in found else
            Choices(c, why_not="ompi_info lists no coll_tuned algorithm parameter for it") for c in collectives}


def mpich_choices(mpivars: str, strings: set[str], collectives: tuple[str, ...],
                  ranks: int = 2) -> dict[str, Choices]:
    """From `mpivars`: the block after `MPIR_CVAR_<C>_INTRA_ALGORITHM=...` lists `value - what`
    lines. A value is raced when libmpi knows `MPIR_<C>_intra_<value>` (its name in the JSON
    tree); a k-ary or tree algorithm is raced once per combination of a few values of its
    parameters (`mpich_parameters`), each forced by its CVAR and written into its tree leaf."""
    values: dict[str, list[str]] = {}
    current = None
    for line in mpivars.splitlines():
        m = re.match(r"^\s+MPIR_CVAR_(\w+)_INTRA_ALGORITHM\s*=", line)
        if m:
            current = m.group(1).lower()
            values[current] = []
        elif current and re.match(r"^[a-z_0-9]+\s+-\s", line):
            values[current].append(line.split()[0])
        elif line.startswith("\t"):
            current = None
    defaults = cvar_defaults(mpivars)
    out = {}
    for c in collectives:
        if c not in values:
            out[c] = Choices(c, why_not=f"mpivars lists no MPIR_CVAR_{c.upper()}_INTRA_ALGORITHM")
            continue
        algs, left = [], {}
        for v in values[c]:
            json_name = f"MPIR_{c.capitalize()}_intra_{v}"
            force = {f"MPIR_CVAR_{c.upper()}_INTRA_ALGORITHM": v, "MPIR_CVAR_COLLECTIVE_FALLBACK": "error"}
            if v in MPICH_NOT_ALGORITHMS:
                left[v] = MPICH_NOT_ALGORITHMS[v]
            elif json_name not in strings and f"algorithm={json_name}" not in strings:
                left[v] = f"libmpi has no {json_name} for the selection tree"
            elif (c, v) not in MPICH_PARAMETERS:
                algs.append(Algorithm(v, force, v, json_name))
            else:
                variants, why = mpich_parameters(c, v, defaults, ranks)
                if why:
                    left[v] = why
                for env, params in variants:
                    name = v + ":" + ",".join(f"{k}={params[k]}" for k in _raced(c, v))
                    algs.append(Algorithm(name, {**force, **env}, v, json_name, params))
        out[c] = Choices(c, tuple(algs), None if algs else "no algorithm of it can be written to a tuning file",
                         left)
    return out


# MPICH's k-ary and tree algorithms: per (collective, CVAR value) the CVARs (after
# MPIR_CVAR_<COLL>_) that set its parameters and each one's key in the tree leaf
# (csel_container.c parses `k=`, `tree_type=`, ... keys under `algorithm=...`). Which CVAR belongs to
# which algorithm is MPICH's naming, not something mpivars says; every CVAR is checked against
# mpivars, and a parameter whose CVAR is missing leaves its algorithm out with that reason.
MPICH_PARAMETERS: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("allreduce", "tree"): (("TREE_KVAL", "k"), ("TREE_TYPE", "tree_type"), ("TREE_PIPELINE_CHUNK_SIZE", "chunk_size"),
                            ("TREE_BUFFER_PER_CHILD", "buffer_per_child")),
    ("allreduce", "recexch"): (("RECEXCH_KVAL", "k"), ("RECEXCH_SINGLE_PHASE_RECV", "single_phase_recv")),
    ("allreduce", "k_reduce_scatter_allgather"): (("RECEXCH_KVAL", "k"),
                                                  ("RECEXCH_SINGLE_PHASE_RECV", "single_phase_recv")),
    ("allreduce", "recursive_multiplying"): (("RECURSIVE_MULTIPLYING_KVAL", "k"),),
    ("bcast", "tree"): (("TREE_KVAL", "k"), ("TREE_TYPE", "tree_type"), ("IS_NON_BLOCKING", "is_non_blocking")),
    ("bcast", "pipelined_tree"): (("TREE_KVAL", "k"), ("TREE_TYPE", "tree_type"), ("IS_NON_BLOCKING", "is_non_blocking"),
                                  ("TREE_PIPELINE_CHUNK_SIZE", "chunk_size"), ("RECV_PRE_POST", "recv_pre_posted")),
    ("allgather", "k_brucks"): (("BRUCKS_KVAL", "k"),),
    ("allgather", "recexch_doubling"): (("RECEXCH_KVAL", "k"), ("RECEXCH_SINGLE_PHASE_RECV", "single_phase_recv")),
    ("allgather", "recexch_halving"): (("RECEXCH_KVAL", "k"), ("RECEXCH_SINGLE_PHASE_RECV", "single_phase_recv")),
    ("alltoall", "k_brucks"): (("BRUCKS_KVAL", "k"),),
    ("barrier", "k_dissemination"): (("DISSEM_KVAL", "k"),),
    ("barrier", "recexch"): (("RECEXCH_KVAL", "k"), ("RECEXCH_SINGLE_PHASE_RECV", "single_phase_recv")),
}
# The values raced: a radix up to the rank count (a larger one builds the same tree), the two
# tree shapes that need no topology; every other parameter (chunk sizes, buffer flags) stays at
# the library's default, which the leaf then names explicitly.
RADIXES = (2, 4, 8)
TREE_TYPES = ("kary", "knomial_1")


def _raced(coll: str, value: str) -> list[str]:
    return [key for _, key in MPICH_PARAMETERS[(coll, value)] if key in ("k", "tree_type")]


def cvar_defaults(mpivars: str) -> dict[str, str]:
    """Every CVAR's default as mpivars prints it (`\tNAME = VALUE ...`)."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^\s+(MPIR_CVAR_\w+)\s*=(\S*)", mpivars, re.M)}


def mpich_parameters(coll: str, value: str, defaults: dict[str, str],
                     ranks: int) -> tuple[list[tuple[dict[str, str], dict[str, str]]], str | None]:
    """The variants of a k-ary or tree algorithm: (the CVARs that force them, the leaf's keys);
    or none, with the reason, when a parameter's CVAR is not in this library."""
    stem = f"MPIR_CVAR_{coll.upper()}_"
    missing = [stem + cvar for cvar, _ in MPICH_PARAMETERS[(coll, value)] if stem + cvar not in defaults]
    if missing:
        return [], f"its parameter {missing[0]} is not in mpivars: it cannot be driven"
    choices: list[list[tuple[str, str, str]]] = []
    for cvar, key in MPICH_PARAMETERS[(coll, value)]:
        if key == "k":
            options = [str(k) for k in RADIXES if k <= max(ranks, 2)]
        elif key == "tree_type":
            options = list(TREE_TYPES)
        else:
            options = [defaults[stem + cvar]]
        choices.append([(stem + cvar, key, o) for o in options])
    variants = [({c: o for c, _, o in combo}, {k: o for _, k, o in combo}) for combo in itertools.product(*choices)]
    return variants, None


def libmpi_path(lib: MpiLibrary) -> Path:
    for d in (lib.mpicc.parent.parent / "lib", *(lib.prefix / "lib",) * (lib.prefix is not None)):
        found = sorted(d.glob("libmpi.so*"), key=lambda p: len(p.name), reverse=True)
        real = [p for p in found if p.is_file() and not p.is_symlink()] or found
        if real:
            return real[0]
    raise MpiscopeError(f"no libmpi.so beside {lib.mpicc}: tune reads MPICH's selection tree from it")


def libmpi_strings(lib: MpiLibrary, least: int = 8) -> set[str]:
    """The printable strings of libmpi (as `strings` finds them)."""
    data = libmpi_path(lib).read_bytes()
    return {m.decode() for m in re.findall(rb"[\x20-\x7e]{%d,}" % least, data)}


def mpich_default_tree(lib: MpiLibrary, layer: str = "") -> dict:
    """MPICH's built-in MPIR selection tree, as compiled into this libmpi (the generic.json of its
    release): the one string holding `"collective=allreduce"` with `MPIR_Allreduce_intra_` leaves;
    with `layer` "composition" its CH4 tree (`composition=MPIDI_Allreduce_intra_composition_...`)."""
    leaf = "composition=MPIDI_Allreduce_intra_" if layer == "composition" else "MPIR_Allreduce_intra_"
    for s in libmpi_strings(lib, least=2000):
        if '"collective=allreduce"' in s and leaf in s:
            try:
                return json.loads(s)
            except json.JSONDecodeError:
                continue
    raise MpiscopeError(f"{libmpi_path(lib)} holds no built-in collective selection tree: tune cannot write a "
                        f"complete MPICH tuning file for this build")
