"""The liveness check's bookkeeping: each knob is admitted to the race by its own variable's
check. coll/han's global level proven live says nothing about its intra-node level: that level's
candidates are not raced, and tune names them "not proven live" with the reason."""
from __future__ import annotations

from mpiscope.execute.liveness import ALGORITHM, LAYER, Proven, variable_of
from mpiscope.mpi.collectives import DEFAULT, Algorithm
from mpiscope.mpi.layers import HAN

GLOBAL = "OMPI_MCA_coll_han_allreduce_dynamic_global_communicator_module"
INTRA = "OMPI_MCA_coll_han_allreduce_dynamic_intra_node_module"
TUNED = "OMPI_MCA_coll_tuned_allreduce_algorithm"
RACING = {"allreduce": [Algorithm(DEFAULT),
                        Algorithm("han:global_communicator=tuned", {GLOBAL: "3"}, "global_communicator=tuned",
                                  layer=HAN),
                        Algorithm("han:intra_node=basic", {INTRA: "1"}, "intra_node=basic", layer=HAN),
                        Algorithm("han:intra_node=sm", {INTRA: "4"}, "intra_node=sm", layer=HAN),
                        Algorithm("ring", {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", TUNED: "4"}, "4")]}


def row(variable: str, knob: str, live: bool) -> dict:
    return {"collective": "allreduce", "ranks": 4, "knob": knob, "variable": variable, "live": live,
            "evidence": f"{variable}=poor: x{3.0 if live else 1.0}"}


def test_each_candidate_is_raced_by_its_own_variable_s_proof():
    algs = {a.name: a for a in RACING["allreduce"]}
    assert variable_of(algs["han:intra_node=basic"]) == INTRA and variable_of(algs["ring"]) == TUNED
    proven = Proven.of([row(GLOBAL, LAYER, True), row(TUNED, ALGORITHM, False)], checked=True)
    admitted = {name for name, a in algs.items() if proven.admits("allreduce", 4, a)}
    assert admitted == {DEFAULT, "han:global_communicator=tuned"}
    assert not proven.admits("allreduce", 2, algs["han:global_communicator=tuned"])  # proven at 4 ranks only
    unproven = {r["variable"]: r for r in proven.unproven(RACING, [4])}
    assert set(unproven) == {INTRA, TUNED}
    intra = unproven[INTRA]
    assert intra["candidates"] == ["han:intra_node=basic", "han:intra_node=sm"]
    assert "no check of its own" in intra["reason"] and f"proven live here: {GLOBAL}" in intra["reason"]
    assert "its own check did not prove it" in unproven[TUNED]["reason"] and "x1.0" in unproven[TUNED]["reason"]
    # the check skipped (--live-launches 0): every candidate raced, none listed
    skipped = Proven.of([], checked=False)
    assert all(skipped.admits("allreduce", 4, a) for a in algs.values()) and skipped.unproven(RACING, [4]) == []


def test_the_race_leaves_out_a_level_its_global_level_s_proof_does_not_cover():
    """The race's own round: with the global level live and the intra level unproven, round 0
    runs the global level's candidate only; the output names the intra level's candidates."""
    from mpiscope.execute.tune import TUNE, Tune
    from mpiscope.report.tune import layer_lines
    t = Tune.__new__(Tune)
    t.d, t.state, t._sizes = TUNE, {"failed": {}}, {("allreduce", 4): [65536]}
    t.proven = Proven.of([row(GLOBAL, LAYER, True), row(TUNED, ALGORITHM, True)], checked=True)
    runners = [a.name for a, _ in t._round("allreduce", RACING["allreduce"], 4, {}, 0)]
    assert set(runners) == {DEFAULT, "han:global_communicator=tuned", "ring"}, runners  # no launch of it yet
    assert t.races("allreduce", 4, [RACING["allreduce"][0], *RACING["allreduce"][2:4]]) is False
    lines = layer_lines({"not_proven_live": t.proven.unproven(RACING, [4])})
    (line,) = [ln for ln in lines if INTRA in ln]
    assert "not proven live, not raced (han:intra_node=basic, han:intra_node=sm)" in line


# Captured from Open MPI 5.0.11 on two namespace hosts, 2 ranks each, by tune's level check
# (coll_han_verbose=80, a rules file forcing basic at gather's intra-node and allreduce's
# inter-node level): the allreduce launch's and the gather launch's (both timed at 64 KiB) own lines,
# kept verbatim as data but for the rules file's path, cut to the runs directory. The 624-byte
# gather is the engine's own.
VERBOSE = """\
[ms4f43h0:14746] coll:han:mca_coll_han_init_dynamic_rules read 2 rules from runs-2/tune-20261202-154222/han-levels.conf
[ms4f43h1:14764] coll:han:get_dynamic_rule HAN searched a rule for collective 2 (allreduce) on topological level 1 (inter_node) for a 2 configuration size for a 12 sized message. Found a rule for collective 2 (allreduce) on topological level 1 (inter_node) for a 1 configuration size for a 0 sized message : component 1 (basic)
[ms4f43h0:14786] coll:han:get_dynamic_rule HAN searched a rule for collective 9 (gather) on topological level 0 (intra_node) for a 2 configuration size for a 624 sized message. Found a rule for collective 9 (gather) on topological level 0 (intra_node) for a 1 configuration size for a 0 sized message : component 1 (basic)
[ms4f43h0:14786] coll:han:get_dynamic_rule HAN searched a rule for collective 9 (gather) on topological level 0 (intra_node) for a 2 configuration size for a 65536 sized message. Found a rule for collective 9 (gather) on topological level 0 (intra_node) for a 1 configuration size for a 0 sized message : component 1 (basic)
[ms4f43h0:14746] coll:han:get_dynamic_rule HAN searched for topologic level 2 (global_communicator) rule for collective 2 (allreduce) but did not find any rule
"""


def test_han_s_verbose_output_proves_a_level_only_for_the_timed_calls():
    """The rule han found is parsed from its own words; a level is proven where the rule names the
    forced component for a message of the timed size or more (gather's intra-node level, looked up
    at 64 KiB for the timed 64 KiB gather), not where han looked it up only for its own small calls
    (allreduce's inter-node level at 12 bytes: han's set-up), nor where it never looked."""
    from mpiscope.analysis.tunelayers import han_level_proof as proof, han_lookups, han_rules_read
    from mpiscope.report.tune import level_proof_text

    def han_level_proof(*args) -> tuple[bool, str]:  # the proof and its words, as tune keeps them
        p = proof(*args)
        return p.live, level_proof_text(p)
    found = han_lookups(VERBOSE)
    assert [(x.collective, x.level, x.configuration, x.size, x.component) for x in found] == \
        [("allreduce", "inter_node", 2, 12, "basic"), ("gather", "intra_node", 2, 624, "basic"),
         ("gather", "intra_node", 2, 65536, "basic")]
    assert found[2].line.startswith("coll:han:get_dynamic_rule HAN searched a rule for collective 9 (gather)")
    assert han_rules_read(VERBOSE) and not han_rules_read(VERBOSE.split("\n", 1)[1])
    live, why = han_level_proof(found, "gather", "intra_node", "basic", 65536, True)
    assert live and "1 lookup(s) of gather at its intra_node level for 65536-byte messages" in why
    assert "for a 65536 sized message. Found a rule" in why and "component 1 (basic)" in why  # han's line quoted
    assert not han_level_proof(found, "gather", "intra_node", "sm", 65536, True)[0]  # another component: not forced
    live, why = han_level_proof(found, "allreduce", "inter_node", "basic", 65536, True)
    assert not live and "only for 12-byte messages" in why and "do not consult this level" in why
    live, why = han_level_proof(found, "allreduce", "intra_node", "basic", 65536, True)
    assert not live and "names no lookup of allreduce at its intra_node level" in why
    assert not han_level_proof(found, "gather", "intra_node", "basic", 65536, False)[0]  # the file not read
    live, why = han_level_proof(found, "gather", "intra_node", "basic", 512, True)  # within han's own sizes
    assert not live and "not told from theirs" in why


def test_the_level_check_forces_each_level_s_first_candidate():
    """The rules file the level check launches with forces each han sub-level raced to its first
    candidate's component, in the format han reads back (`tunelayers.read_han`)."""
    from pathlib import Path
    from mpiscope.analysis.tunelayers import han_forcing_rules, read_han
    from mpiscope.execute.liveness import level_candidates
    inter = "OMPI_MCA_coll_han_bcast_dynamic_inter_node_module"
    racing = {**RACING, "bcast": [Algorithm(DEFAULT), Algorithm("han:inter_node=sm", {inter: "4"}, "inter_node=sm",
                                                                layer=HAN)]}
    found = level_candidates(racing)
    assert {k: a.name for k, a in found.items()} == {("allreduce", "intra_node"): "han:intra_node=basic",
                                                      ("bcast", "inter_node"): "han:inter_node=sm"}
    text = han_forcing_rules({"allreduce": {"intra_node": "basic"}, "bcast": {"inter_node": "sm"}})
    assert read_han(text, Path("han.conf")) == [("allreduce", "intra_node 1 (ranks per node)", 0, "basic"),
                                                 ("bcast", "inter_node 1 (nodes)", 0, "sm")]


# Open MPI 5.0's coll_han_dynamic.c prints these after its "Found a rule" line when the rule's
# component has no module on the level's sub-communicator, or has one that cannot run the
# collective (mca_coll_han_<coll>_intra_dynamic); han then falls back to another component. The
# text is the format string's, filled in as han fills it.
FALLBACK = """\
[h0:101] coll:han:get_dynamic_rule HAN searched a rule for collective 7 (bcast) on topological level 0 (intra_node) for a 2 configuration size for a 1048576 sized message. Found a rule for collective 7 (bcast) on topological level 0 (intra_node) for a 1 configuration size for a 0 sized message : component 4 (sm)
[h0:101] coll:han:mca_coll_han_bcast_intra_dynamic HAN did not find any valid module for collective 7 (bcast) with topological level 0 (intra_node) on communicator (3/MPI COMM 3 SPLIT_TYPE FROM 0). Please check dynamic file/mca parameters
[h0:101] coll:han:get_dynamic_rule HAN searched a rule for collective 11 (reduce) on topological level 1 (inter_node) for a 2 configuration size for a 1048576 sized message. Found a rule for collective 11 (reduce) on topological level 1 (inter_node) for a 1 configuration size for a 0 sized message : component 2 (adapt)
[h0:101] coll:han:mca_coll_han_reduce_intra_dynamic HAN found valid module for collective 11 (reduce) with topological level 1 (inter_node) on communicator (4/MPI COMM 4 SPLIT FROM 0) but this module cannot handle this collective. Please check dynamic file/mca parameters
"""


def test_a_level_han_falls_back_from_is_not_live():
    """han prints the rule it found before it checks the component's module: where it then says it
    fell back to another component, the forced component does not serve the level."""
    from mpiscope.analysis.tunelayers import MISSING, UNABLE, han_fallbacks, han_level_proof, han_lookups
    from mpiscope.report.tune import level_proof_text
    fell = han_fallbacks(FALLBACK)
    assert [(f.collective, f.level, f.why) for f in fell] == [("bcast", "intra_node", MISSING),
                                                            ("reduce", "inter_node", UNABLE)]
    assert fell[0].line.startswith("coll:han:mca_coll_han_bcast_intra_dynamic HAN did not find")
    found = han_lookups(FALLBACK)
    bcast = han_level_proof(found, "bcast", "intra_node", "sm", 1 << 20, True, fell)
    assert not bcast.live and "found no module of sm on the level's sub-communicator" in level_proof_text(bcast)
    assert han_level_proof(found, "bcast", "intra_node", "sm", 1 << 20, True).live  # the rule alone reads live
    reduce = han_level_proof(found, "reduce", "inter_node", "adapt", 1 << 20, True, fell)
    assert not reduce.live and "found adapt's module unable to run this collective" in level_proof_text(reduce)
    assert "fell back to another component" in level_proof_text(reduce)
    assert not han_fallbacks(VERBOSE)  # the gather and allreduce lines above name no fallback


def test_a_segmented_collective_s_level_is_proven_by_its_segments():
    """han pipelines a large bcast in segments: the level is looked up at the segment's size, above
    han's and the engine's own sizes, not at the timed one; those lookups are the timed calls'."""
    from mpiscope.analysis.policy import ANALYSIS
    from mpiscope.analysis.tunelayers import SEGMENTS, han_level_proof, han_lookups
    from mpiscope.report.tune import level_proof_text
    line = ("[h0:7] coll:han:get_dynamic_rule HAN searched a rule for collective 7 (bcast) on topological level 1 "
            "(inter_node) for a 2 configuration size for a {} sized message. Found a rule for collective 7 (bcast) on "
            "topological level 1 (inter_node) for a 1 configuration size for a 0 sized message : component 1 (basic)")
    found = han_lookups("\n".join(line.format(s) for s in (8, 65536, 65536)))
    p = han_level_proof(found, "bcast", "inter_node", "basic", 1 << 20, True)
    assert p.live and p.case == SEGMENTS and [x.size for x in p.lookups] == [65536, 65536]
    why = level_proof_text(p)
    assert "the segments han cuts the timed 1048576 bytes in" in why and f"up to {ANALYSIS.han_setup_bytes}" in why
    other = han_level_proof(found, "bcast", "inter_node", "adapt", 1 << 20, True)  # the rule named basic
    assert not other.live and "names basic, not adapt, for the timed calls" in level_proof_text(other)
    small = han_level_proof(found[:1], "bcast", "inter_node", "basic", 1 << 20, True)  # han's own 8 bytes only
    assert not small.live and "only for 8-byte messages" in level_proof_text(small)
