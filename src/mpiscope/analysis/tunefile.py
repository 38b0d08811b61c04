"""Tuning files in the libraries' own formats, written from tune's choices and read back:
Open MPI's coll/tuned rules file (classic `rule-file-version-2` text for 5.x, JSON
`rule_file_version` 3 for 6.x) and MPICH's collective selection tree (JSON), always the
library's whole tree with only the tuned communicator sizes of the tuned collectives changed.

A tuning is, per collective and rank count, bands of message sizes in the engine's size
(bytes per call as docs/engine.md defines it) with the algorithm chosen for each; DEFAULT leaves
the library's own choice."""
from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from mpiscope.util import bounded
from mpiscope.util.errors import UsageError
from mpiscope.mpi.collectives import DEFAULT

# Open MPI's collective ids in the rules file (coll_base_functions.h's COLLTYPE_T order).
MAX_TUNING_BYTES = 64 << 20  # a tuning file holds a few kB per collective and rank count
OMPI_IDS = {"allgather": 0, "allgatherv": 1, "allreduce": 2, "alltoall": 3, "alltoallv": 4, "alltoallw": 5,
            "barrier": 6, "bcast": 7, "exscan": 8, "gather": 9, "gatherv": 10, "reduce": 11,
            "reduce_scatter": 12, "reduce_scatter_block": 13, "scan": 14, "scatter": 15}
# Whose size the libraries count over the whole communicator (engine size x ranks): Open MPI's
# coll_tuned_decision_dynamic.c, MPICH's total_msg_size in csel.c.
OMPI_TIMES_RANKS = {"allgather", "alltoall", "gather", "scatter"}
MPICH_TOTAL = {"allgather", "gather", "scatter", "reduce_scatter"}  # total_msg_size; others avg_msg_size
MPICH_REDUCTIONS = {"allreduce", "reduce", "reduce_scatter"}  # a forced leaf for commutative ops only
HAN_HEADER = "# coll/han dynamic rules"  # the first line of the han rules file tune writes


@dataclass(frozen=True)
class Band:
    """From `low` bytes (engine size) up: `algorithm` (its name; `value`, what the file holds)."""
    low: int
    algorithm: str
    value: str = ""
    params: tuple[tuple[str, str], ...] = ()  # MPICH: the tree leaf's parameter keys, e.g. (("k", "4"),)
    layer: str = ""  # "": an algorithm (MPIR tree, coll_tuned rules); else a choice of that layer (its own file)


@dataclass
class Tuning:
    library: str  # openmpi | mpich
    version: str
    rules: dict[str, dict[int, list[Band]]] = field(default_factory=dict)  # collective -> ranks -> bands
    nodes: int = 1  # the nodes the tune ran on: the files' node-count bands where the format has them
    layer_defaults: dict[str, str] = field(default_factory=dict)  # "<coll> <level>" -> han's default component

    def changes(self) -> bool:
        return any(b.algorithm != DEFAULT for by in self.rules.values() for bands in by.values() for b in bands)

    def per_node(self, n: int) -> int | None:
        """The ranks per node of `n` ranks on the tune's nodes (None: they do not divide evenly)."""
        return n // self.nodes if n % self.nodes == 0 else None


def algorithms_only(bs: list[Band]) -> list[Band]:
    """The bands as the algorithm layer's file holds them: a layer's choice keeps the library's
    algorithm there (the layer's own file carries it)."""
    return of_layer(bs, "")


def of_layer(bs: list[Band], layer: str) -> list[Band]:
    """The bands as `layer`'s file holds them: another layer's choice keeps the library's there,
    and neighbours that then both keep it are one band."""
    out: list[Band] = []
    for b in bs:
        b = b if b.layer == layer else Band(b.low, DEFAULT)
        if not (out and out[-1].algorithm == DEFAULT == b.algorithm):
            out.append(b)
    return out


@dataclass(frozen=True)
class Clash:
    """Rank counts that share one band of a file (the format keys it by something they all have
    alike, e.g. the node count) and chose differently there: from `low` engine bytes up to `high`
    (None: every larger size), each rank count's choice in `choices` (its band there: the
    algorithm with its value and parameters, which may be all that differ)."""
    collective: str
    file: str  # the file (MPIR_ROOTS, tunelayers.HAN_RULES)
    key: str   # the shared band's key in it
    ranks: tuple[int, ...]
    low: int
    high: int | None
    choices: tuple[Band, ...]


