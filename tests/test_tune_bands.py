"""The rank-count and node-count bands of tune's files, and the layers' own files: MPICH's trees
hold a band per communicator size and ranks per node (`comm_avg_ppn`, their only node key), its
CH4 tree the compositions; Open MPI's coll/han file a configuration per level (ranks per node,
nodes, ranks). Written, read back, and read by the library (a band forcing an algorithm MPICH
cannot use fails the run where the band is reached, and only there)."""
from __future__ import annotations

import json

import pytest

from mpiscope.analysis.tunefile import Band, Tuning, render
from mpiscope.analysis.tunelayers import han_rules, layer_file, node_keys, read_file as read
from mpiscope.mpi.collectives import mpich_default_tree, mpivars, libmpi_strings
from mpiscope.mpi.layers import COMPOSITION, HAN, Serving, layer_algorithms, mpich_serving, with_han_knobs

RING = Band(725, "ring", "MPIR_Allreduce_intra_ring")
BETA = Band(725, "composition:2", "MPIDI_Allreduce_intra_composition_beta", layer=COMPOSITION)


def test_mpich_compositions_are_choices_across_nodes_only(embedded_mpi):
    listed, strings = mpivars(embedded_mpi), libmpi_strings(embedded_mpi)
    across = mpich_serving(listed, "allreduce", nodes=2)
    algs, left = layer_algorithms(across, strings)
    assert [a.name for a in algs] == ["composition:1", "composition:2", "composition:3", "composition:4"], left
    beta = algs[1]
    assert beta.env["MPIR_CVAR_ALLREDUCE_COMPOSITION"] == "2" and beta.layer == COMPOSITION
    assert beta.json_name == "MPIDI_Allreduce_intra_composition_beta"
    (knob,) = [k for k in across.knobs if k.layer == COMPOSITION]
    assert knob.poor == "2" and "NM only" in knob.labels[2]  # the liveness check's poor choice: the netmod alone
    assert layer_algorithms(mpich_serving(listed, "allreduce"), strings) == ([], {})  # one node: no composition


def test_mpich_tree_bands_by_ranks_and_ranks_per_node(embedded_mpi, tmp_path):
    """One node at 2 ranks: communicators of 2 ranks on more nodes keep the library's choice; two
    nodes at 4 ranks (2 a node): the band at 2 per node, and the inter-node step's communicator
    (2 ranks, 1 a node), which the forced MPIR algorithm also ran on."""
    tree = mpich_default_tree(embedded_mpi)
    one = json.loads(render(Tuning("mpich", "5.0.2", {"allreduce": {2: [Band(0, "default"), RING]}}), tree)[0])
    at = one["collective=allreduce"]["comm_type=intra"]["comm_size<=2"]
    assert list(at) == ["comm_avg_ppn<2", "comm_avg_ppn=any"]
    assert at["comm_avg_ppn<2"] == tree["collective=allreduce"]["comm_type=intra"]
    path = tmp_path / "one.json"
    path.write_text(json.dumps(one))
    assert read(path) == [("allreduce", 2, 0, "default"), ("allreduce", 2, 725, "MPIR_Allreduce_intra_ring")]
    two = Tuning("mpich", "5.0.2", {"allreduce": {4: [Band(0, "default"), BETA, Band(46341, "ring",
                                                                                    "MPIR_Allreduce_intra_ring")]}},
                 nodes=2)
    path.write_text(render(two, tree)[0])
    intra = json.loads(path.read_text())["collective=allreduce"]["comm_type=intra"]
    assert list(intra) == ["comm_size<2", "comm_size<=2", "comm_size<4", "comm_size<=4", "comm_size=any"]
    assert list(intra["comm_size<=4"]) == ["comm_avg_ppn<2", "comm_avg_ppn<=2", "comm_avg_ppn=any"]
    assert list(intra["comm_size<=2"]) == ["comm_avg_ppn<1", "comm_avg_ppn<=1", "comm_avg_ppn=any"]
    # the composition's band keeps MPIR's choice in the MPIR tree
    assert read(path) == [(c, w, low, alg) for w in ("2, 1 per node", "4, 2 per node") for c, low, alg in
                          (("allreduce", 0, "default"), ("allreduce", 46341, "MPIR_Allreduce_intra_ring"))]
    text, _ = layer_file(two, mpich_default_tree(embedded_mpi, COMPOSITION))
    ch4 = tmp_path / "tuning-ch4.json"
    ch4.write_text(text)
    assert list(json.loads(text)) == list(mpich_default_tree(embedded_mpi, COMPOSITION))  # the whole CH4 tree
    assert read(ch4) == [("allreduce", "4, 2 per node", 0, "default"),
                         ("allreduce", "4, 2 per node", 725, "MPIDI_Allreduce_intra_composition_beta"),
                         ("allreduce", "4, 2 per node", 46341, "default")]
    assert set(node_keys("mpich").values()) == {"comm_avg_ppn"} and node_keys("openmpi")["coll_tuned rules"] == ""


