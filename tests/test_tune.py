"""`mpiscope tune` with real runs: MPICH at 2 ranks, Open MPI at 2 and 4 ranks (oversubscribed).
The file tune writes is read by the library: the library refuses a copy that names an algorithm
it does not have (so it reads the file), runs the whole file, and, for Open MPI, a debugger
breakpoint shows the algorithm the file forces being called. Unknown algorithms and files that
do not parse are one line and exit 2; an MPICH file always carries the library's whole tree."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest


# the race and its proof, on every knob the library lists: the liveness check (whether a knob reaches
# the timed calls) is tests/test_tune_layers.py's
TUNE = ["--rounds", "2", "--verify-launches", "2", "--verify-max-launches", "3", "--max-time", "0.05",
        "--live-launches", "0", "--no-progress"]
OMPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def result_of(stdout: str) -> dict:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("tune: /"))
    return json.loads((Path(line.split()[1]) / "tune.json").read_text())


def one_error_line(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpiscope: error: "), r.stderr
    assert "Traceback" not in r.stderr and all(w in lines[0] for w in words), lines


# -- MPICH --------------------------------------------------------------------------------------

def test_mpich_tune_writes_the_whole_tree_and_proves_it(cli, tmp_path, embedded_mpi):
    from mpiscope.mpi.collectives import mpich_default_tree
    from mpiscope.mpi.registry import identify
    from mpiscope.store.runs import Run
    r = cli("tune", "allreduce", "barrier", "-n", "2", "--sizes", "8,64K", *TUNE, "--runs-dir", str(tmp_path),
            timeout=1200)
    assert r.returncode == 0, (r.stdout, r.stderr)
    res = result_of(r.stdout)
    assert res["algorithms"]["allreduce"][0] == "default" and "ring" in res["algorithms"]["allreduce"]
    # MPICH's tree algorithm raced as variants of its parameters (k up to the ranks, two tree types)
    assert {"tree:k=2,tree_type=kary", "tree:k=2,tree_type=knomial_1"} <= set(res["algorithms"]["allreduce"])
    assert {d["size"] for d in res["decisions"] if d["collective"] == "allreduce"} == {8, 65536}
    assert res["cost"]["point_launches"] <= res["cost"]["exhaustive_point_launches"]
    # one launch forces an algorithm of both collectives: fewer launches than one per algorithm
    tags = [p.tag["algorithms"] for p in Run(Path(res["race_run"])).records().points]
    assert any(set(t) == {"allreduce", "barrier"} for t in tags)
    assert res["cost"]["launches"] < res["cost"]["unpacked_launches"]
    # a launch that fails is put on the algorithm MPICH names, or that fails alone, never on one
    # packed with it: these three are refused at 2 ranks on a node (barrier smp crashes MPICH when
    # the POSIX layer serves from the first call, as the race's launches have it)
    assert set(res["failed"]) <= {"allreduce|2|smp", "allreduce|2|reduce_scatter_allgather", "barrier|2|smp"}, \
        res["failed"]
    assert all("not usable" in why or "Segmentation fault" in why for why in res["failed"].values()), res["failed"]
    assert "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE" in r.stdout and "export MPIR_CVAR_" in r.stdout
    written = json.loads(Path(res["file"]).read_text())
    library = mpich_default_tree(identify(embedded_mpi))
    assert list(written) == list(library)  # the whole tree: every collective of the library's own
    assert all(written[k] == library[k] for k in library if k not in ("collective=allreduce", "collective=barrier"))
    if res["changes"]:  # a change is proven: the canary was refused and the side-by-side ran
        assert res["canary"]["refused"] and res["verify"]
        assert all(v["verdict"] in ("faster", "slower", "same", "inconclusive") for v in res["verify"])
    html = (Path(res["file"]).parent / "tune.html").read_text()
    assert "allreduce" in html and "<table" in html and html.count("data:image/svg+xml;base64,") == 2


def test_mpich_reads_a_forced_tree_and_refuses_a_canary(cli, tmp_path, embedded_mpi):
    """A file forcing ring at 2 ranks runs (the library takes the whole tree), as does one forcing
    the tree algorithm with its parameter keys; the canary, the same tree naming an algorithm MPICH
    lacks, stops the job: the library reads the file."""
    from mpiscope.analysis.tunefile import Band, Tuning, render
    from mpiscope.util.errors import UsageError
    from mpiscope.mpi.collectives import mpich_default_tree
    from mpiscope.mpi.registry import identify
    tree = mpich_default_tree(identify(embedded_mpi))
    tree_leaf = (("k", "2"), ("tree_type", "knomial_1"), ("chunk_size", "0"), ("buffer_per_child", "0"))
    for name, value, params, ok in (("forced", "MPIR_Allreduce_intra_ring", (), True),
                                    ("with parameters", "MPIR_Allreduce_intra_tree", tree_leaf, True),
                                    ("canary", "MPIR_No_such_algorithm", (), False)):
        t = Tuning("mpich", "5.0.2", {"allreduce": {2: [Band(0, "ring", value, params)]}})
        path = tmp_path / f"{name.replace(' ', '-')}.json"
        path.write_text(render(t, tree)[0])
        r = cli("run", "-b", "allreduce,bcast", "-n", "2", "--sizes", "8,64K", "--launches", "1", "--max-time", "0.05",
                "--no-report", "--no-progress", "--runs-dir", str(tmp_path / "runs"),
                "--env", f"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE={path}", timeout=600)
        assert (r.returncode == 0) == ok, (name, r.stdout[-2000:], r.stderr[-2000:])
    with pytest.raises(UsageError):  # never a partial tree: without the library's tree there is no file
        render(Tuning("mpich", "5.0.2", {"allreduce": {2: [Band(0, "ring", "MPIR_Allreduce_intra_ring")]}}))


def test_unknown_algorithm_and_bad_files_are_one_line(cli, tmp_path):
    one_error_line(cli("tune", "allreduce", "--algorithms", "allreduce=no_such_algorithm", "--runs-dir",
                       str(tmp_path)), "no_such_algorithm", "ring")
    one_error_line(cli("tune", "allgatherv", "--runs-dir", str(tmp_path)), "allgatherv")
    bad = tmp_path / "bad.conf"
    bad.write_text("rule-file-version-2\n1\n2\n1\n2\n1\n64 4 0 0\n")  # the first rule must be for 0 bytes
    one_error_line(cli("tune", "--show", str(bad)), "0 bytes")
    (tmp_path / "bad.json").write_text("{not json")
    one_error_line(cli("tune", "--show", str(tmp_path / "bad.json")), "not valid JSON")
    one_error_line(cli("tune", "--resume", str(tmp_path)), "no tune to resume")
    one_error_line(cli("tune", "allreduce", "--verify-launches", "4", "--verify-max-launches", "3", "--runs-dir",
                       str(tmp_path)), "--verify-max-launches (3) is below --verify-launches (4)")


# -- Open MPI -----------------------------------------------------------------------------------

def _breakpoint_hits(mpirun: Path, engine: Path, ranks: int, env: dict[str, str]) -> set[str]:
    """The allreduce algorithm functions the library calls, seen by gdb on every rank."""
    names = ["basic_linear", "nonoverlapping", "recursivedoubling", "ring", "ring_segmented", "redscat_allgather"]
    gdb = ["gdb", "-batch", "-nx", "-ex", "set breakpoint pending on",
           *[x for n in names for x in ("-ex", f"break ompi_coll_base_allreduce_intra_{n}")],
           "-ex", "run", "-ex", "kill", "--args", str(engine), "--sizes", "64K", "--reps", "2", "allreduce"]
    argv = [str(mpirun), "-n", str(ranks), "--oversubscribe", *[x for k, v in env.items() for x in ("-x", f"{k}={v}")],
            *gdb]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env={**os.environ, **OMPI_ENV})
    return {line.split(" in ompi_coll_base_allreduce_intra_")[1].split(" ")[0]
            for line in done.stdout.splitlines() if "hit Breakpoint" in line and "allreduce_intra_" in line}


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb shows which algorithm the library calls")
@pytest.mark.parametrize("ranks", [2, 4])
def test_openmpi_rules_file_forces_the_algorithm(openmpi_mpirun, openmpi_mpicc, engine_builder, tmp_path, ranks):
    from mpiscope.analysis.tunefile import Band, Tuning, environment, ompi_classic
    engine = engine_builder(openmpi_mpicc)
    forced = tmp_path / "nonoverlapping.conf"  # algorithm 2, which the built-in rules do not pick here
    rules = {"allreduce": {ranks: [Band(0, "nonoverlapping", "2")]}}
    forced.write_text(ompi_classic(Tuning("openmpi", "5.0.11", rules)))
    assert _breakpoint_hits(openmpi_mpirun, engine, ranks, environment("openmpi", forced)) == {"nonoverlapping"}
    assert "nonoverlapping" not in _breakpoint_hits(openmpi_mpirun, engine, ranks, {})


@pytest.mark.parametrize("ranks", [2, 4])
def test_openmpi_tune_end_to_end(cli, openmpi_prefix, tmp_path, ranks):
    r = cli("tune", "allreduce", "--mpi", "openmpi", "-n", str(ranks), "--sizes", "8,64K",
            "--algorithms", "allreduce=ring,recursive_doubling,basic_linear", *TUNE, "--runs-dir", str(tmp_path),
            *(["--oversubscribe"] if ranks > 2 else []), env=OMPI_ENV, timeout=1200)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    res = result_of(r.stdout)
    assert res["algorithms"]["allreduce"] == ["default", "ring", "recursive_doubling", "basic_linear"]
    path = Path(res["file"])
    assert path.suffix == ".conf" and path.read_text().startswith("rule-file-version-2\n")
    shown = cli("tune", "--show", str(path))
    assert shown.returncode == 0 and "allreduce" in shown.stdout, shown.stderr
    assert "OMPI_MCA_coll_tuned_dynamic_rules_filename" in r.stdout


def test_openmpi_ignores_json_rules_and_tune_says_so(openmpi_prefix, tmp_path, mpiscope_home):
    """Open MPI 5 reads the classic rules: its canary (an algorithm number it lacks) is refused;
    the same rules as JSON (Open MPI 6's format) are ignored without a word: an error for tune."""
    from mpiscope.analysis.tunefile import Band, Tuning
    from mpiscope.util.console import err
    from mpiscope.execute.session import Session, target
    from mpiscope.execute.tune import Tune, tune_description
    os.environ.update(OMPI_ENV)
    spec = tune_description({"mpi": "openmpi", "benchmarks": "allreduce", "sizes": "8,64K", "max_time": 0.05})
    t = Tune(tmp_path, spec, target("openmpi"), Session(tmp_path / "runs", err, progress=False))
    rules = {"allreduce": {2: [Band(0, "ring", "4")]}}
    assert t.canary(Tuning("openmpi", "5.0.11", rules))["refused"]
    assert not t.canary(Tuning("openmpi", "6.0.0", rules))["refused"]
    # a band that starts between the measured sizes: the canary is measured inside it
    above = t.canary(Tuning("openmpi", "5.0.11", {"allreduce": {2: [Band(0, "default"), Band(725, "ring", "4")]}}))
    assert above["refused"] and above["size"] == 65536


def test_tune_interrupted_resumes(cli, tmp_path):
    """Ctrl-C during the race: exit 130 with the line to resume; --resume finishes the tune."""
    import signal
    import sys
    import time
    argv = [sys.executable, "-m", "mpiscope", "tune", "allreduce", "-n", "2", "--sizes", "8,1K", *TUNE,
            "--runs-dir", str(tmp_path)]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not any(tmp_path.glob("2*/records.jsonl")):
        time.sleep(0.2)
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=300)
    if p.returncode == 0:
        pytest.skip("the tune finished before Ctrl-C reached it")  # a machine too fast for the signal
    assert p.returncode == 130, (out, err)
    line = next(ln for ln in err.splitlines() if "--resume" in ln)
    directory = line.split("--resume ")[1].split("`")[0]
    assert "tune-" in directory
    refused = cli("tune", "--resume", directory, "-n", "4")
    one_error_line(refused, "leave out -n")
    r = cli("tune", "--resume", directory, "--runs-dir", str(tmp_path), "--no-progress", timeout=1200)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    res = json.loads((Path(directory) / "tune.json").read_text())
    assert {d["size"] for d in res["decisions"]} == {8, 1024}