class BandClash(UsageError):
    """A writer's refusal of a shared band its rank counts chose differently (`one_band`): the
    clash is the value, report.tune.clash_refusal words it (the message here is its label)."""

    def __init__(self, clash: Clash):
        super().__init__(f"{clash.collective}: {clash.file}: {clash.key}: {' and '.join(map(str, clash.ranks))} ranks")
        self.clash = clash


def _choice(b: Band) -> tuple:
    return b.algorithm, b.value if b.algorithm != DEFAULT else "", b.params, b.layer if b.algorithm != DEFAULT else ""


def _band_at(bs: list[Band], low: int) -> Band:
    return ([b for b in bs if b.low <= low] or [Band(0, DEFAULT)])[-1]


def clashes(coll: str, by_ranks: dict[int, list[Band]], file: str, key: str) -> list[Clash]:
    """Where the rank counts of `by_ranks` (each its bands of the one shared band) choose
    differently: every rank count's choice is a choice, the library's default too."""
    lows = sorted({b.low for bs in by_ranks.values() for b in bs})
    out = []
    for k, low in enumerate(lows):
        at = {n: _band_at(bs, low) for n, bs in sorted(by_ranks.items())}
        if len({_choice(b) for b in at.values()}) > 1:
            out.append(Clash(coll, file, key, tuple(at), low, lows[k + 1] if k + 1 < len(lows) else None,
                             tuple(at.values())))
    return out


def one_band(coll: str, by_ranks: dict[int, list[Band]], file: str, key: str) -> list[Band]:
    """The bands of a band the format shares between the rank counts of `by_ranks`: theirs where
    they all chose alike; BandClash (a UsageError) where they did not, since the file can hold only
    one of the choices there (the rule of every writer here: a shared band is never resolved by
    picking one rank count's choice)."""
    found = clashes(coll, by_ranks, file, key)
    if found:
        raise BandClash(found[0])
    first = by_ranks[min(by_ranks)]
    out: list[Band] = []
    for low in sorted({b.low for bs in by_ranks.values() for b in bs}):
        b = _band_at(first, low)
        if not (out and _choice(out[-1]) == _choice(b)):
            out.append(replace(b, low=low))
    return out


def band_low(below: int | None, size: int) -> int:
    """Where the band of a measured `size` starts: the geometric middle between it and the
    measured size `below` it (None: the first, from 0)."""
    return 0 if below is None else int(math.sqrt(max(below, 1) * max(size, 1))) + 1


def bands(choices: list[tuple[int, str, str, dict[str, str]]]) -> list[Band]:
    """Measured sizes with their choice (size, algorithm, value, leaf parameters) as bands: each
    from the geometric middle between its size and the one below (the first from 0); equal
    neighbours merged."""
    out: list[Band] = []
    choices = sorted(choices, key=lambda c: c[0])
    for k, (size, alg, value, params) in enumerate(choices):
        low = band_low(choices[k - 1][0] if k else None, size)
        if out and out[-1].algorithm == alg:
            continue
        out.append(Band(low, alg, value, tuple(params.items())))
    return out


# -- Open MPI -----------------------------------------------------------------------------------

def ompi_classic(t: Tuning) -> str:
    """The classic rules file: per collective the communicator sizes tuned, each with its rules
    `BYTES ALG FANINOUT SEGSIZE` (the first for 0 bytes, sizes ascending, 0 = the built-in rules).
    Open MPI takes the nearest lower communicator size, and the first one for any smaller
    (coll_tuned_dynamic_rules.c), so sizes 1 and n + 1 of each tuned n get `0 0 0 0`: every
    communicator size not tuned keeps the built-in rules."""
    lines = ["rule-file-version-2", str(len(t.rules))]
    for coll, by_ranks in t.rules.items():
        scale = coll in OMPI_TIMES_RANKS
        entries = {n: [f"{b.low * (n if scale else 1)} {b.value if b.algorithm != DEFAULT else 0} 0 0"
                       for b in algorithms_only(by_ranks[n])] for n in by_ranks}
        for n in [1, *[m + 1 for m in by_ranks]]:
            entries.setdefault(n, ["0 0 0 0"])
        lines += [str(OMPI_IDS[coll]), str(len(entries))]
        for n in sorted(entries):
            lines += [str(n), str(len(entries[n])), *entries[n]]
    return "\n".join(lines) + "\n"