def test_han_file_has_a_configuration_per_level(tmp_path):
    """coll/han's levels count ranks per node, nodes and ranks: a choice at the inter-node level of
    4 ranks on 2 nodes is a configuration of 2 (nodes), one at the global level of 4 (ranks); the
    configurations around them keep han's defaults; tuned's file keeps its built-in rules there."""
    t = Tuning("openmpi", "5.0.11", {"allreduce": {4: [
        Band(0, "default", "0"), Band(725, "han:inter_node=basic", "inter_node=basic", layer=HAN),
        Band(46341, "han:global_communicator=tuned", "global_communicator=tuned", layer=HAN)]}}, nodes=2)
    path = tmp_path / "tuning-han.conf"
    path.write_text(han_rules(t))
    rows = read(path)
    assert ("allreduce", "inter_node 2 (nodes)", 725, "basic") in rows
    assert ("allreduce", "inter_node 2 (nodes)", 46341, "tuned") in rows  # the default of that level
    assert ("allreduce", "inter_node 3 (nodes)", 0, "tuned") in rows and ("allreduce", "inter_node 1 (nodes)", 0,
                                                                          "tuned") in rows
    assert ("allreduce", "global_communicator 4 (ranks)", 46341, "tuned") in rows
    assert ("allreduce", "global_communicator 5 (ranks)", 0, "han") in rows
    assert not any(r[1].startswith("intra_node") for r in rows)  # a level without a choice is left to han
    classic = tmp_path / "tuning.conf"
    classic.write_text(render(t)[0])
    assert {alg for _, _, _, alg in read(classic)} == {"default"}


def test_han_choices_come_from_ompi_info(openmpi_prefix):
    from mpiscope.mpi.collectives import ompi_han_parameters
    from mpiscope.mpi.registry import load_registered
    parsable = ompi_han_parameters(load_registered()["openmpi"])
    s = with_han_knobs(Serving("allreduce", "coll/han", "han", "", False), parsable, {"han", "tuned", "basic",
                                                                                      "libnbc"})
    levels = {k.variable.split("_dynamic_")[1]: k for k in s.knobs}
    assert set(levels) == {"intra_node_module", "inter_node_module", "global_communicator_module"}
    glob = levels["global_communicator_module"]
    assert glob.default == "6" and dict(zip(glob.values, glob.labels))["6"] == "han" and glob.poor == "1"
    names = {a.name for a in layer_algorithms(s)[0]}
    assert {"han:global_communicator=tuned", "han:inter_node=basic", "han:intra_node=basic"} <= names
    assert not any("libnbc" in n for n in names)  # nonblocking collectives only: han cannot call it for these
    assert with_han_knobs(Serving("allreduce", "coll/tuned", "tuned", "", True), parsable, {"tuned"}).knobs == ()


