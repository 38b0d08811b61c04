"""The files of the layers above the algorithms, written from tune's choices across nodes and read
back: MPICH's CH4 composition tree (`MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE`, the library's
whole tree with the tuned collectives' bands by communicator size and ranks per node) and Open
MPI's coll/han rules file (`coll_han_dynamic_rules_filename`: per collective, topological level,
configuration size and message size the component han calls; coll_han_dynamic_file.h).

A band whose choice is a layer's (`Band.layer`) goes into that layer's file; the algorithm layer's
file keeps the library's algorithm there (`tunefile.algorithms_only`)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from mpiscope.analysis.policy import ANALYSIS
from mpiscope.analysis.tunefile import HAN_HEADER, MAX_TUNING_BYTES, MPIR_ROOTS, OMPI_IDS, Band, Clash, Tuning, \
    clashes, mpich_tree, node_roots, one_band, read, roots_key
from mpiscope.mpi.collectives import DEFAULT
from mpiscope.mpi.layers import COMPOSITION, HAN, HAN_LEVELS
from mpiscope.util import bounded
from mpiscope.util.errors import UsageError

# The size a han level's configuration counts: ranks on a node, nodes, ranks of the communicator.
HAN_CONFIGURATION = {"intra_node": "ranks per node", "inter_node": "nodes", "global_communicator": "ranks"}


def layer_changes(t: Tuning, layer: str) -> bool:
    return any(b.layer == layer and b.algorithm != DEFAULT for by in t.rules.values() for bs in by.values()
               for b in bs)


def ch4_tree(t: Tuning, default_ch4: dict) -> dict:
    """MPICH's CH4 tree with the compositions chosen (`composition=MPIDI_<Coll>_intra_composition_x`)."""
    return mpich_tree(t, default_ch4, COMPOSITION, "composition")


def han_configuration(t: Tuning, level: str, n: int) -> int | None:
    """The configuration size of a han level for `n` ranks on the tune's nodes (None: uneven)."""
    ppn = t.per_node(n)
    return {"intra_node": ppn, "inter_node": t.nodes if ppn else None, "global_communicator": n}[level]


def han_rules(t: Tuning) -> str:
    """coll/han's rules file: per collective with a han choice, each level it changes; per level
    the configuration sizes 1 (han's own default component), the tuned ones (the bands: the
    component chosen where it changes, the default elsewhere) and the next of each (the default
    again): han takes the largest configuration size not above the communicator's, so every other
    configuration keeps the default. Rank counts whose level has the same configuration size (the
    inter-node level counts nodes: every rank count on the tune's nodes) share its band
    (`tunefile.one_band`: theirs where they chose alike, refused where not). Message sizes are the
    engine's (han's own count x type size)."""
    lines = [HAN_HEADER + " (mpiscope tune): collective, levels; per level (0 intra-node: configuration = ranks "
             "per node, 1 inter-node: = nodes, 2 global: = ranks) its configurations, each with "
             "'message-size component' rules"]
    blocks = []
    for coll, by_ranks in t.rules.items():
        levels = []
        for k, level in enumerate(HAN_LEVELS):
            default = t.layer_defaults.get(f"{coll} {level}", "han" if level == "global_communicator" else "tuned")
            configs: dict[int, list[str]] = {1: [f"0 {default}"]}
            for size, by_n in sorted(han_configurations(t, by_ranks, level).items()):
                bs = one_band(coll, by_n, HAN_RULES, han_key(level, size))
                if all(b.algorithm == DEFAULT for b in bs):
                    continue
                configs[size] = [f"{b.low} {b.value.split('=', 1)[1] if b.algorithm != DEFAULT else default}"
                                 for b in bs]
                configs.setdefault(size + 1, [f"0 {default}"])
            if len(configs) > 1:
                levels.append([str(k), str(len(configs))] + [x for size in sorted(configs)
                                                              for x in (str(size), str(len(configs[size])),
                                                                        *configs[size])])
        if levels:
            blocks.append([coll, str(len(levels))] + [x for lv in levels for x in lv])
    return "\n".join(lines + [str(len(blocks))] + [x for b in blocks for x in b]) + "\n"


