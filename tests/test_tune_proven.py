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