@pytest.mark.parametrize("nodes, reached", [(1, True), (2, False)])
def test_mpich_reads_the_node_band(cli, tmp_path, embedded_mpi, nodes, reached):
    """A band forcing an algorithm this MPICH cannot use (ccl, no offload library) with
    `MPIR_CVAR_COLLECTIVE_FALLBACK=error` fails the run where the library reaches the band: at 2
    ranks on one node the one-node band is reached, the two-node band (1 a node) is not."""
    ccl = Band(0, "ccl", "MPIR_Allreduce_intra_ccl")
    path = tmp_path / f"nodes-{nodes}.json"
    path.write_text(render(Tuning("mpich", "5.0.2", {"allreduce": {2: [ccl]}}, nodes=nodes),
                           mpich_default_tree(embedded_mpi))[0])
    r = cli("run", "-b", "allreduce", "-n", "2", "--sizes", "64K", "--launches", "1", "--max-time", "0.05",
            "--no-report", "--no-progress", "--runs-dir", str(tmp_path / "runs"), "--env",
            f"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE={path}", "--env", "MPIR_CVAR_COLLECTIVE_FALLBACK=error",
            timeout=600)
    assert (r.returncode != 0) == reached, (r.stdout[-2000:], r.stderr[-2000:])


def test_the_serving_layer_s_variable_is_checked_live_with_its_poor_choice(embedded_mpi, openmpi_prefix):
    """The liveness check forces each serving layer's poor choice: MPICH's POSIX layer falls back
    to MPIR on a node, its composition runs on the netmod alone across nodes; coll/han hands the
    whole call to basic. A layer that does not serve is not probed."""
    from types import SimpleNamespace
    from mpiscope.execute.liveness import LAYER, probes
    from mpiscope.mpi.collectives import DEFAULT, Algorithm, ompi_han_parameters
    from mpiscope.mpi.registry import load_registered
    listed = mpivars(embedded_mpi)
    racing = {"allreduce": [Algorithm(DEFAULT)]}
    mpich = SimpleNamespace(vendor="mpich")
    for nodes, variable, poor in ((1, "MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM", "mpir"),
                                  (2, "MPIR_CVAR_ALLREDUCE_COMPOSITION", "2 (NM only composition)")):
        (p,) = probes(mpich, racing, {"allreduce": mpich_serving(listed, "allreduce", nodes)})
        assert (p.knob, p.variable, p.poor) == (LAYER, variable, poor)
    forced = mpich_serving(listed, "allreduce", env={"MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM": "mpir"})
    assert probes(mpich, racing, {"allreduce": forced}) == []  # MPIR serves: no layer above it to probe
    han = with_han_knobs(Serving("allreduce", HAN, "han", "", False),
                         ompi_han_parameters(load_registered()["openmpi"]), {"han", "tuned", "basic"})
    ring = Algorithm("ring", {"OMPI_MCA_coll_tuned_allreduce_algorithm": "4"}, "4")
    (alg, p) = probes(SimpleNamespace(vendor="openmpi"), {"allreduce": [Algorithm(DEFAULT), *layer_algorithms(han)[0],
                                                                        ring]}, {"allreduce": han})
    assert (alg.knob, alg.poor) == ("algorithm", "ring")  # the algorithm's probe forces an algorithm, never a han choice
    assert p.env == {"OMPI_MCA_coll_han_allreduce_dynamic_global_communicator_module": "1"} and p.poor == "1 (basic)"


def test_show_reads_a_han_file(cli_offline, tmp_path):
    t = Tuning("openmpi", "5.0.11", {"allreduce": {4: [Band(0, "han:inter_node=basic", "inter_node=basic",
                                                            layer=HAN)]}}, nodes=2)
    path = tmp_path / "tuning-han.conf"
    path.write_text(han_rules(t))
    r = cli_offline("tune", "--show", str(path))
    assert r.returncode == 0, r.stderr
    assert "inter_node 2 (nodes)" in r.stdout and "basic" in r.stdout