def ompi_json(t: Tuning) -> dict:
    """Open MPI 6's JSON rules (first match wins; what no rule covers keeps the built-in rules)."""
    out: dict = {"rule_file_version": 3, "module": "tuned", "collectives": {}}
    for coll, by_ranks in t.rules.items():
        entries = []
        for n in sorted(by_ranks):
            scale = n if coll in OMPI_TIMES_RANKS else 1
            bs = algorithms_only(by_ranks[n])
            rules = [{"msg_size_min": b.low * scale,
                      "msg_size_max": bs[k + 1].low * scale - 1 if k + 1 < len(bs) else "inf", "alg": int(b.value)}
                     for k, b in enumerate(bs) if b.algorithm != DEFAULT]
            if rules:
                entries.append({"comm_size_min": n, "comm_size_max": n, "rules": rules})
        out["collectives"][coll] = entries
    return out


def ompi_uses_json(version: str) -> bool:
    major = re.match(r"(\d+)", version or "")
    return bool(major) and int(major.group(1)) >= 6


# -- MPICH --------------------------------------------------------------------------------------

def mpich_tree(t: Tuning, default_tree: dict, layer: str = "", kind: str = "algorithm") -> dict:
    """The library's whole tree with, for each tuned collective, its intra-communicator subtree
    split by communicator size and ranks per node (the format's rank-count and node-count bands):
    the tuned ones get their bands, every other the original. `layer` "" writes the MPIR tree's
    algorithms; "composition" the CH4 tree's compositions (`kind` the leaf's key)."""
    tree = copy.deepcopy(default_tree)
    for coll, by_ranks in t.rules.items():
        key = f"collective={coll}"
        if key not in tree or "comm_type=intra" not in tree[key]:
            raise UsageError(f"the library's selection tree has no intra subtree for {coll}: it cannot be tuned")
        original = tree[key]["comm_type=intra"]
        at: dict[int, tuple[int | None, dict]] = {}
        for n in sorted(by_ranks):
            at[n] = (t.per_node(n), _mpich_bands(coll, n, of_layer(by_ranks[n], layer), original, kind))
        roots = node_roots(t, by_ranks) if not layer else {}
        if roots:  # one band for every rank count whose MPIR algorithm ran on one rank per node
            shared = one_band(coll, roots, MPIR_ROOTS, roots_key(t.nodes))
            at[t.nodes] = (1, _mpich_bands(coll, t.nodes, shared, original, kind))
        split: dict = {}
        for n in sorted(at):
            ppn, bands_of = at[n]
            split[f"comm_size<{n}"] = copy.deepcopy(original)
            split[f"comm_size<={n}"] = _per_node(t.nodes, n, ppn, bands_of, original)
        split["comm_size=any"] = copy.deepcopy(original)
        tree[key]["comm_type=intra"] = split
    return tree


# the file whose band at one rank a node the rank counts on the same nodes share (`node_roots`)
MPIR_ROOTS = "MPIR tree"


def roots_key(nodes: int) -> str:
    return f"comm_size<={nodes} comm_avg_ppn<=1"


def node_roots(t: Tuning, by_ranks: dict[int, list[Band]]) -> dict[int, list[Band]]:
    """The MPIR tree's algorithm bands of the rank counts whose forced MPIR algorithm ran on a
    communicator of one rank per node, `t.nodes` ranks: the rank count of one rank a node itself,
    and each of several ranks a node (the composition's inter-node step). The tree keys that
    communicator by its size and ranks per node alone, so they all share its band."""
    if t.nodes < 2:
        return {}
    return {n: algorithms_only(bs) for n, bs in by_ranks.items() if (t.per_node(n) or 0) >= 1}


def _per_node(nodes: int, n: int, ppn: int | None, bands_of: dict, original: dict) -> dict:
    """The node-count band of `n` ranks on `nodes` nodes: MPICH's tree has no key for the nodes
    but `comm_avg_ppn` (ranks / nodes of a communicator that knows its nodes), so at `n` ranks
    the nodes are fixed by the ranks per node. More nodes than tuned (fewer per node) keep the
    original; on one node so does nothing else (a communicator that does not know its nodes
    takes the bands, as before there were node bands); on several, fewer nodes keep it too."""
    if ppn is None:  # ranks that do not divide evenly: the rank-count band alone
        return bands_of
    if nodes == 1:
        return {f"comm_avg_ppn<{n}": copy.deepcopy(original), "comm_avg_ppn=any": bands_of}
    return {f"comm_avg_ppn<{ppn}": copy.deepcopy(original), f"comm_avg_ppn<={ppn}": bands_of,
            "comm_avg_ppn=any": copy.deepcopy(original)}


