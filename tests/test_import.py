"""`mpiscope import`: every real OSU 7.4 and IMB 2021 output in tests/data/imports (made on
the development machine against the MPICH 5 wheel; see their README) becomes a run whose
points hold the files' own figures, sizes and names, checked against the files as this test reads
them itself; a damaged copy is refused with its line and nothing is written; the imported runs go
through show, table, model, predict, compare (beside a small real mpiscope run), plot and report."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from mpiscope.importers import ImportFailed, import_files, parse_file
from mpiscope.records import read_records
from mpiscope.store.runs import Run, list_runs

DATA = Path(__file__).resolve().parent / "data" / "imports"
OSU = sorted(DATA.glob("osu-*.txt"))
IMB = sorted(DATA.glob("imb-*.txt"))

# file -> (the tool's name, mpiscope's name): the mapping docs/import.md promises
OSU_NAMES = {
    "osu-7.4_latency_mpich.txt": ("osu_latency", "pingpong"),
    "osu-7.4_latency-z_mpich.txt": ("osu_latency", "pingpong"),
    "osu-7.4_bw_mpich.txt": ("osu_bw", "bw"),
    "osu-7.4_bibw_mpich.txt": ("osu_bibw", "bibw"),
    "osu-7.4_mbw_mr_mpich.txt": ("osu_mbw_mr", "msgrate"),
    "osu-7.4_allreduce_mpich.txt": ("osu_allreduce", "allreduce"),
    "osu-7.4_allreduce-f_mpich.txt": ("osu_allreduce", "allreduce"),
    "osu-7.4_iallreduce_mpich.txt": ("osu_iallreduce", "iallreduce"),
    "osu-7.4_put_latency_mpich.txt": ("osu_put_latency", "put_latency"),
}
# OSU's '# Synchronization:' line -> the engine's --rma-sync mode, the variant of the points
OSU_SYNC = {"MPI_Win_flush": "flush", "MPI_Win_flush_local": "flush_local", "MPI_Win_lock/unlock": "lock",
            "MPI_Win_lock_all/unlock_all": "lock_all", "MPI_Win_fence": "fence",
            "MPI_Win_post/start/complete/wait": "pscw"}
IMB_NAMES = {"PingPong": "pingpong", "PingPing": "pingping", "Sendrecv": "sendrecv", "Exchange": "exchange",
             "Uniband": "msgrate", "Biband": "bibw", "Allreduce": "allreduce", "Bcast": "bcast",
             "Alltoall": "alltoall", "Barrier": "barrier", "Iallreduce": "iallreduce",
             "Unidir_put": "put_latency"}
# IMB-RMA (benchmark, mode) -> (engine row, variant): docs/benchmarks-rma.md; the two modes stay apart
IMB_RMA = {("Unidir_put", "non-aggregate"): ("put_latency", "flush"), ("Unidir_put", "aggregate"): ("put_bw", "flush")}


def osu_rows(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """The file's column heading and its data lines (line number, cells), read here from scratch."""
    lines = path.read_text().splitlines()
    rows = [(i, x.split()) for i, x in enumerate(lines, 1) if re.match(r"\d+\s", x)]
    heading = [x for x in lines[:rows[0][0]] if x.startswith("# Size")][-1]
    return re.split(r"\s{2,}", heading[1:].strip()), rows


def imb_blocks(path: Path) -> list[tuple[str, str | None, int, list[str], list[tuple[int, list[str]]]]]:
    """(benchmark, mode, processes, heading, data lines) per `# Benchmarking` block."""
    out = []
    lines = path.read_text().splitlines()
    for i, x in enumerate(lines):
        m = re.match(r"# Benchmarking (\S+)", x)
        if not m:
            continue
        j, mode, procs = i + 1, None, 0
        while not re.match(r"\s+#(bytes|repetitions)", lines[j]):
            procs = int(re.search(r"#processes = (\d+)", lines[j])[1]) if "#processes" in lines[j] else procs
            mode = lines[j].split("MODE:")[1].strip().lower() if "MODE:" in lines[j] else mode
            j += 1
        heading, rows = lines[j].split(), []
        j += 1
        while j < len(lines) and lines[j].strip():
            rows.append((j + 1, lines[j].split()))
            j += 1
        out.append((m[1], mode, procs, heading, rows))
    return out


def test_the_samples_are_all_here():
    assert len(OSU) == 9 and len(IMB) == 4
    assert {p.name for p in OSU} == set(OSU_NAMES)