def test_reaches_names_the_layer_s_file():
    """Where only a layer's choice changes, `reaches` says the layer's file changes the calls and
    on which check, and that no algorithm band can change what the algorithm variable cannot."""
    from mpiscope.execute.tune import reaches
    t = Tuning("openmpi", "5.0.11", {"allreduce": {4: [Band(0, "han:inter_node=basic", "inter_node=basic",
                                                            layer=HAN)]}}, nodes=2)
    rows = [{"collective": "allreduce", "ranks": 4, "knob": "layer", "live": True, "evidence": "x2",
             "variable": "OMPI_MCA_coll_han_allreduce_dynamic_global_communicator_module"},
            {"collective": "allreduce", "ranks": 4, "knob": "algorithm", "live": False, "evidence": "x1",
             "variable": "OMPI_MCA_coll_tuned_allreduce_algorithm"}]
    text = reaches(t, rows)
    assert "the layer's file changes 1 band(s)" in text and "global_communicator_module" in text
    assert "no algorithm band can change allreduce at 4 ranks (x1)" in text


# -- several rank counts on the same nodes ---------------------------------------------------------

RD = Band(0, "recursive_doubling", "MPIR_Allreduce_intra_recursive_doubling")


def test_mpich_tree_selects_each_rank_count_s_own_choice(embedded_mpi, tmp_path):
    """Two rank counts on one node that chose differently: each has its own `comm_size<=n` band,
    ending in the library's catch-all; read back, each count's band holds its own choice."""
    tree = mpich_default_tree(embedded_mpi)
    t = Tuning("mpich", "5.0.2", {"allreduce": {2: [Band(0, "default"), RING], 4: [RD]}})
    intra = json.loads(render(t, tree)[0])["collective=allreduce"]["comm_type=intra"]
    assert list(intra) == ["comm_size<2", "comm_size<=2", "comm_size<4", "comm_size<=4", "comm_size=any"]
    assert intra["comm_size=any"] == tree["collective=allreduce"]["comm_type=intra"]
    path = tmp_path / "two-counts.json"
    path.write_text(json.dumps({"collective=allreduce": {"comm_type=intra": intra}}))
    assert read(path) == [("allreduce", 2, 0, "default"), ("allreduce", 2, 725, "MPIR_Allreduce_intra_ring"),
                          ("allreduce", 4, 0, "MPIR_Allreduce_intra_recursive_doubling")]


def test_a_band_shared_by_rank_counts_holds_their_choice_or_is_refused(embedded_mpi):
    """On 2 nodes, 2 ranks (one a node) and 4 ranks (the composition's inter-node step, one rank a
    node) share the MPIR tree's `comm_size<=2` band: where they chose alike it holds that choice,
    where not the writer refuses in one line naming both (it never keeps one count's choice)."""
    from mpiscope.analysis.tunelayers import clashes_of
    from mpiscope.util.errors import UsageError
    tree = mpich_default_tree(embedded_mpi)
    alike = Tuning("mpich", "5.0.2", {"allreduce": {2: [RD], 4: [RD]}}, nodes=2)
    intra = json.loads(render(alike, tree)[0])["collective=allreduce"]["comm_type=intra"]
    shared = intra["comm_size<=2"]["comm_avg_ppn<=1"]["avg_msg_size=any"]
    assert shared["is_commutative=yes"] == {"algorithm=MPIR_Allreduce_intra_recursive_doubling": {}}
    assert clashes_of(alike) == []
    ring = [Band(0, "default"), RING]
    for first, second in (([RD], ring), (ring, [RD])):  # either order: no count's choice wins
        differ = Tuning("mpich", "5.0.2", {"allreduce": {2: first, 4: second}}, nodes=2)
        (clash,) = [c for c in clashes_of(differ) if c.low == 725]
        assert clash.ranks == (2, 4) and len(set(clash.choices)) == 2
        with pytest.raises(UsageError) as e:
            render(differ, tree)
        assert "\n" not in str(e.value) and "comm_size<=2" in str(e.value) and "2 and 4 ranks" in str(e.value)