def _mpich_bands(coll: str, n: int, bs: list[Band], original: dict, kind: str = "algorithm") -> dict:
    def leaf(b: Band) -> dict:
        if b.algorithm == DEFAULT:
            return copy.deepcopy(original)
        forced = {f"{kind}={b.value}": {f"{k}={v}": {} for k, v in b.params}}
        if coll in MPICH_REDUCTIONS:  # a user's non-commutative op keeps the built-in choice
            return {"is_commutative=yes": forced, "is_commutative=no": copy.deepcopy(original)}
        return forced
    if coll == "barrier":
        return leaf(bs[0])
    out: dict = {}
    for k, b in enumerate(bs):
        if k + 1 < len(bs):
            high = bs[k + 1].low
            key = f"total_msg_size<{high * n}" if coll in MPICH_TOTAL else f"avg_msg_size<={high - 1}"
        else:
            key = "total_msg_size=any" if coll in MPICH_TOTAL else "avg_msg_size=any"
        out[key] = leaf(b)
    return out


# -- writing and reading ------------------------------------------------------------------------

def render(t: Tuning, default_tree: dict | None = None) -> tuple[str, str]:
    """The file's text and its format's name."""
    if t.library == "openmpi":
        if ompi_uses_json(t.version):
            return json.dumps(ompi_json(t), indent=1) + "\n", "Open MPI rules (JSON, rule_file_version 3)"
        return ompi_classic(t), "Open MPI rules (classic, rule-file-version-2)"
    if default_tree is None:
        raise UsageError("an MPICH tuning file carries the library's whole tree: it was not read")
    return json.dumps(mpich_tree(t, default_tree)) + "\n", "MPICH collective selection tree (JSON)"


def environment(library: str, path: Path) -> dict[str, str]:
    """The variables that make the library read the file."""
    if library == "openmpi":
        return {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(path)}
    return {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(path)}


def read(path: Path) -> list[tuple[str, int | str, int, str]]:
    """A tuning file as rows (collective, ranks and where the format says so the nodes' share, from
    bytes in the file's own size unit, algorithm or the layer's choice); UsageError naming the
    line or key when it does not parse (coll/han's file: `analysis.tunelayers.read_file`)."""
    try:
        text = bounded.read_text(path, MAX_TUNING_BYTES, "a tuning file")
        data = bounded.loads(text) if text.lstrip().startswith("{") else None
    except (OSError, ValueError) as e:
        raise UsageError(f"cannot read {path}: {bounded.why(e)}: give a tuning file tune wrote") from e
    if data is not None:
        if isinstance(data, dict) and "rule_file_version" in data:
            return _read_ompi_json(data, path)
        composition = '"composition=' in text
        return _read_mpich(data, path, "composition" if composition else "algorithm")
    return _read_classic(text, path)