HAN_RULES = "coll/han rules"  # the file of a clash at a level's configuration (`han_key`)


def han_key(level: str, size: int) -> str:
    """A level's configuration as `--show` names it ("inter_node 2 (nodes)")."""
    return f"{level} {size} ({HAN_CONFIGURATION[level]})"


def han_configurations(t: Tuning, by_ranks: dict[int, list[Band]], level: str) -> dict[int, dict[int, list[Band]]]:
    """Per configuration size of han's `level` the rank counts that have it, each with the bands
    of that level: its choices of the level, the default elsewhere (rank counts that do not
    divide evenly over the nodes have no configuration size there)."""
    out: dict[int, dict[int, list[Band]]] = {}
    for n, bs in sorted(by_ranks.items()):
        size = han_configuration(t, level, n)
        if size is not None:
            mine = [b if b.layer == HAN and b.value.startswith(level + "=") and b.algorithm != DEFAULT
                    else Band(b.low, DEFAULT) for b in bs]
            out.setdefault(size, {})[n] = [b for k, b in enumerate(mine)
                                           if k == 0 or not (b.algorithm == DEFAULT == mine[k - 1].algorithm)]
    return out


def clashes_of(t: Tuning) -> list[Clash]:
    """Where the files of `t` would share a band between rank counts that chose differently (the
    writers refuse those): MPICH's MPIR tree at one rank a node, coll/han's levels by
    configuration size."""
    out: list[Clash] = []
    for coll, by_ranks in t.rules.items():
        if t.library == "mpich":
            out += clashes(coll, node_roots(t, by_ranks), MPIR_ROOTS, roots_key(t.nodes))
        elif layer_changes(t, HAN):
            for level in HAN_LEVELS:
                for size, by_n in han_configurations(t, by_ranks, level).items():
                    out += clashes(coll, by_n, HAN_RULES, han_key(level, size))
    return out


def layer_file(t: Tuning, ch4_default: dict | None) -> tuple[str, str] | None:
    """The layer's file of `t` when it changes a layer's choice: (text, format)."""
    if t.library == "mpich" and layer_changes(t, COMPOSITION):
        if ch4_default is None:
            raise UsageError("an MPICH CH4 tuning file carries the library's whole CH4 tree: it was not read")
        return json.dumps(ch4_tree(t, ch4_default)) + "\n", "MPICH CH4 composition tree (JSON)"
    if t.library == "openmpi" and layer_changes(t, HAN):
        return han_rules(t), "Open MPI coll/han dynamic rules"
    return None


def layer_environment(library: str, path: Path) -> dict[str, str]:
    """The variables that make the library read a layer's file."""
    if library == "openmpi":
        return {"OMPI_MCA_coll_han_use_dynamic_file_rules": "1", "OMPI_MCA_coll_han_dynamic_rules_filename": str(path)}
    return {"MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE": str(path)}


def node_keys(library: str) -> dict[str, str]:
    """Per file of `library` the key its format has for the node count ("" where it has none)."""
    if library == "mpich":
        return {"MPIR tree": "comm_avg_ppn", "CH4 tree": "comm_avg_ppn"}
    return {"coll_tuned rules": "", "coll/han rules": "inter_node level configuration size"}


def read_file(path: Path) -> list[tuple[str, int | str, int, str]]:
    """Any file tune writes, as rows (`tunefile.read`'s; coll/han's rules by level and configuration)."""
    try:
        head = bounded.read_text(path, MAX_TUNING_BYTES, "a tuning file")
    except (OSError, ValueError) as e:
        raise UsageError(f"cannot read {path}: {bounded.why(e)}: give a tuning file tune wrote") from e
    return read_han(head, path) if head.startswith(HAN_HEADER) else read(path)