def test_han_levels_select_each_rank_count_s_choice_and_refuse_a_shared_clash(tmp_path):
    """coll/han on 2 nodes at 4 and 8 ranks: the global level (ranks) and the intra-node level
    (ranks per node) give each count its own configuration and choice; the inter-node level counts
    nodes, one configuration for both: their common choice, or refused where they differ."""
    from mpiscope.analysis.tunelayers import clashes_of
    from mpiscope.util.errors import UsageError

    def han(level: str, component: str) -> Band:
        return Band(0, f"han:{level}={component}", f"{level}={component}", layer=HAN)
    t = Tuning("openmpi", "5.0.11", {"allreduce": {4: [han("global_communicator", "tuned")],
                                                   8: [han("intra_node", "sm")]}}, nodes=2)
    path = tmp_path / "tuning-han.conf"
    path.write_text(han_rules(t))
    rows = read(path)
    assert ("allreduce", "global_communicator 4 (ranks)", 0, "tuned") in rows
    assert ("allreduce", "global_communicator 8 (ranks)", 0, "han") not in rows  # 8 keeps han: no configuration
    assert ("allreduce", "global_communicator 5 (ranks)", 0, "han") in rows      # ... from 5 ranks on
    assert ("allreduce", "intra_node 4 (ranks per node)", 0, "sm") in rows
    assert ("allreduce", "intra_node 2 (ranks per node)", 0, "sm") not in rows
    both = Tuning("openmpi", "5.0.11", {"allreduce": {4: [han("inter_node", "basic")],
                                                      8: [han("inter_node", "basic")]}}, nodes=2)
    path.write_text(han_rules(both))
    assert [r for r in read(path) if r[1] == "inter_node 2 (nodes)"] == [("allreduce", "inter_node 2 (nodes)", 0,
                                                                          "basic")]
    for other in ("tuned", None):  # another component, or the level left to han's default
        bands8 = [han("inter_node", other)] if other else [Band(0, "default")]
        clash = Tuning("openmpi", "5.0.11", {"allreduce": {4: [han("inter_node", "basic")], 8: bands8}}, nodes=2)
        (c,) = clashes_of(clash)
        assert c.ranks == (4, 8) and c.key == "inter_node 2 (nodes)"
        with pytest.raises(UsageError) as e:
            han_rules(clash)
        assert "\n" not in str(e.value) and "4 and 8 ranks" in str(e.value)


def test_tune_withdraws_choices_a_shared_band_cannot_hold():
    """Before it writes, tune sends the rank counts' changes in a clashing shared band back to the
    library's default with the reason; changes outside it stay."""
    from mpiscope.analysis.tunefile import bands
    from mpiscope.analysis.tunelayers import clashes_of
    from mpiscope.execute.tune import agree
    names = {"ring": "MPIR_Allreduce_intra_ring", "recursive_doubling": "MPIR_Allreduce_intra_recursive_doubling",
             "default": ""}
    decisions = [{"collective": "allreduce", "ranks": n, "size": size, "chosen": alg}
                 for n, size, alg in ((2, 8, "default"), (2, 65536, "ring"), (4, 8, "default"),
                                      (4, 65536, "recursive_doubling"), (6, 65536, "ring"))]

    def tuning() -> Tuning:
        rules: dict = {}
        for n in sorted({d["ranks"] for d in decisions}):
            mine = [(d["size"], d["chosen"], names[d["chosen"]], {}) for d in decisions if d["ranks"] == n]
            rules[n] = bands(mine)
        return Tuning("mpich", "5.0.2", {"allreduce": rules}, nodes=2)
    assert clashes_of(tuning())
    agree(decisions, tuning, 2)
    assert clashes_of(tuning()) == []
    by = {(d["ranks"], d["size"]): d for d in decisions}
    for n in (2, 4, 6):  # 6 ranks (3 a node) shares the band too: every count on these nodes went back
        assert by[n, 65536]["chosen"] == "default" and "comm_size<=2" in by[n, 65536]["withdrawn"], by[n, 65536]
    assert "tried" not in by[2, 8]
    decisions[:] = [d for d in decisions if d["ranks"] != 6]
    for d in decisions:
        d["chosen"] = d.pop("tried", d["chosen"])
        d.pop("withdrawn", None)
    decisions[3]["chosen"] = "ring"  # 2 and 4 ranks now agree: nothing is withdrawn
    agree(decisions, tuning, 2)
    assert [d["chosen"] for d in decisions] == ["default", "ring", "default", "ring"]
    # a clash in part of a band: 2 and 4 ranks chose ring at 1K and 64K; at 1M 2 ranks ring, 4
    # recursive doubling. Only the sizes from the middle of 64K and 1M up clash: only the 1M
    # changes go back, though the file merged each count's ring sizes into one band
    decisions[:] = [{"collective": "allreduce", "ranks": n, "size": size, "chosen": alg}
                    for n in (2, 4) for size, alg in ((1024, "ring"), (65536, "ring"),
                                                      (1 << 20, "ring" if n == 2 else "recursive_doubling"))]
    (c,) = clashes_of(tuning())
    assert c.low == 262145 and c.high is None
    agree(decisions, tuning, 2)
    assert clashes_of(tuning()) == []
    assert [(d["ranks"], d["size"]) for d in decisions if d["chosen"] == "default"] == [(2, 1 << 20), (4, 1 << 20)]
    assert all("from 262145 B" in d["withdrawn"] for d in decisions if d["chosen"] == "default")
    assert [d["tried"] for d in decisions if "tried" in d] == ["ring", "recursive_doubling"]