@pytest.mark.parametrize("path", OSU, ids=lambda p: p.name)
def test_osu_files_become_points_with_their_own_figures(path):
    heading, rows = osu_rows(path)
    points = parse_file(path, ranks=2)
    tool_name, name = OSU_NAMES[path.name]
    assert len(points) == len(rows) > 10
    for p, (line, cells) in zip(points, rows):
        fig = dict(zip(heading[1:], map(float, cells[1:])))
        assert p.size == int(cells[0]) and p.ranks == 2
        assert (p.benchmark, p.imported.tool_benchmark, p.imported.tool) == (name, tool_name, "osu")
        sync = re.search(r"^# Synchronization: (\S+)$", path.read_text(), re.M)
        assert p.variant == (OSU_SYNC[sync[1]] if sync else None)
        assert p.imported.tool_version == "7.4" and p.imported.line == line
        assert p.imported.file == str(path) and dict(p.imported.figures) == fig
        assert p.time_us.ci_low is None and p.time_us.ci_high is None and p.samples_us == ()
        if "P50 Tail Lat(us)" in fig:  # -z: OSU's P50 is a median, and the estimate says so
            assert p.estimate == "median" and p.median == p.time_us.median == fig["P50 Tail Lat(us)"]
            assert (p.time_us.p90, p.time_us.p99) == (fig["P90 Tail Lat(us)"], fig["P99 Tail Lat(us)"])
            assert p.time_us.mean == fig["Avg Latency(us)"]
        else:  # an OSU average is a mean: no median is claimed
            assert p.estimate == "mean" and p.time_us.median is None and p.median == p.time_us.mean
        for col in ("Avg Latency(us)", "Latency (us)", "Pure Comm.(us)"):
            if col in fig:
                assert p.time_us.mean == fig[col] and p.imported.fields["time_us.mean"] == col
        if "Min Latency(us)" in fig:  # -f: over ranks, the engine's t_min_us / t_max_us, not Stats.min
            assert (p.details["t_min_us"], p.details["t_max_us"]) == (fig["Min Latency(us)"], fig["Max Latency(us)"])
            assert p.time_us.n == fig["Iterations"] and p.time_us.min is None
        for col in ("Bandwidth (MB/s)", "MB/s"):
            if col in fig:  # the tool's rate, and the time per operation it implies
                assert p.bw_MBps.mean == fig[col]
        if "Messages/s" in fig:
            assert p.msg_rate == fig["Messages/s"]
            assert p.time_us.mean == pytest.approx(1e6 / fig["Messages/s"])
        if "Overall(us)" in fig:
            ov = p.details["overlap"]
            assert (ov["ovrl_us"], ov["cpu_us"], ov["pure_us"], ov["overlap_pct"]) == (
                fig["Overall(us)"], fig["Compute(us)"], fig["Pure Comm.(us)"], fig["Overlap(%)"])


def test_literal_lines_of_the_osu_files():
    """A few lines of the files, as a person reads them."""
    lat = {p.size: p for p in parse_file(DATA / "osu-7.4_latency_mpich.txt")}
    assert lat[8192].time_us.mean == 7.27 and lat[8192].imported.line == 18  # "8192   7.27"
    bw = {p.size: p for p in parse_file(DATA / "osu-7.4_bw_mpich.txt")}
    assert bw[1048576].bw_MBps.mean == 6249.34  # "1048576   6249.34"
    assert bw[1048576].time_us.mean == pytest.approx(1048576 / 6249.34)
    assert bw[1048576].imported.fields["time_us.mean"].startswith("derived:")
    bibw = {p.size: p for p in parse_file(DATA / "osu-7.4_bibw_mpich.txt")}
    assert bibw[4096].bytes_per_op == 8192 and bibw[4096].time_us.mean == pytest.approx(8192 / 4507.40)
    f = {p.size: p for p in parse_file(DATA / "osu-7.4_allreduce-f_mpich.txt", ranks=2)}
    assert (f[256].time_us.mean, f[256].details["t_min_us"], f[256].details["t_max_us"], f[256].time_us.n) == \
        (4.10, 0.51, 7.69, 1000)  # "256   4.10   0.51   7.69   1000"
    z = {p.size: p for p in parse_file(DATA / "osu-7.4_latency-z_mpich.txt")}
    assert (z[2].time_us.mean, z[2].time_us.median, z[2].time_us.p90, z[2].time_us.p99) == (4.10, 5.15, 5.27, 5.83)
    mr = parse_file(DATA / "osu-7.4_mbw_mr_mpich.txt")
    assert mr[0].ranks == 2 and mr[0].msg_rate == 464919.26  # "[ pairs: 1 ]": 2 ranks
    put = parse_file(DATA / "osu-7.4_put_latency_mpich.txt")
    assert put[0].family == "rma" and put[0].details["window_creation"] == "MPI_Win_allocate"
    put = {p.size: p for p in put}  # "65536   0.70" under "# Synchronization: MPI_Win_flush"
    assert (put[65536].benchmark, put[65536].variant, put[65536].time_us.mean) == ("put_latency", "flush", 0.70)
    assert put[65536].details["synchronization"] == "MPI_Win_flush" and put[65536].bytes_per_op == 65536


@pytest.mark.parametrize("path", IMB, ids=lambda p: p.name)
def test_imb_files_become_points_with_their_own_figures(path):
    points = parse_file(path)
    blocks = imb_blocks(path)
    assert len(points) == sum(len(rows) for *_, rows in blocks) > 10
    it = iter(points)
    for name, mode, procs, heading, rows in blocks:
        for line, cells in rows:
            p = next(it)
            fig = {c: float(v) for c, v in zip(heading, cells) if c != "#bytes"}
            expect, variant = IMB_RMA.get((name, mode), (IMB_NAMES[name], None))
            assert (p.benchmark, p.imported.tool_benchmark, p.imported.tool, p.ranks) == (expect, name, "imb", procs)
            assert p.variant == variant
            assert p.size == (int(cells[0]) if heading[0] == "#bytes" else 0)
            assert p.imported.line == line and dict(p.imported.figures) == fig
            assert p.imported.tool_version == "2021.11" and p.estimate == "mean" and p.time_us.median is None
            assert p.time_us.n == fig["#repetitions"]
            if "t[usec]" in fig:
                assert p.time_us.mean == fig["t[usec]"]
            if "t_avg[usec]" in fig:  # over ranks: the engine's t_min_us, t_max_us, t_avg_us
                assert p.time_us.mean == p.details["t_avg_us"] == fig["t_avg[usec]"]
                assert (p.details["t_min_us"], p.details["t_max_us"]) == (fig["t_min[usec]"], fig["t_max[usec]"])
            if "Mbytes/sec" in fig and p.size > 0:
                assert p.bw_MBps.mean == fig["Mbytes/sec"]
            if "Msg/sec" in fig:
                assert p.msg_rate == fig["Msg/sec"]
            if "t_pure[usec]" in fig:
                assert p.time_us.mean == p.details["overlap"]["pure_us"] == fig["t_pure[usec]"]
                assert p.details["overlap"]["overlap_pct"] == fig["overlap[%]"]
            if mode:
                assert p.details["mode"] == mode