def read_han(text: str, path: Path) -> list[tuple[str, int | str, int, str]]:
    """A han rules file as rows (collective, "level configuration", from bytes, component)."""
    tokens = [w for ln in text.splitlines() for w in ln.split("#", 1)[0].split()]
    pos = 0

    def word(what: str) -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise UsageError(f"{path}: the file ends where {what} should be: not a complete coll/han rules file")
        pos += 1
        return tokens[pos - 1]

    def number(what: str) -> int:
        w = word(what)
        try:
            return int(w)
        except ValueError:
            raise UsageError(f"{path}: '{bounded.excerpt(w)}' is no {what}: not a coll/han rules file") from None
    names = {str(v): k for k, v in OMPI_IDS.items()}
    rows: list[tuple[str, int | str, int, str]] = []
    for _ in range(number("the number of collectives")):
        coll = word("a collective")
        coll = names.get(coll, coll)
        for _ in range(number("a number of levels")):
            level = word("a topological level")
            level = HAN_LEVELS[int(level)] if level.isdigit() and int(level) < len(HAN_LEVELS) else level
            for _ in range(number("a number of configurations")):
                size = number("a configuration size")
                for _ in range(number("a number of message size rules")):
                    low = number("a message size")
                    rows.append((coll, f"{level} {size} ({HAN_CONFIGURATION.get(level, '?')})", low,
                                 word("a component")))
    return rows


# -- the proof that a han level reaches the timed calls (docs/tune.md, "Liveness") ----------------

def han_forcing_rules(forced: dict[str, dict[str, str]]) -> str:
    """A coll/han rules file forcing, per collective, each level named to its component (by
    name) at every configuration size (the one configuration, 1) and every message size (from 0)."""
    lines = [HAN_HEADER + " (mpiscope tune's liveness check): each level forced at every configuration and size",
             str(len(forced))]
    for coll, levels in forced.items():
        lines.append(f"{coll} {len(levels)}")
        lines += [f"{HAN_LEVELS.index(level)} 1 1 1 0 {component}" for level, component in levels.items()]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class HanLookup:
    """One rule coll/han found in its rules file for a call (`coll_han_verbose` 80, Open MPI 5.0's
    coll_han_dynamic.c `get_dynamic_rule`): the collective and level it searched, its configuration
    size and message size, and the component the rule names."""
    collective: str
    level: str
    configuration: int
    size: int
    component: str
    line: str


_FOUND = re.compile(r"searched a rule for collective \d+ \((\w+)\) on topological level \d+ \((\w+)\) for a (\d+) "
                    r"configuration size for a (\d+) sized message\. Found a rule .*: component \d+ \((\w+)\)", re.I)


def _han_said(verbose: str, pattern: re.Pattern) -> list[tuple[tuple[str, ...], str]]:
    """Each line of coll/han's verbose output that `pattern` matches: its groups, and the line
    from han's own words on (the rank's prefix cut)."""
    out = []
    for line in verbose.splitlines():
        m = pattern.search(line)
        if m:
            out.append((m.groups(), line[line.find("coll:han:"):].strip() if "coll:han:" in line else line.strip()))
    return out


def han_lookups(verbose: str) -> list[HanLookup]:
    """The rules coll/han found, from its verbose output (every rank prints its own)."""
    return [HanLookup(coll, level.lower(), int(configuration), int(size), component, line)
            for (coll, level, configuration, size, component), line in _han_said(verbose, _FOUND)]


@dataclass(frozen=True)
class HanFallback:
    """A call for which coll/han dropped the component its rule named and fell back to another
    (Open MPI 5.0's coll_han_dynamic.c, each `mca_coll_han_<coll>_intra_dynamic`: it prints the
    "Found a rule" line before it checks the module): `why` MISSING, no module of that component
    on the level's sub-communicator, or UNABLE, its module cannot handle this collective."""
    collective: str
    level: str
    why: str
    line: str