def test_evidence_uses_the_points_that_keep_the_default_as_a_control():
    from mpiscope.execute.tune import evidence
    quiet = evidence([{"algorithm": "default", "verdict": "same"}, {"algorithm": "ring", "verdict": "faster"}])
    assert "faster at 1" in quiet and "0 differ" in quiet and "unreliable" not in quiet
    noisy = evidence([{"algorithm": "default", "verdict": "slower"}, {"algorithm": "ring", "verdict": "inconclusive"}])
    assert "1 differs" in noisy and "unreliable" in noisy and "no measured gain" in noisy


def test_files_read_back_as_written(tmp_path, embedded_mpi):
    """--show's reader gives back the bands of each format (engine sizes for MPICH's tree)."""
    from mpiscope.analysis.tunefile import Band, Tuning, ompi_classic, ompi_json, read, render
    from mpiscope.mpi.collectives import mpich_default_tree
    from mpiscope.mpi.registry import identify
    rules = {"allgather": {4: [Band(0, "default"), Band(725, "ring", "MPIR_Allgather_intra_ring")]},
             "barrier": {2: [Band(0, "smp", "MPIR_Barrier_intra_smp")]}}
    path = tmp_path / "mpich.json"
    path.write_text(render(Tuning("mpich", "5.0.2", rules), mpich_default_tree(identify(embedded_mpi)))[0])
    assert read(path) == [("allgather", 4, 0, "default"), ("allgather", 4, 725, "MPIR_Allgather_intra_ring"),
                          ("barrier", 2, 0, "MPIR_Barrier_intra_smp")]
    ompi = {"allgather": {4: [Band(0, "default", "0"), Band(725, "ring", "4")]}}
    classic = tmp_path / "rules.conf"
    classic.write_text(ompi_classic(Tuning("openmpi", "5.0.11", ompi)))
    assert ("allgather", 4, 725 * 4, "4") in read(classic)  # Open MPI counts allgather over the ranks
    as_json = tmp_path / "rules.json"
    as_json.write_text(json.dumps(ompi_json(Tuning("openmpi", "6.0.0", ompi))))
    assert read(as_json) == [("allgather", 4, 725 * 4, "4")]