def test_literal_lines_of_the_imb_files():
    p2p = parse_file(DATA / "imb-2021_p2p_mpich.txt")
    pp = {p.size: p for p in p2p if p.imported.tool_benchmark == "PingPong"}
    assert pp[65536].time_us.mean == 9.34 and pp[65536].bw_MBps.mean == 7015.59  # "65536  200  9.34  7015.59"
    assert pp[0].bw_MBps is None  # no bandwidth of 0 bytes, as the engine writes none
    ex = {p.size: p for p in p2p if p.benchmark == "exchange"}
    assert ex[1024].bytes_per_op == 4096 and ex[1024].time_us.mean == 2.18
    coll = parse_file(DATA / "imb-2021_coll_mpich.txt")
    barrier = [p for p in coll if p.benchmark == "barrier"]
    assert len(barrier) == 1 and barrier[0].size == 0 and barrier[0].time_us.mean == 0.26
    assert {p.details.get("datatype") for p in coll if p.benchmark == "allreduce"} == {"MPI_FLOAT"}
    # IMB-RMA Unidir_put: NON-AGGREGATE (a flush per put) is put_latency, AGGREGATE put_bw, both flush
    rma = {(p.benchmark, p.size): p for p in parse_file(DATA / "imb-2021_rma_mpich.txt")}
    lat, bw = rma[("put_latency", 1024)], rma[("put_bw", 1024)]
    assert (lat.variant, lat.time_us.mean, lat.bw_MBps.mean, lat.details["mode"]) == ("flush", 1.11, 925.56,
                                                                                         "non-aggregate")
    assert (bw.variant, bw.time_us.mean, bw.bw_MBps.mean, bw.details["mode"]) == ("flush", 0.59, 1749.59, "aggregate")
    assert lat.imported.tool_benchmark == bw.imported.tool_benchmark == "Unidir_put" and lat.family == "rma"