def test_a_clash_over_parameters_names_them_and_the_refusal_is_worded_once(embedded_mpi):
    """Two rank counts that chose the same algorithm with other parameters clash by those: the
    reason names each count's value and parameters; the writer's refusal is report/'s words."""
    from mpiscope.analysis.tunefile import BandClash
    from mpiscope.analysis.tunelayers import clashes_of
    from mpiscope.report.tune import clash_reason, clash_refusal
    k2, k4 = (Band(0, "tree", "MPIR_Allreduce_intra_tree", (("k", k),)) for k in ("2", "4"))
    t = Tuning("mpich", "5.0.2", {"allreduce": {2: [k2], 4: [k4]}}, nodes=2)
    (c,) = clashes_of(t)
    why = clash_reason(c, 2)
    assert "tree (MPIR_Allreduce_intra_tree, k=2) at 2, tree (MPIR_Allreduce_intra_tree, k=4) at 4" in why, why
    with pytest.raises(BandClash) as e:
        render(t, mpich_default_tree(embedded_mpi))
    assert e.value.clash == c
    said = clash_refusal(e.value.clash, 2)
    assert said.startswith("allreduce: " + why) and "\n" not in said and "--algorithms" in said


@pytest.mark.parametrize("ranks, ccl_at", [(2, 4), (4, 4), (4, 2)])
def test_mpich_reaches_each_rank_count_s_band(cli, tmp_path, embedded_mpi, ranks, ccl_at):
    """The library reads a tree with a band per rank count (2 and 4 ranks on one node) and reaches
    each count's own: one count gets ring, the other an algorithm this MPICH cannot use (ccl, with
    `MPIR_CVAR_COLLECTIVE_FALLBACK=error`), and a run fails exactly where its rank count's band is
    ccl's; the others read the same file and run."""
    ring, ccl = Band(0, "ring", "MPIR_Allreduce_intra_ring"), Band(0, "ccl", "MPIR_Allreduce_intra_ccl")
    path = tmp_path / "two-counts.json"
    path.write_text(render(Tuning("mpich", "5.0.2", {"allreduce": {n: [ccl if n == ccl_at else ring] for n in (2, 4)}}),
                           mpich_default_tree(embedded_mpi))[0])
    r = cli("run", "-b", "allreduce", "-n", str(ranks), "--sizes", "64K", "--launches", "1", "--max-time", "0.05",
            "--oversubscribe", "--no-report", "--no-progress", "--runs-dir", str(tmp_path / "runs"), "--env",
            f"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE={path}", "--env", "MPIR_CVAR_COLLECTIVE_FALLBACK=error",
            timeout=600)
    assert (r.returncode != 0) == (ranks == ccl_at), (r.stdout[-2000:], r.stderr[-2000:])