def test_side_by_side_of_a_forced_file(embedded_mpi, tmp_path):
    """The proof run on MPICH at 2 ranks: default and file in the same launches, a ratio with its
    interval and a verdict per size, the band's algorithm named; the default band is the control.
    A change still inconclusive after the first launches gets more, only for itself, up to the cap,
    and ends kept (faster) or withdrawn."""
    from mpiscope.analysis.tunefile import Band, Tuning
    from mpiscope.util.console import err
    from mpiscope.execute.session import Session, target
    from mpiscope.execute.tune import Tune, evidence, tune_description
    spec = tune_description({"benchmarks": "allreduce", "sizes": "8,64K", "max_time": 0.05, "verify_launches": 2,
                             "verify_max_launches": 3})
    t = Tune(tmp_path, spec, target(None), Session(tmp_path / "runs", err, progress=False))
    tuning = Tuning("mpich", "5.0.2", {"allreduce": {2: [Band(0, "default"),
                                                         Band(725, "ring", "MPIR_Allreduce_intra_ring")]}})
    path, _ = t.write(tuning)
    run, rows = t.verify({}, path, tuning)
    assert [(r["size"], r["algorithm"]) for r in rows] == [(8, "default"), (65536, "ring")]
    control, change = rows
    for r in rows:
        # a side's disturbed launches are left out, as everywhere (the results layer's grouping): a
        # side left with one launch has no interval and no verdict but inconclusive
        if min(r["launches"]) >= 2:
            assert r["low"] <= r["ratio"] <= r["high"]
        else:
            assert r["verdict"] == "inconclusive"
        assert r["verdict"] in ("faster", "slower", "same", "inconclusive")
    assert max(control["launches"]) <= 2 and control["settle"] is None  # the control is never measured further
    extra = any(p.tag["launch"] == 2 for p in run.records().points)
    assert max(change["launches"]) <= (3 if extra else 2)
    assert change["settle"] in ("keep", "withdraw") and (change["settle"] == "keep") == (change["verdict"] == "faster")
    sides = {(p.tag["side"], p.tag["launch"], p.size) for p in run.records().points}
    first = {(side, k, size) for side in ("default", "tuned") for k in (0, 1) for size in (8, 65536)}
    assert sides == first | ({("default", 2, 65536), ("tuned", 2, 65536)} if extra else set())
    assert "1 points" in evidence(rows) and "a control" in evidence(rows)


