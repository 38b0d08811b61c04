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