MISSING, UNABLE = "missing", "unable"
# the two messages of each `mca_coll_han_<coll>_intra_dynamic` on a fallback: "HAN did not find any
# valid module for collective ..." and "HAN found valid module for collective ... but this module
# cannot handle this collective"
_FALLBACK = re.compile(r"(did not find any valid|found valid) module for collective \d+ \((\w+)\) with "
                       r"topological level \d+ \((\w+)\)", re.I)


def han_fallbacks(verbose: str) -> list[HanFallback]:
    """The calls coll/han sent to another component than its rule named, from its verbose output."""
    return [HanFallback(coll, level.lower(), MISSING if found.lower().startswith("did") else UNABLE, line)
            for (found, coll, level), line in _han_said(verbose, _FALLBACK)]


def han_rules_read(verbose: str) -> bool:
    """Whether coll/han said it read its rules file."""
    return re.search(r"init_dynamic_rules read \d+ rules from", verbose) is not None


@dataclass(frozen=True)
class LevelProof:
    """What coll/han's verbose output proves of one level (`han_level_proof`): `live`, and the
    case (`UNREAD` the rules file was not read, `FALLBACK` han dropped the forced component there,
    `SETUP` the timed size is within han's and the engine's own calls, `TIMED` a rule naming the
    forced component for the timed calls, `SEGMENTS` such rules only for the segments han cuts the
    timed message in, `OTHER` the timed calls' rules named another component, `BELOW` lookups of
    the level only at han's and the engine's own sizes, `ABSENT` none), with the lookups (or
    fallbacks) that say so; report.tune words it."""
    live: bool
    case: str
    collective: str
    level: str
    component: str
    timed: int
    lookups: tuple[HanLookup, ...] = ()
    fallbacks: tuple[HanFallback, ...] = ()


UNREAD, FALLBACK, SETUP, TIMED, SEGMENTS, OTHER, BELOW, ABSENT = "unread", "fallback", "setup", "timed", \
    "segments", "other", "below", "absent"


def han_level_proof(lookups: list[HanLookup], collective: str, level: str, component: str, timed: int,
                    read: bool, fallbacks: list[HanFallback] = ()) -> LevelProof:
    """Whether the timed calls of `collective` (at `timed` bytes, the launch's only size) consult
    han's `level`: the library looked that level up for the timed calls and its rule named the
    forced `component`, and han did not then fall back from it (`fallbacks`: the forcing file
    names that component at every size, so a fallback of the level is one of the timed calls').
    han and the engine make their own calls of the same collectives (set-up, the engine's
    bookkeeping) at small sizes, up to `ANALYSIS.han_setup_bytes`: a lookup above that is the
    timed calls', of the timed size or of the segments han pipelines a large message in (its
    bcast, reduce and allreduce cut it in e.g. 64 KiB pieces); one at or below it is theirs, and a
    timed size within theirs proves nothing."""
    def proof(live: bool, case: str, found: list[HanLookup] = (), fell: list[HanFallback] = ()) -> LevelProof:
        return LevelProof(live, case, collective, level, component, timed, tuple(found), tuple(fell))
    if not read:
        return proof(False, UNREAD)
    fell = [f for f in fallbacks if f.collective == collective and f.level == level]
    if fell:
        return proof(False, FALLBACK, fell=fell)
    if timed <= ANALYSIS.han_setup_bytes:
        return proof(False, SETUP)
    mine = [x for x in lookups if x.collective == collective and x.level == level]
    timed_calls = [x for x in mine if x.size > ANALYSIS.han_setup_bytes and x.component == component]
    if any(x.size >= timed for x in timed_calls):
        return proof(True, TIMED, [x for x in timed_calls if x.size >= timed])
    if timed_calls:
        return proof(True, SEGMENTS, timed_calls)
    other = [x for x in mine if x.size > ANALYSIS.han_setup_bytes]
    if other:  # the timed calls' lookups, whose rule named another component than the forced one
        return proof(False, OTHER, other)
    return proof(False, BELOW, mine) if mine else proof(False, ABSENT)