def test_mpich_parameterised_algorithms_come_from_mpivars(embedded_mpi):
    """MPICH's k-ary and tree algorithms: a variant per radix (up to the ranks) and tree type, each
    forced by the CVARs mpivars lists, its leaf carrying every parameter; an algorithm whose
    parameter CVAR the library lacks is left out with that reason."""
    from mpiscope.mpi.collectives import _ask, _tool, discover, libmpi_strings, mpich_choices
    from mpiscope.mpi.registry import identify
    lib = identify(embedded_mpi)
    two = {a.name: a for a in discover(lib, ("allreduce", "barrier"), ranks=2)["allreduce"].algorithms}
    tree = two["tree:k=2,tree_type=kary"]
    assert tree.env["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] == "tree" and tree.env["MPIR_CVAR_ALLREDUCE_TREE_KVAL"] == "2"
    assert tree.env["MPIR_CVAR_ALLREDUCE_TREE_TYPE"] == "kary" and tree.json_name == "MPIR_Allreduce_intra_tree"
    assert set(tree.params) == {"k", "tree_type", "chunk_size", "buffer_per_child"}
    assert not any(":k=4" in name for name in two)  # a radix above the ranks builds the same tree
    four = {a.name for a in discover(lib, ("allreduce",), ranks=4)["allreduce"].algorithms}
    assert {"tree:k=4,tree_type=knomial_1", "recexch:k=4"} <= four
    mpivars = _ask([str(_tool(lib, "mpivars"))])
    cut = "\n".join(ln for ln in mpivars.splitlines() if "MPIR_CVAR_BARRIER_DISSEM_KVAL" not in ln)
    barrier = mpich_choices(cut, libmpi_strings(lib), ("barrier",))["barrier"]
    assert "MPIR_CVAR_BARRIER_DISSEM_KVAL" in barrier.left_out["k_dissemination"]
    assert not any(a.value == "k_dissemination" for a in barrier.algorithms)


def test_a_parameterised_leaf_reads_back_with_its_parameters(tmp_path, embedded_mpi):
    from mpiscope.analysis.tunefile import Band, Tuning, read, render
    from mpiscope.mpi.collectives import mpich_default_tree
    from mpiscope.mpi.registry import identify
    band = Band(0, "k_dissemination:k=4", "MPIR_Barrier_intra_k_dissemination", (("k", "4"),))
    path = tmp_path / "barrier.json"
    path.write_text(render(Tuning("mpich", "5.0.2", {"barrier": {4: [band]}}),
                           mpich_default_tree(identify(embedded_mpi)))[0])
    at = json.loads(path.read_text())["collective=barrier"]["comm_type=intra"]["comm_size<=4"]
    assert list(at) == ["comm_avg_ppn<4", "comm_avg_ppn=any"]  # a one-node band (docs/tune.md, the bands)
    assert at["comm_avg_ppn=any"] == {"algorithm=MPIR_Barrier_intra_k_dissemination": {"k=4": {}}}
    assert read(path) == [("barrier", 4, 0, "MPIR_Barrier_intra_k_dissemination (k=4)")]


def test_the_figure_marks_the_written_algorithm_and_the_gain():
    """tune.html's figure from a result: a line per algorithm, the written one circled at each
    size, the gain with its interval per verified size (the control labelled so)."""
    from mpiscope.report.tune_plot import tune_figure, tune_figures
    times = {8: {"default": 2.0, "ring": 1.0, "linear": 5.0}, 65536: {"default": 40.0, "ring": 41.0, "linear": 90.0}}
    result = {"decisions": [{"collective": "allreduce", "ranks": 2, "size": s, "leader": min(t, key=t.get),
                             "chosen": "ring" if s == 8 else "default", "times": t} for s, t in times.items()],
              "verify": [{"collective": "allreduce", "ranks": 2, "size": 8, "algorithm": "ring", "ratio": 0.5,
                          "low": 0.4, "high": 0.6, "verdict": "faster"},
                         {"collective": "allreduce", "ranks": 2, "size": 65536, "algorithm": "default", "ratio": 1.0,
                          "low": 0.9, "high": 1.1, "verdict": "same"}]}
    fig = tune_figure(result, "allreduce", 2)
    top, low = fig.axes
    assert [ln.get_label() for ln in top.get_lines()] == ["default", "ring", "linear"]
    circled = top.collections[0].get_offsets()
    assert [tuple(p) for p in circled] == [(8.0, 1.0), (65536.0, 40.0)]
    labels = [t.get_text() for t in low.texts]
    assert labels == ["2x [1.67, 2.5] faster", "1x [0.909, 1.11] control"]
    assert tune_figure(result, "bcast", 2) is None and [c for c, _ in tune_figures(result)] == ["allreduce at 2 ranks"]


def test_only_proven_changes_reach_the_file():
    """The race's changes whose side-by-side did not settle on "keep" go back to the default,
    the algorithm tried and the reason kept for the table."""
    from mpiscope.execute.tune import withdraw
    decisions = [{"collective": "allreduce", "ranks": 2, "size": s, "chosen": c}
                 for s, c in ((8, "ring"), (1024, "recursive_doubling"), (65536, "ring"), (1048576, "default"))]
    verified = {("allreduce", 2, 8): {"settle": "keep", "reason": "faster in 3 launches a side"},
                ("allreduce", 2, 65536): {"settle": "withdraw", "reason": "inconclusive after 8 launches a side"},
                ("allreduce", 2, 1048576): {"settle": None, "reason": None}}
    withdraw(decisions, verified, "not measured side by side")
    assert [d["chosen"] for d in decisions] == ["ring", "default", "default", "default"]
    assert [(d.get("tried"), d.get("withdrawn")) for d in decisions] == [
        (None, None), ("recursive_doubling", "not measured side by side"),
        ("ring", "inconclusive after 8 launches a side"), (None, None)]


def test_a_tune_of_an_earlier_format_is_refused_with_the_command_to_start_again(cli_offline, tmp_path):
    """A tune directory written before launches were packed (its state.json has no format; its
    race records tag one collective a launch) cannot be resumed: one line, exit 2, the fix named."""
    old = tmp_path / "tune-20261124-101010"
    old.mkdir()
    spec = {"mpi": "openmpi", "collectives": ["allreduce", "bcast"], "ranks": [2], "sizes": "8,64K", "rounds": 4,
            "verify_launches": 3, "max_time": 0.2, "race": True, "only": {}, "launcher_args": [],
            "placement": {"launcher": None, "hosts": None}, "margin": 0.05}
    (old / "state.json").write_text(json.dumps({"spec": spec, "failed": {}, "race": str(old / "race")}))
    r = cli_offline("tune", "--resume", str(old))
    one_error_line(r, "earlier mpiscope tune", "cannot be resumed",
                   "mpiscope tune allreduce bcast --mpi openmpi -n 2 --sizes 8,64K")
    assert not (old / "tune.json").exists()