def _read_classic(text: str, path: Path) -> list[tuple[str, int, int, str]]:
    names = {v: k for k, v in OMPI_IDS.items()}
    tokens = [ln.split() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    if tokens and tokens[0][0].startswith("rule-file-version-"):
        tokens = tokens[1:]
    pos = 0

    def next_line(what: str) -> list[int]:
        nonlocal pos
        if pos >= len(tokens):
            raise UsageError(f"{path}: the file ends where {what} should be: not a complete Open MPI rules file")
        try:
            values = [int(x) for x in tokens[pos]]
        except ValueError:
            raise UsageError(f"{path}: '{bounded.excerpt(' '.join(tokens[pos]))}' is no {what}: not an Open MPI rules "
                             f"file") from None
        pos += 1
        return values
    rows = []
    for _ in range(next_line("the number of collectives")[0]):
        cid = next_line("a collective id")[0]
        if cid not in names:
            raise UsageError(f"{path}: collective id {cid} is not one Open MPI knows (0-15)")
        for _ in range(next_line("a number of communicator sizes")[0]):
            ranks = next_line("a communicator size")[0]
            for k in range(next_line("a number of rules")[0]):
                rule = next_line("a rule (bytes algorithm fan-in/out segment size)")
                if len(rule) < 4 or (k == 0 and rule[0] != 0):
                    raise UsageError(f"{path}: rule '{bounded.excerpt(' '.join(map(str, rule)))}' for {names[cid]} at {ranks} ranks: "
                                     f"rules are BYTES ALG FANINOUT SEGSIZE, the first for 0 bytes")
                rows.append((names[cid], ranks, rule[0], DEFAULT if rule[1] == 0 else str(rule[1])))
    return rows


def _read_ompi_json(data: dict, path: Path) -> list[tuple[str, int, int, str]]:
    rows = []
    try:
        for coll, entries in data["collectives"].items():
            for e in entries:
                for r in e["rules"]:
                    rows.append((coll, int(e["comm_size_min"]), int(r["msg_size_min"]), str(r["alg"])))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise UsageError(f"{path}: not an Open MPI JSON rules file ({bounded.excerpt(repr(e))} missing or malformed)") from e
    return rows


def _read_mpich(data: object, path: Path, kind: str = "algorithm") -> list[tuple[str, int | str, int, str]]:
    """The bands of an MPICH tree (the MPIR tree's algorithms, or with `kind` "composition" the CH4
    tree's): per collective and `comm_size<=N` (and `comm_avg_ppn<=P`: "N, P per node"; a
    one-node band, `comm_avg_ppn=any` beside `comm_avg_ppn<N`, reads as N)."""
    if not isinstance(data, dict) or not any(str(k).startswith("collective=") for k in data):
        raise UsageError(f"{path}: not an MPICH selection tree (no 'collective=' keys): give a tuning file tune wrote")
    rows: list[tuple[str, int | str, int, str]] = []
    for key, sub in data.items():
        intra = sub.get("comm_type=intra", {}) if isinstance(sub, dict) else {}
        for ck, by_size in intra.items():
            m = re.fullmatch(r"comm_size<=(\d+)", ck)
            if not m or not isinstance(by_size, dict):
                continue
            n = int(m.group(1))
            for where, node in _per_node_bands(n, by_size):
                rows += [(key.removeprefix("collective="), where, low, alg) for low, alg in _bands_of(n, node, kind)]
    return rows


def _per_node_bands(n: int, node: dict) -> list[tuple[int | str, dict]]:
    """The node-count bands under a `comm_size<=N` key: (where, its size bands)."""
    ppn = [(k, v) for k, v in node.items() if str(k).startswith("comm_avg_ppn")]
    if not ppn:
        return [(n, node)]
    keys = [k for k, _ in ppn]
    if keys == [f"comm_avg_ppn<{n}", "comm_avg_ppn=any"]:  # one node
        return [(n, node["comm_avg_ppn=any"])]
    return [(f"{n}, {k.removeprefix('comm_avg_ppn<=')} per node", v) for k, v in ppn
            if isinstance(v, dict) and k.startswith("comm_avg_ppn<=")]


def _bands_of(n: int, node: dict, kind: str) -> list[tuple[int, str]]:
    """The size bands of one rank-count (and node-count) band: (from bytes, leaf)."""
    if not any(re.match(r"(avg|total)_msg_size", str(k)) for k in node):  # barrier: one leaf
        return [(0, _mpich_leaf(node, kind))]
    out, low = [], 0
    for sk, leaf in node.items():
        bound = re.search(r"(<=?)(\d+)$", sk)
        out.append((low, _mpich_leaf(leaf, kind)))
        if bound:
            high = int(bound.group(2)) + (1 if bound.group(1) == "<=" else 0)
            low = high // n if sk.startswith("total_msg_size") else high
    return out


def _mpich_leaf(node: dict, kind: str = "algorithm") -> str:
    """The forced algorithm (or composition) of a band, or DEFAULT where the band holds the
    original subtree."""
    if "is_commutative=yes" in node and len(node) == 2:
        node = node["is_commutative=yes"]
    algs = [k for k in node if k.startswith(f"{kind}=")] if isinstance(node, dict) else []
    if len(node) != 1 or not algs:
        return DEFAULT
    params = ",".join(str(k) for k in node[algs[0]])
    return algs[0].removeprefix(f"{kind}=") + (f" ({params})" if params else "")