def test_a_run_of_every_sample(tmp_path, cli_offline):
    """Every sample as one run through the command; the run says where each point came from."""
    r = cli_offline("import", *map(str, OSU + IMB), "--ranks", "2", "--mpi-label", "MPICH 5.0.2", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    run, = list_runs(tmp_path)
    recs = run.records()
    assert not recs.problems
    expected = sum(len(osu_rows(p)[1]) for p in OSU) + sum(len(b[-1]) for p in IMB for b in imb_blocks(p))
    assert len(recs.points) == expected and len(recs.contexts) == len(OSU) + len(IMB)
    assert {c.mpi_library_version for c in recs.contexts} == {"MPICH 5.0.2"}
    meta = json.loads((run.path / "run.json").read_text())
    assert meta["status"] == "ok" and len(meta["imported"]["files"]) == len(OSU) + len(IMB)
    # the same point from two files (latency and latency -z): the second is a configuration of its own
    lat = [p for p in recs.points if p.benchmark == "pingpong" and p.size == 1 and p.imported.tool == "osu"]
    later = [p.name for p in OSU if p.name.startswith("osu-7.4_latency")][-1]
    assert len(lat) == 2 and sorted(p.tag.get("file", "") for p in lat) == ["", later]
    # the stored line names the tool's statistic: an average is no median
    line = next(x for x in (run.path / "records.jsonl").read_text().splitlines() if '"osu_bw"' in x)
    stored = json.loads(line)
    assert stored["estimate"] == "mean" and "median" not in stored["time_us"]
    assert stored["imported"]["fields"]["bw_MBps.mean"] == "Bandwidth (MB/s)"
    r = cli_offline("show", run.id, "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    flat = " ".join(re.sub(r"[│┃]", " ", r.stdout).split())  # a note wrapped within its cell reads on
    assert "estimate µs" in r.stdout and "imported from" in r.stdout and "its mean; no interval" in flat
    assert "put_latency flush" in r.stdout and "put_bw flush" in r.stdout  # IMB-RMA and OSU one-sided rows
    r = cli_offline("runs", "--runs-dir", str(tmp_path))
    assert r.returncode == 0 and "imported:" in r.stdout and "MPICH 5.0.2" in " ".join(r.stdout.split())


def damaged(tmp_path: Path, name: str, line: int, text: str | None) -> Path:
    """A copy of a sample with line `line` replaced (None: the file cut after line - 1)."""
    lines = (DATA / name).read_text().splitlines(keepends=True)
    out = lines[:line - 1] + ([] if text is None else [text + "\n"] + lines[line:])
    p = tmp_path / f"damaged-{name}"
    p.write_text("".join(out))
    return p


@pytest.mark.parametrize("name, line, text, says", [
    ("osu-7.4_latency_mpich.txt", 10, "512      2.1x7", "'2.1x7' in column 'Avg Latency(us)' is not a number"),
    ("osu-7.4_latency-z_mpich.txt", 9, "16   3.92   3.90", "3 value(s) where the heading names 5 columns"),
    ("imb-2021_p2p_mpich.txt", 43, "            4          200", "2 value(s) where the heading names 4 columns"),
    ("imb-2021_coll_mpich.txt", 60, "# stray comment", "a comment inside Bcast's table"),
    ("imb-2021_nbc_mpich.txt", 45, None, "no '# All processes entering MPI_Finalize'"),
    ("osu-7.4_bw_mpich.txt", 2, "# OSU MPI Frobnicate Test v7.4", "OSU benchmark 'Frobnicate' is not one"),
])
def test_a_damaged_copy_is_refused_with_its_line_and_nothing_is_written(tmp_path, cli_offline, name, line, text, says):
    bad = damaged(tmp_path, name, line, text)
    runs = tmp_path / "runs"
    # a good file first: it must not be stored either
    r = cli_offline("import", str(DATA / "osu-7.4_latency_mpich.txt"), str(bad), "--runs-dir", str(runs))
    assert r.returncode == 2
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    expect_line = line if text is not None else len(bad.read_text().splitlines())
    assert f"{bad} line {expect_line}: " in err and says in err, err
    assert not runs.exists() or not any(runs.iterdir())


def test_files_that_are_no_tool_output(tmp_path, cli_offline):
    (tmp_path / "notes.txt").write_text("latency was fine\n")
    (tmp_path / "empty.txt").write_text("")
    cut = tmp_path / "cut.txt"
    cut.write_text((DATA / "osu-7.4_latency_mpich.txt").read_text()[:-1])  # the last newline lost
    for path, says in ((tmp_path / "notes.txt", "line 1: neither OSU"),
                       (tmp_path / "empty.txt", "line 1: the file is empty"),
                       (cut, "line 21: the last line has no newline"),
                       (DATA / "README.md", "line 1: neither OSU"),
                       (tmp_path / "missing.txt", "missing.txt: cannot read it (No such file or directory)")):
        r = cli_offline("import", str(path), "--runs-dir", str(tmp_path / "runs"))
        assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = cli_offline("import", str(DATA / "osu-7.4_allreduce_mpich.txt"), "--runs-dir", str(tmp_path / "runs"))
    assert r.returncode == 2 and "give --ranks N" in r.stderr
    r = cli_offline("import", str(DATA / "osu-7.4_latency_mpich.txt"), "--format", "imb", "--runs-dir", str(tmp_path / "runs"))
    assert r.returncode == 2 and "--format imb, but this is OSU Micro-Benchmarks output" in r.stderr
    assert not (tmp_path / "runs").exists() or not list_runs(tmp_path / "runs")
    with pytest.raises(ImportFailed, match="line 37: --ranks 1, but IMB says"):
        import_files([DATA / "imb-2021_coll_mpich.txt"], ranks=1, runs_dir=tmp_path / "api")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, cli):
    """Imported OSU and IMB runs beside a small real mpiscope run of pingpong and allreduce."""
    run_cli = cli
    d = tmp_path_factory.mktemp("import-runs")
    r = run_cli("run", "-n", "2", "-b", "pingpong,allreduce", "--sizes", "4:64K", "--reps", "30",
                "--launches", "1", "--runs-dir", str(d), "--no-progress", "--no-report")
    assert r.returncode == 0, r.stderr
    measured = list_runs(d)[0].id
    osu = import_files([DATA / "osu-7.4_latency_mpich.txt", DATA / "osu-7.4_allreduce-f_mpich.txt"],
                       mpi_label="MPICH 5.0.2", ranks=2, runs_dir=d).name
    imb = import_files([DATA / "imb-2021_p2p_mpich.txt", DATA / "imb-2021_coll_mpich.txt"], runs_dir=d).name
    return d, measured, osu, imb


def test_compare_sets_an_imported_osu_run_beside_a_measured_one(runs, cli):
    d, measured, osu, _ = runs
    r = cli("compare", measured, osu, "--runs-dir", str(d))
    assert r.returncode == 0, r.stderr
    assert "candidate us (OSU 7.4 mean)" in " ".join(r.stdout.split()) or "(OSU 7.4 mean)" in r.stdout
    rows = [x for x in r.stdout.splitlines() if re.match(r"│ (pingpong|allreduce) ", x)]
    sizes = {int(x.split("│")[2]) for x in rows if "pingpong" in x}
    assert sizes == {4 * 2 ** k for k in range(15)}  # every size both hold: 4 .. 64K
    assert rows and all("none (imported)" in x and "untested" in x for x in rows)
    assert "untested (a side imported from another tool" in " ".join(r.stdout.split())
    # the measured side alone keeps its tests (against a second run: one run on both sides is refused,
    # issue 32, and so is a copy of it, issue 47: the copy is given an id of its own)
    copy = d / f"{measured}-copy"
    if not copy.exists():
        shutil.copytree(d / measured, copy)
        meta = json.loads((copy / "run.json").read_text())
        (copy / "run.json").write_text(json.dumps({**meta, "id": copy.name}))
    r = cli("compare", measured, copy.name, "--runs-dir", str(d))
    assert r.returncode == 0 and "untested" not in r.stdout and "none (imported)" not in r.stdout


def test_table_model_predict_plot_and_report_on_imported_runs(runs, cli, tmp_path):
    d, measured, osu, imb = runs
    r = cli("table", measured, osu, "--benchmark", "pingpong", "--format", "markdown", "--runs-dir", str(d))
    assert r.returncode == 0, r.stderr
    assert "source=mpiscope" in r.stdout and "source=OSU 7.4, MPICH 5.0.2, mean" in r.stdout
    assert "imported columns" in r.stdout and "with no interval" in r.stdout
    row = next(x for x in r.stdout.splitlines() if x.startswith("| 8192 |"))
    assert row.split("|")[3].strip() == f"{8192 / 7.27:.0f}"  # OSU's 7.27 us at 8 KiB, as MB/s
    r = cli("table", imb, "--benchmark", "sendrecv", "--format", "csv", "--runs-dir", str(d))
    assert r.returncode == 0 and "65536" in r.stdout
    for run, tool in ((osu, "OSU 7.4 osu_latency (mean)"), (imb, "IMB 2021.11 PingPong (mean)")):
        r = cli("model", run, "--runs-dir", str(d))
        assert r.returncode == 0, r.stderr
        assert "Latency Ts" in r.stdout and f"fitted to figures imported from {tool}" in " ".join(r.stdout.split())
    r = cli("model", osu, "--json", "--runs-dir", str(d))
    assert r.returncode == 0 and json.loads(r.stdout)
    r = cli("predict", "--from", osu, "-n", "2,4", "--sizes", "8,1K", "--runs-dir", str(d))
    assert r.returncode == 0, r.stderr
    assert "pingpong regimes fitted to imported OSU 7.4 means" in " ".join(r.stdout.split())
    r = cli("plot", osu, imb, "-o", str(tmp_path / "plots"), "--runs-dir", str(d))
    assert r.returncode == 0, r.stderr
    assert {Path(x).name for x in r.stdout.split()} >= {"latency.png", "bandwidth.png"}
    report = tmp_path / "report.html"
    r = cli("report", measured, osu, imb, "-o", str(report), "--runs-dir", str(d))
    assert r.returncode == 0, r.stderr
    html = report.read_text()
    assert "imported</b> from another tool" in html and "averages (means), not medians" in html
    assert "OSU 7.4 osu_latency" in html and "IMB 2021.11 PingPong" in html


def test_the_stored_run_reads_back_as_the_parsed_points(tmp_path):
    path = DATA / "osu-7.4_latency-z_mpich.txt"
    run = Run(import_files([path], runs_dir=tmp_path))
    from dataclasses import replace
    parsed = [replace(p, imported=replace(p.imported, file=str(path.resolve()))) for p in parse_file(path)]
    assert read_records(run.path / "records.jsonl").points == parsed
    assert not any(p.name.startswith(".import-") for p in tmp_path.iterdir())


def test_a_record_names_only_a_statistic_it_has():
    """`estimate` is checked when a line is read: a damaged one is a problem of that line."""
    from mpiscope.records import RecordError, parse_record
    point = {"type": "point", "benchmark": "pingpong", "size": 8, "ranks": 2, "time_us": {"mean": 1.0}}
    assert parse_record({**point, "estimate": "mean"}).median == 1.0
    assert parse_record({**point, "time_us": {"median": 0.9, "mean": 1.0}}).median == 0.9  # the engine's
    with pytest.raises(RecordError, match="'estimate' must be one of median, mean"):
        parse_record({**point, "estimate": "p99"})


def test_sizeless_and_one_sided_osu_tables(tmp_path):
    """Barrier tables have no Size column; one-sided names follow OSU's programs (osu_acc_latency)."""
    bar = tmp_path / "barrier.txt"
    bar.write_text("\n# OSU MPI Barrier Latency Test v7.4\n# Avg Latency(us)\n        0.95\n")
    p, = parse_file(bar, ranks=4)
    assert (p.benchmark, p.size, p.ranks, p.time_us.mean, p.details["osu_avg_us"]) == ("barrier", 0, 4, 0.95, 0.95)
    checked = tmp_path / "checked.txt"  # -c: a Validation column of words
    checked.write_text("# OSU MPI Latency Test v7.4\n# Size       Avg Latency(us)        Validation\n"
                       "1                       3.92              Pass\n2                       2.33              Fail\n")
    assert [p.details["validation"] for p in parse_file(checked)] == ["Pass", "Fail"]
    acc = tmp_path / "acc.txt"
    acc.write_text("# OSU MPI_Accumulate latency Test v7.4\n# Size          Latency (us)\n1      0.15\n")
    p, = parse_file(acc)  # the engine's row; no Synchronization line: no mode to line up with
    assert (p.benchmark, p.imported.tool_benchmark, p.family, p.variant) == ("acc_latency", "osu_acc_latency",
                                                                              "rma", None)
    fop = tmp_path / "fop.txt"  # the engine's fop_latency is sizeless: OSU's 8 bytes are size 0
    fop.write_text("# OSU MPI_Fetch_and_op latency Test v7.4\n# Window creation: MPI_Win_allocate\n"
                   "# Synchronization: MPI_Win_lock/unlock\n# Size          Latency (us)\n8      2.31\n")
    p, = parse_file(fop)
    assert (p.benchmark, p.variant, p.size, p.bytes_per_op, p.details["tool_size"]) == ("fop_latency", "lock", 0, 8, 8)
    assert p.time_us.mean == 2.31 and p.bw_MBps is None
    bibw = tmp_path / "bibw.txt"
    bibw.write_text("# OSU MPI_Put Bi-directional Bandwidth Test v7.4\n# Window creation: MPI_Win_create\n"
                    "# Synchronization: MPI_Win_post/start/complete/wait\n# Size      Bandwidth (MB/s)\n"
                    "1024        2048.00\n")
    p, = parse_file(bibw)
    assert (p.benchmark, p.variant, p.bytes_per_op, p.time_us.mean) == ("put_bibw", "pscw", 2048, 1.0)


IMB_HEAD = "#----\n#    Intel(R) MPI Benchmarks 2021.11, {part}\n#----\n"
IMB_TAIL = "\n\n# All processes entering MPI_Finalize\n\n"


def imb_block(name: str, heading: str, rows: list[str], mode: str | None = None, procs: int = 2) -> str:
    return (f"\n#----\n# Benchmarking {name}\n# #processes = {procs}\n#----\n"
            + (f"#\n#    MODE: {mode}\n#\n" if mode else "") + heading + "\n" + "\n".join(rows) + "\n")


def test_imb_rma_benchmarks_map_to_the_engines_rows_with_their_modes_apart(tmp_path):
    """docs/benchmarks-rma.md: which IMB-RMA benchmark and mode is which engine row and variant."""
    head = "       #bytes #repetitions      t[usec]   Mbytes/sec"
    blocks = [("Accumulate", "NON-AGGREGATE", ["1024  100  1.50  682.67"]),
              ("Accumulate", "AGGREGATE", ["1024  100  0.50  2048.00"]),
              ("Bidir_put", "NON-AGGREGATE", ["1024  100  2.00  512.00"]),
              ("Bidir_put", "AGGREGATE", ["1024  100  1.00  1024.00"]),
              ("Put_local", "NON-AGGREGATE", ["1024  100  0.90  1137.78"]),
              ("Compare_and_swap", "NON-AGGREGATE", ["4  100  1.20  3.33"]),
              ("One_put_all", None, ["1024  100  3.00  341.33"]),
              ("Exchange_get", None, ["1024  100  4.00  256.00"])]
    f = tmp_path / "rma.txt"
    f.write_text(IMB_HEAD.format(part="MPI-RMA part") + "".join(
        imb_block(n, head, rows, mode) for n, mode, rows in blocks) + IMB_TAIL)
    got = [(p.imported.tool_benchmark, p.benchmark, p.variant, p.size, p.time_us.mean, p.bytes_per_op)
           for p in parse_file(f)]
    assert got == [("Accumulate", "acc_latency", "flush", 1024, 1.5, 1024),
                   ("Accumulate", "acc_latency", "flush_aggregate", 1024, 0.5, 1024),
                   ("Bidir_put", "put_bibw", "flush_nonaggregate", 1024, 2.0, 2048),
                   ("Bidir_put", "put_bibw", "flush", 1024, 1.0, 2048),
                   ("Put_local", "put_latency", "flush_local", 1024, 0.9, 1024),
                   ("Compare_and_swap", "cas_latency", "flush", 0, 1.2, 8),
                   ("One_put_all", "one_put_all", "flush", 1024, 3.0, 1024),
                   ("Exchange_get", "exchange_get", "flush", 1024, 4.0, 2048)]
    assert all(p.family == "rma" for p in parse_file(f))


def test_imb_nbc_pure_and_persistent_names_map_to_the_engines_rows(tmp_path, cli_offline):
    nbc = ("       #bytes #repetitions t_ovrl[usec] t_pure[usec]  t_CPU[usec]   overlap[%]", ["8  100  3.0  2.0  2.0  50.00"])
    pure = ("       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]", ["8  100  1.5  1.9  1.7"])
    f = tmp_path / "nbc.txt"
    f.write_text(IMB_HEAD.format(part="NBC part") + imb_block("Ibcast", *nbc) + imb_block("Ibcast_pure", *pure)
                 + imb_block("Igather", *nbc) + IMB_TAIL)
    got = [(p.imported.tool_benchmark, p.benchmark, p.family, p.time_us.mean) for p in parse_file(f)]
    assert got == [("Ibcast", "ibcast", "nbc", 2.0), ("Ibcast_pure", "ibcast", "nbc", 1.7),
                   ("Igather", "igather", "nbc", 2.0)]
    # Ibcast and Ibcast_pure are one row: in the run the second keeps its own configuration
    run = Run(import_files([f], runs_dir=tmp_path / "runs"))
    tags = {p.imported.tool_benchmark: p.tag for p in run.records().points}
    assert tags == {"Ibcast": {}, "Ibcast_pure": {"tool_benchmark": "Ibcast_pure"}, "Igather": {}}
    g = tmp_path / "mpi4.txt"
    g.write_text(IMB_HEAD.format(part="MPI-4 part") + imb_block("Bcast_persist_pure", *pure) + IMB_TAIL)
    p, = parse_file(g)
    assert (p.benchmark, p.family, p.imported.tool_benchmark) == ("bcast_persistent", "persistent",
                                                                  "Bcast_persist_pure")
    r = cli_offline("import", str(f), "--runs-dir", str(tmp_path / "runs2"))
    assert r.returncode == 0 and "Ibcast_pure -> ibcast" in " ".join(r.stdout.split())


def test_table_variation_names_the_statistic_of_imported_points(runs, cli):
    """An imported OSU average is a mean: `table --variation` must not head it 'median us'."""
    from mpiscope.analysis.variation import variation
    from mpiscope.report.table import load_frame, with_config
    from mpiscope.report.variation import variation_table
    d, measured, osu, _ = runs
    r = cli("table", "--variation", osu, "--benchmark", "pingpong", "--runs-dir", str(d))
    assert r.returncode == 0, r.stderr
    assert "mean us" in r.stdout and "median us" not in r.stdout
    both = variation(with_config(load_frame([measured, osu], d)), "pingpong")
    assert set(both["estimate"]) == {"median", "mean"}
    table = variation_table(both)
    assert table.columns[4].header == "estimate us"
    figures = list(table.columns[4].cells)
    assert sum(f.endswith("(mean)") for f in figures) == 17  # osu_latency: 1 B .. 64 KiB
    assert sum(f.endswith("(median)") for f in figures) == 15  # the measured run: 4 B .. 64 KiB


def test_a_model_of_imported_figures_takes_no_clock_from_this_host(runs, cli):
    """The files do not say the clock of the machine they were measured on: cycles only when given."""
    d, _, osu, _ = runs
    r = cli("model", osu, "--runs-dir", str(d))
    assert r.returncode == 0, r.stderr
    assert "clock: unknown" in r.stdout and "/proc/cpuinfo" not in r.stdout and "cpufreq" not in r.stdout
    r = cli("model", osu, "--clock-mhz", "2600", "--runs-dir", str(d))
    assert r.returncode == 0 and "clock: 2600.0 MHz (override)" in r.stdout


# Every MPI benchmark title of OSU 7.4 (`#define BENCHMARK` in its c/mpi sources, "%s" empty for
# host buffers) -> (the OSU program, mpiscope's row). Rows mpiscope lacks keep OSU's name.
OSU_TITLES = {
    "Latency": ("osu_latency", "pingpong"), "Bandwidth": ("osu_bw", "bw"),
    "Bi-Directional Bandwidth": ("osu_bibw", "bibw"),
    "Multiple Bandwidth / Message Rate": ("osu_mbw_mr", "msgrate"),
    "Latency Persistent": ("osu_latency_persistent", "pingpong_persistent"),
    "Bandwidth Persistent": ("osu_bw_persistent", "bw_persistent"),
    "Bi-Directional Bandwidth Persistent": ("osu_bibw_persistent", "osu_bibw_persistent"),
    "Multi Latency": ("osu_multi_lat", "multi_lat"), "Multi-process Latency": ("osu_latency_mp", "latency_mp"),
    "Multi-threaded Latency": ("osu_latency_mt", "latency_mt"),
    **{f"{t} Latency": (f"osu_{n}", n) for t, n in (
        ("Allgather", "allgather"), ("Allgatherv", "allgatherv"), ("Allreduce", "allreduce"),
        ("All-to-All Personalized Exchange", "alltoall"), ("All-to-Allv Personalized Exchange", "alltoallv"),
        ("All-to-Allw Personalized Exchange", "alltoallw"), ("Barrier", "barrier"), ("Broadcast", "bcast"),
        ("Gather", "gather"), ("Gatherv", "gatherv"), ("Reduce", "reduce"), ("Reduce_scatter", "reduce_scatter"),
        ("Reduce_scatter_block", "reduce_scatter_block"), ("Scatter", "scatter"), ("Scatterv", "scatterv"),
        ("Neighborhood Allgather", "neighbor_allgather"), ("Neighborhood Allgatherv", "neighbor_allgatherv"),
        ("Neighborhood Alltoall", "neighbor_alltoall"), ("Neighborhood All-to-Allv", "neighbor_alltoallv"),
        ("Allgather Persistent", "allgather_persistent"), ("Allgatherv Persistent", "allgatherv_persistent"),
        ("Allreduce Persistent", "allreduce_persistent"),
        ("All-to-All Personalized Exchange Persistent", "alltoall_persistent"),
        ("All-to-Allv Personalized Exchange Persistent", "alltoallv_persistent"),
        ("All-to-Allw Personalized Exchange Persistent", "alltoallw_persistent"),
        ("Barrier Persistent", "barrier_persistent"), ("Broadcast Persistent", "bcast_persistent"),
        ("Gather Persistent", "gather_persistent"), ("Gatherv Persistent", "gatherv_persistent"),
        ("Reduce Persistent", "reduce_persistent"), ("Reduce_scatter Persistent", "reduce_scatter_persistent"),
        ("Scatter Persistent", "scatter_persistent"), ("Scatterv Persistent", "scatterv_persistent"))},
    **{f"{t} Latency": (f"osu_{n}", n) for t, n in (
        ("Non-blocking Allgather", "iallgather"), ("Non-blocking Allgatherv", "iallgatherv"),
        ("Non-blocking Allreduce", "iallreduce"), ("Non-blocking All-to-All", "ialltoall"),
        ("Non-blocking All-to-Allv Personalized Exchange", "ialltoallv"),
        ("Non-blocking All-to-Allw Personalized Exchange", "ialltoallw"), ("Non-blocking Barrier", "ibarrier"),
        ("Non-Blocking Broadcast", "ibcast"), ("Non-blocking Gather", "igather"),
        ("Non-blocking Gatherv", "igatherv"), ("Non-blocking Reduce", "ireduce"),
        ("Non-blocking Reduce_scatter", "ireduce_scatter"),
        ("Non-blocking Reduce_scatter_block", "ireduce_scatter_block"), ("Non-blocking Scatter", "iscatter"),
        ("Non-blocking Scatterv", "iscatterv"),
        ("Non-blocking Neighborhood Allgather", "ineighbor_allgather"),
        ("Non-blocking Neighborhood Allgatherv", "ineighbor_allgatherv"),
        ("Non-blocking Neighborhood Alltoall", "ineighbor_alltoall"),
        ("Non-blocking Neighborhood Alltoallv", "ineighbor_alltoallv"),
        ("Non-blocking Neighborhood Alltoallw", "ineighbor_alltoallw"))},
    "_Put Latency": ("osu_put_latency", "put_latency"), "_Get latency": ("osu_get_latency", "get_latency"),
    "_Put Bandwidth": ("osu_put_bw", "put_bw"), "_Get Bandwidth": ("osu_get_bw", "get_bw"),
    "_Put Bi-directional Bandwidth": ("osu_put_bibw", "put_bibw"),
    "_Accumulate latency": ("osu_acc_latency", "acc_latency"),
    "_Get_accumulate latency": ("osu_get_acc_latency", "get_acc_latency"),
    "_Fetch_and_op latency": ("osu_fop_latency", "fop_latency"),
    "_Compare_and_swap latency": ("osu_cas_latency", "cas_latency"),
}


def _osu_text(title: str) -> str:
    """A minimal OSU 7.4 output with `title`, the column heading its kind of program prints."""
    if "Non-" in title:
        heading, row = "# Size   Overall(us)   Compute(us)   Pure Comm.(us)   Overlap(%)", "8   3.0   1.0   2.0   10.0"
    elif "Barrier" in title:
        heading, row = "# Avg Latency(us)", "1.25"
    elif "Message Rate" in title:
        heading, row = "# Size                  MB/s        Messages/s", "8   10.0   1250000.0"
    elif "Bandwidth" in title:
        heading, row = "# Size      Bandwidth (MB/s)", "8   10.0"
    elif title.startswith("_") or title.startswith("Latency") or "Multi" in title:
        heading, row = "# Size          Latency (us)", "8   1.25"
    else:
        heading, row = "# Size       Avg Latency(us)", "8   1.25"
    sep = "" if title.startswith("_") else " "
    return f"# OSU MPI{sep}{title} Test v7.4\n{heading}\n{row}\n"


@pytest.mark.parametrize("title", sorted(OSU_TITLES))
def test_every_osu_74_title_imports_under_the_row_docs_promise(title, tmp_path):
    path = tmp_path / "out.txt"
    path.write_text(_osu_text(title))
    (p,) = parse_file(path, ranks=2)
    assert (p.imported.tool_benchmark, p.benchmark) == OSU_TITLES[title]


@pytest.mark.parametrize("title, program", [("Init", "osu_init"), ("Hello World", "osu_hello")])
def test_osu_start_up_programs_are_refused_with_the_command_that_measures_them(title, program, tmp_path):
    path = tmp_path / "out.txt"
    path.write_text(f"# OSU MPI {title} Test v7.4\nnprocs: 2, min: 10 ms, max: 11 ms, avg: 10.5 ms\n")
    with pytest.raises(ImportFailed, match=f"{program}.*mpiscope run -b init,hello"):
        parse_file(path, ranks=2)


def test_an_import_says_what_it_stored_without_reading_the_run_back(tmp_path):
    """import_run streams each point to disk; its summary (count, tool -> mpiscope names) is the
    one the stored records give, for files of two tools and a size seen in two files."""
    from mpiscope.importers import import_run
    files = [DATA / "osu-7.4_latency_mpich.txt", DATA / "osu-7.4_latency-z_mpich.txt", DATA / "imb-2021_p2p_mpich.txt"]
    done = import_run(files, runs_dir=tmp_path)
    points = Run(done.path).records().points
    assert done.points == len(points) == json.loads((done.path / "run.json").read_text())["points"]
    assert set(done.names) == {(p.imported.tool_benchmark, p.benchmark) for p in points}
    assert sum(p.tag.get("file") == "osu-7.4_latency-z_mpich.txt" for p in points) > 0  # its own configuration


# tables the samples do not hold: -c's words (a size 0, a time 0, Pass and Fail mixed), a sizeless row
MADE = {"osu-checked.txt": "# OSU MPI Latency Test v7.4\n# Size       Avg Latency(us)        Validation\n"
                           "0   1.00   Pass\n1   2.00   Fail\n2   0.00   Pass\n4   3.50   Pass\n8   4.25   Fail\n",
        "osu-fop.txt": "# OSU MPI_Fetch_and_op latency Test v7.4\n# Window creation: MPI_Win_allocate\n"
                       "# Synchronization: MPI_Win_lock/unlock\n# Size          Latency (us)\n8      2.31\n"}


@pytest.mark.parametrize("name", [p.name for p in OSU + IMB] + list(MADE))
def test_a_tables_lines_are_written_from_a_template_per_kind_of_row(name, tmp_path, monkeypatch):
    """An import writes a table's rows from one template per kind of row (records.PointLines): the
    bytes point_line writes for each row's point, over chunks of a few rows: latency, -z medians,
    rates, messages/s, collectives with -f, overlap, one-sided, IMB's four parts, -c, sizeless."""
    from mpiscope.importers import common, imb, osu
    from mpiscope.records import point_line
    path = DATA / name if name not in MADE else tmp_path / name
    if name in MADE:
        path.write_text(MADE[name])
    monkeypatch.setattr(common, "CHUNK", 3)  # rows of a kind across chunks, chunks of several kinds
    parser = osu if name.startswith("osu") else imb
    for chunk in parser.parse(path, path.read_text(), 4 if "allreduce" in name else None).chunks:
        assert all(chunk.template(i) is not None for i in range(chunk.rows))
        assert chunk.text() == b"".join(point_line(chunk.fields(i)) for i in range(chunk.rows))
