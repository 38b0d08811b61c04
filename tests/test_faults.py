"""Storage faults, damaged files and bad input (issue 18), each injected for real: read-only and
full file systems are small tmpfs mounts the tests create and remove (skipped where mounting is
not allowed), runs are measured by the real engine under the real mpiexec, mpiscope is killed
with SIGKILL and signalled with SIGTERM and SIGHUP."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from mpiscope.cli import main
from mpiscope_test_fixtures.synthetic import measured_run


@contextmanager
def tmpfs(where: Path, size: str, read_only: bool = False):
    """A small tmpfs at `where` for the test's life (root only; skipped otherwise)."""
    where.mkdir(parents=True, exist_ok=True)
    opts = f"size={size}" + (",ro" if read_only else "")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def one_error_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = [line for line in r.stderr.splitlines() if "error:" in line]
    assert lines, r.stderr
    return " ".join(r.stderr.split())


def records_of(run: Path) -> list[dict]:
    text = (run / "records.jsonl").read_bytes()
    assert not text or text.endswith(b"\n"), "a half line at the end of records.jsonl"
    return [json.loads(line) for line in text.decode().splitlines()]


@pytest.fixture(scope="module")
def good_run(cli, tmp_path_factory) -> Path:
    """A small real run: pingpong and allreduce from 1 B to 4 KiB on 2 ranks."""
    return measured_run(cli, tmp_path_factory.mktemp("good"), "-b", "pingpong,allreduce", "-n", "2", "--sizes", "1:4K",
                        "--reps", "10", "--launches", "1")


def copy_of(run: Path, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copytree(run, into / run.name))


# -- 1. unwritable or full runs directory --------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["run", "-b", "pingpong", "--sizes", "8", "--reps", "5"],
    ["study", "grid", "-n", "2", "--sizes", "64K"],
])
def test_a_read_only_runs_dir_is_one_line(cli, tmp_path, args):
    with tmpfs(tmp_path / "ro", "1m", read_only=True) as ro:
        msg = one_error_line(cli(*args, "--no-progress", "--runs-dir", str(ro)))
    assert "Read-only file system" in msg and "writable --runs-dir" in msg


def test_a_runs_dir_that_is_a_file_is_one_line(cli, tmp_path):
    (tmp_path / "file").write_text("x")
    msg = one_error_line(cli("run", "-b", "pingpong", "--sizes", "8", "--runs-dir", str(tmp_path / "file")))
    assert "--runs-dir" in msg


def test_a_sweep_into_a_read_only_runs_dir_is_one_line(cli_offline, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nname = "ro"\n[measure]\nbenchmarks = ["pingpong"]\nsizes = "8"\nranks = 2\n')
    with tmpfs(tmp_path / "ro", "1m", read_only=True) as ro:
        one_error_line(cli_offline("sweep", str(spec), "--no-progress", "--runs-dir", str(ro)))


def test_a_disk_that_fills_during_a_raw_run_leaves_a_consistent_run(cli, tmp_path):
    with tmpfs(tmp_path / "full", "200k") as full:
        msg = one_error_line(cli("run", "-b", "pingpong", "--sizes", "1:1M", "--reps", "2000", "--raw",
                                 "--launches", "1", "--no-progress", "--runs-dir", str(full), timeout=300))
        assert "No space left on device" in msg and "--resume" in msg
        (run,) = full.iterdir()
        meta = json.loads((run / "run.json").read_text())
        assert meta["status"] == "failed" and "No space left" in meta["error"]
        assert sorted(p.name for p in run.iterdir()) == ["owner.lock", "records.jsonl", "run.json",
                                                          "stderr.txt"]  # no .tmp
        records = records_of(run)   # whole lines only
        assert records and records[0]["type"] == "context"
        # freed, the run resumes in place to completion
        kept = copy_of(run, tmp_path / "roomy")
    r = cli("run", "--resume", str(kept), "--no-progress", "--no-report", timeout=300)
    assert r.returncode == 0, r.stderr
    done = {rec["size"] for rec in records_of(kept) if rec["type"] in ("point", "skip", "timeout")}
    assert done == {1 << k for k in range(21)}  # every size has its result (a busy machine may time one out)


# -- 2. resume after a half line -----------------------------------------------------------------

def test_resume_after_a_half_line_starts_on_a_fresh_line(cli, good_run, tmp_path):
    run = copy_of(good_run, tmp_path)
    expected = sorted((rec["benchmark"], rec["size"]) for rec in records_of(run) if rec["type"] == "point")
    data = (run / "records.jsonl").read_bytes()
    cut = len(data) // 2
    assert data[cut - 1:cut] != b"\n"
    (run / "records.jsonl").write_bytes(data[:cut])
    r = cli("run", "--resume", str(run), "--no-progress", "--no-report", timeout=300)
    assert r.returncode == 0, r.stderr
    records = records_of(run)  # every line parses: the fragment is gone, nothing glued onto it
    assert sum(rec["type"] == "context" for rec in records) == 2
    keys = sorted((rec["benchmark"], rec["size"]) for rec in records if rec["type"] == "point")
    assert keys == expected
    assert json.loads((run / "run.json").read_text())["points"] == len(keys)   # the fragment is not counted
    shown = cli("show", str(run))
    # whole again: nothing to say about the files (the measurement's own warnings may remain)
    assert shown.returncode == 0 and "records.jsonl" not in shown.stderr and "run.json" not in shown.stderr, \
        shown.stderr


def test_a_sweep_log_cut_mid_line_keeps_the_next_entry(tmp_path):
    from mpiscope.store.runs import SweepDir, SweepEntry
    sd = SweepDir(tmp_path)
    sd.log(SweepEntry("c001", 0, run="a", status="ok"))
    with open(tmp_path / "results.jsonl", "ab") as f:
        f.write(b'{"config": "c002", "lau')
    sd.log(SweepEntry("c002", 0, run="b", status="ok"))
    assert [(e.config, e.run) for e in sd.entries()] == [("c001", "a"), ("c002", "b")]


# -- 3. reports, plots and exports on a full disk ------------------------------------------------

def fill(where: Path) -> None:
    """Leave no room on the file system of `where`."""
    with open(where / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass


def test_report_plot_export_on_a_full_disk_leave_nothing_half_written(cli, good_run, tmp_path):
    with tmpfs(tmp_path / "full", "2m") as full:
        run = copy_of(good_run, full)
        fill(full)
        before = set(p.name for p in run.iterdir())
        msg = one_error_line(cli("report", str(run)))
        assert "No space left" in msg and "nothing was written" in msg
        one_error_line(cli("plot", str(run)))
        one_error_line(cli("export", str(run), "--format", "parquet", "-o", str(full / "x.parquet")))
        assert set(p.name for p in run.iterdir()) == before          # no report.html, no .tmp, no plot
        assert not (full / "x.parquet").exists() and not list(full.glob("*.tmp"))


def test_a_run_whose_report_does_not_fit_fails_with_the_fix(cli, tmp_path):
    with tmpfs(tmp_path / "full", "120k") as full:  # the records fit, a report (~140 KB) does not
        r = cli("run", "-b", "pingpong", "--sizes", "1:4K", "--reps", "10", "--launches", "1", "--no-progress",
                "--runs-dir", str(full), timeout=300)
        msg = one_error_line(r)
        (run,) = [p for p in full.iterdir()]
        assert "report.html" in msg and "mpiscope report" in msg
        assert json.loads((run / "run.json").read_text())["status"] == "ok"   # the measurement is whole
        assert not (run / "report.html").exists() and not list(run.glob("*.tmp"))


def test_a_sweep_whose_report_does_not_fit_fails_with_the_fix(cli, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('[measure]\nbenchmarks = ["pingpong"]\nsizes = "1:4K"\nreps = 5\n'
                    '[factors]\nranks = [2]\nenv.MPISCOPE_FAULT_LEVEL = ["1", "2"]\n')
    with tmpfs(tmp_path / "full", "150k") as full:  # two runs' records fit, the sweep's report does not
        msg = one_error_line(cli("sweep", str(spec), "--launches", "1", "--no-progress", "--runs-dir", str(full),
                                 timeout=300))
        assert "report.html" in msg and "No space left" in msg and "mpiscope report" in msg
        (sweep,) = (full / "sweeps").iterdir()
        assert sorted(p.name for p in sweep.iterdir()) == ["owner.lock", "results.jsonl",
                                                          "sweep.json"]  # no report, no .tmp
        runs = [p for p in full.iterdir() if p.name != "sweeps"]
        assert len(runs) == 2
        for run in runs:   # the measurements are whole
            assert json.loads((run / "run.json").read_text())["status"] == "ok"
            assert any(rec["type"] == "point" for rec in records_of(run))


def test_plots_inside_a_run_on_a_disk_that_fills_midway_leave_none(cli, good_run, tmp_path):
    with tmpfs(tmp_path / "full", "2m") as full:
        run = copy_of(good_run, full)
        before = set(p.name for p in run.iterdir())
        free = os.statvfs(full).f_bavail * os.statvfs(full).f_frsize
        (full / "filler").write_bytes(b"\0" * (free - 80 * 1024))   # room for one plot (~50 KB), not three
        msg = one_error_line(cli("plot", str(run)))
        assert "No space left" in msg and "free some space" in msg
        assert set(p.name for p in run.iterdir()) == before   # no plot of a cut-short set, no temporary file
        (full / "filler").unlink()
        r = cli("plot", str(run))                             # freed, every plot is written
        assert r.returncode == 0, r.stderr
        assert {p.suffix for p in run.iterdir()} >= {".png"} and len(list(run.glob("*.png"))) >= 2


# -- 4, 5. damaged records and run.json ----------------------------------------------------------

BAD_RECORDS = [
    '{"type": "point", "benchmark": 5, "size": 8}',
    '{"type": "point", "benchmark": "pingpong", "size": "x"}',
    '{"type": "point"}',
    '{"type": "timeout", "benchmark": null, "size": null}',
    '{"type": "point", "benchmark": "pingpong", "size": -5}',
    '{"type": "point", "benchmark": "pingpong", "size": 8, "ranks": "two"}',
    '{"type": "point", "benchmark": "pingpong", "size": 1e400}',
    '[1, 2]', '"text"', '{"type": "context", "ranks": []}',
]

READERS = [["show"], ["table"], ["report", "-o", "{tmp}/r.html"], ["plot", "-o", "{tmp}/plots"], ["model"],
           ["export", "--format", "parquet", "-o", "{tmp}/x.parquet"], ["export", "--format", "csv"]]


@pytest.mark.parametrize("reader", READERS, ids=lambda r: "-".join(r[:2]))
def test_records_with_wrong_fields_are_skipped_and_reported(cli, good_run, tmp_path, reader):
    run = copy_of(good_run, tmp_path / "runs")
    with open(run / "records.jsonl", "a") as f:
        f.write("\n".join(BAD_RECORDS) + "\n")
    r = cli(*[a.format(tmp=tmp_path) for a in reader[:1]], str(run), *[a.format(tmp=tmp_path) for a in reader[1:]])
    assert "Traceback" not in r.stderr
    assert r.returncode == 0, r.stderr
    assert "line" in r.stderr, r.stderr  # every reader names the lines it left out


def test_predict_from_damaged_records(cli, good_run, tmp_path):
    run = copy_of(good_run, tmp_path)
    with open(run / "records.jsonl", "a") as f:
        f.write("\n".join(BAD_RECORDS) + "\n")
    r = cli("predict", "--from", str(run))
    assert "Traceback" not in r.stderr and r.returncode in (0, 2)


BAD_RUN_JSON = ["[]", "null", '"x"', '{"status": 5}', '{"format": 2, "parts": [1]}',
                '{"format": 2, "mpi": "x", "launches": "y", "points": "z"}', '{"id": 5, "pid": "x"}', "{"]


def test_a_damaged_run_json_breaks_neither_runs_nor_its_readers(cli, good_run, tmp_path):
    runs = tmp_path / "runs"
    for k, text in enumerate(BAD_RUN_JSON):
        run = copy_of(good_run, runs / f"d{k}")
        (run / "run.json").write_text(text)
        shutil.move(str(run), str(runs / f"bad-{k}"))
        (runs / f"d{k}").rmdir()
    copy_of(good_run, runs)
    r = cli("runs", "--runs-dir", str(runs))
    assert r.returncode == 0 and "Traceback" not in r.stderr
    assert r.stdout.count("unreadable") == len(BAD_RUN_JSON) and good_run.name in r.stdout
    bad = runs / "bad-0"
    for args in (["show", str(bad)], ["table", str(bad)], ["export", str(bad)], ["report", str(bad)]):
        r = cli(*args)
        assert "Traceback" not in r.stderr and r.returncode in (0, 2), (args, r.stderr)
    msg = one_error_line(cli("run", "--resume", str(bad)))
    assert "cannot be resumed" in msg and "not an object" in msg


def test_a_reader_that_succeeds_on_damage_says_so(cli, good_run, tmp_path):
    """Damage skipped is named (file, and line or field); an unknown extra field is read past."""
    lost = copy_of(good_run, tmp_path / "lost")
    (lost / "records.jsonl").write_bytes(b"")
    broken = copy_of(good_run, tmp_path / "broken")
    (broken / "run.json").write_text('{"format": 2, "status": 5}')
    extra = copy_of(good_run, tmp_path / "extra")
    lines = [json.loads(x) for x in (extra / "records.jsonl").read_text().splitlines()]
    (extra / "records.jsonl").write_text("".join(json.dumps({**x, "added_later": 1}) + "\n" for x in lines))
    r = cli("show", str(lost))
    assert r.returncode == 0 and "records.jsonl holds 0" in r.stderr and "were lost" in r.stderr, r.stderr
    for args in (["show", str(broken)], ["table", str(broken)], ["runs", "--runs-dir", str(broken.parent)]):
        r = cli(*args)
        assert r.returncode == 0, r.stderr
        assert "warning:" in r.stderr and "run.json" in r.stderr and "'status'" in r.stderr, (args, r.stderr)
    r = cli("show", str(extra))  # fields added later: nothing to say about the files
    assert r.returncode == 0 and "records.jsonl" not in r.stderr and "run.json" not in r.stderr, r.stderr
    bad_line = copy_of(good_run, tmp_path / "bad-line")
    with open(bad_line / "records.jsonl", "a") as f:
        f.write('{"type": "point", "benchmark": 5, "size": 8}\n')
    r = cli("run", "--resume", str(bad_line), "--no-progress", "--no-report")   # complete: nothing launched
    assert r.returncode == 0 and "records.jsonl line" in r.stderr and "skipped" in r.stderr, r.stderr


# -- 6, 7. a SIGKILLed mpiscope: its run shows stopped, its ranks end ----------------------------

def ranks_of(pid: int) -> list[int]:
    """Processes started for the mpiscope `pid` (the engine's environment names it)."""
    found = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"MPISCOPE_PARENT_PID={pid}\0".encode() in env.read_bytes():
                found.append(int(env.parent.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("mpi", [[], ["--mpi", "openmpi"]], ids=["mpich", "openmpi"])
def test_ranks_stop_soon_after_mpiscope_is_killed_and_runs_says_stopped(cli, tmp_path, mpi, request):
    if mpi:
        request.getfixturevalue("openmpi_prefix")
    proc = subprocess.Popen([sys.executable, "-m", "mpiscope", "run", *mpi, "-b", "pingpong", "--sizes", "8",
                             "--reps", "10000000", "--launches", "1", "--no-progress", "--no-report",
                             "--runs-dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len([p for p in ranks_of(proc.pid)
                                                   if b"mpiscope-engine" in Path(f"/proc/{p}/cmdline").read_bytes()]) < 2:
            time.sleep(0.2)
        assert len(ranks_of(proc.pid)) >= 2, "the ranks never started"
        time.sleep(1)
    finally:
        proc.kill()
        proc.wait()
    gone_at = time.monotonic()
    while ranks_of(proc.pid) and time.monotonic() - gone_at < 10:
        time.sleep(0.1)
    left = ranks_of(proc.pid)
    for pid in left:  # never leave them spinning, whatever the verdict
        os.kill(pid, signal.SIGKILL)
    assert not left, f"ranks still running {time.monotonic() - gone_at:.1f} s after mpiscope was killed"
    assert time.monotonic() - gone_at < 3
    r = cli("runs", "--runs-dir", str(tmp_path))
    assert r.returncode == 0 and " stopped " in r.stdout and "--resume" in r.stdout


def test_a_run_marked_running_by_a_dead_pid_is_stopped(cli, good_run, tmp_path):
    import socket
    run = copy_of(good_run, tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    meta = json.loads((run / "run.json").read_text())
    meta.update(status="running", pid=dead.pid, host=socket.gethostname())
    (run / "run.json").write_text(json.dumps(meta))
    r = cli("runs", "--runs-dir", str(tmp_path))
    assert " stopped " in r.stdout and " running " not in r.stdout


# -- 9, 10, 14. nonsense is refused, before anything is launched ----------------------------------

NONSENSE = [
    (["run", "-b", ""], "expects one or more names"),
    (["run", "--clock-mhz", "-5"], "--clock-mhz"),
    (["run", "--clock-mhz", "0"], "--clock-mhz"),
    (["run", "--reps", "0"], "--reps"),
    (["run", "-b", "pingpong", "--sbatch-args", "x"], "--sbatch-args goes with --submit"),
    (["run", "--mpi", ""], "name is empty"),
    (["run", "-n", "100000", "-b", "pingpong"], "far beyond"),
    (["study", "grid", "-n", "1000"], "far beyond"),
    (["study", "ring", "-n", "1000"], "far beyond"),
    (["study", "ring", "-n", "0"], "at least 1"),
    (["study", "grid", "-n", "0"], "at least 1"),
    (["predict", "--alpha", "nan", "--beta", "1"], "--alpha"),
    (["predict", "--alpha", "1", "--beta", "inf"], "--beta"),
    (["mpi", "show", ""], "name is empty"),
    (["runs", "--runs-dir", "/nonexistent"], "is not a directory"),
    (["pairs", "x", "--top", "0"], "--top"),
    (["run", "--launch-target", "nan"], "--launch-target"),
    (["run", "--nodes", "0"], "--nodes"),
    (["doctor", "-n", "100000", "--timeout", "5"], "far beyond"),
]


def call(argv: list[str]) -> int:
    """mpiscope in this process (nothing here launches): its exit status, argparse's included."""
    try:
        return main(argv)
    except SystemExit as e:
        return int(e.code or 0)


@pytest.mark.parametrize("args, fragment", NONSENSE, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_nonsense_is_refused_before_anything_runs(embedded_mpi, tmp_path, capsys, args, fragment):
    code = call([*args, *(["--runs-dir", str(tmp_path)] if args[0] in ("run", "study") else [])])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2, err
    assert fragment in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())  # no run directory was made


def test_oversubscribe_lets_a_user_insist():
    from mpiscope.util.errors import UsageError
    from mpiscope.launchers.placement import Placement, check_room
    with pytest.raises(UsageError, match="--oversubscribe"):
        check_room(100000, Placement(), cores=2)
    check_room(100000, Placement(), cores=2, insist=True)
    check_room(16, Placement(), cores=2)
    check_room(40, Placement(hosts=("a", "b", "c")), cores=2)


def test_a_sweep_of_huge_rank_counts_is_refused_unless_insisted(cli, tmp_path):
    spec = tmp_path / "big.toml"
    body = '[measure]\nbenchmarks = ["pingpong"]\nsizes = "8"\n{extra}[factors]\nranks = [2, 100000]\n'
    spec.write_text(body.format(extra=""))
    runs = tmp_path / "runs"
    for extra in ([], ["--dry-run"]):
        msg = one_error_line(cli("sweep", str(spec), *extra, "--no-progress", "--runs-dir", str(runs)))
        assert "ranks=100000" in msg and "far beyond" in msg and "--oversubscribe" in msg
        assert "oversubscribe = true" in msg
    assert not runs.exists()  # refused before anything was made or launched
    r = cli("sweep", str(spec), "--dry-run", "--oversubscribe", "--runs-dir", str(runs))   # the CLI insists
    assert r.returncode == 0, r.stderr
    assert "-n 100000" in r.stdout
    spec.write_text(body.format(extra="oversubscribe = true\n"))                            # the spec insists
    r = cli("sweep", str(spec), "--dry-run", "--runs-dir", str(runs))
    assert r.returncode == 0, r.stderr
    assert "-n 100000" in r.stdout
    spec.write_text(body.format(extra='hosts = ["a", "b"]\n').replace("100000", "20"))  # room on two hosts
    r = cli("sweep", str(spec), "--dry-run", "--runs-dir", str(runs))
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("args, fragment", [
    (["run", "--resume", "{run}", "--sizes", "-1"], "leave out --sizes"),
    (["run", "--resume", "{run}", "-b", "nosuchbench"], "leave out --bench"),
    (["table", "{run}", "--latency-upto", "-5"], "--latency-upto"),
    (["plot", "{run}", "-o", "/proc/x"], "cannot write the plots"),
    (["plot", "{run}", "-o", "{file}"], "is a file, not a directory"),
])
def test_nonsense_about_a_run_is_refused(cli, good_run, tmp_path, args, fragment):
    (tmp_path / "file").write_text("x")
    r = cli(*[a.format(run=good_run, file=tmp_path / "file") for a in args])
    assert r.returncode == 2 and fragment in " ".join(r.stderr.split()) and "Traceback" not in r.stderr


def test_output_into_a_read_only_dir_is_one_line(cli, good_run, tmp_path):
    with tmpfs(tmp_path / "ro", "1m", read_only=True) as ro:
        assert "Read-only" in one_error_line(cli("plot", str(good_run), "-o", str(ro)))
        assert "Read-only" in one_error_line(cli("report", str(good_run), "-o", str(ro / "r.html")))


@pytest.mark.parametrize("content, fragment", [(b"\xff\xfe", "not UTF-8"), (b"", "is empty"),
                                               (b"# only a comment\n", "is empty")])
def test_a_spec_that_is_not_text_or_empty_is_refused(cli_offline, tmp_path, content, fragment):
    (tmp_path / "s.toml").write_bytes(content)
    assert fragment in one_error_line(cli_offline("sweep", str(tmp_path / "s.toml"), "--runs-dir", str(tmp_path / "r")))
    assert not (tmp_path / "r").exists()


# -- 11. engine sizes -------------------------------------------------------------------------

@pytest.mark.parametrize("sizes", ["2147483647G", "1:2147483647G", "1:64:*0x2"])
def test_the_engine_refuses_sizes_that_overflow(mpich_engine, mpich_mpiexec, sizes):
    r = subprocess.run([str(mpich_mpiexec), "-n", "2", str(mpich_engine), "--sizes", sizes, "--units", "words",
                        "--reps", "2", "pingpong"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "error" in r.stderr and '"type": "point"' not in r.stdout


# -- 12. a relaunch's wall clock follows its watchdog ---------------------------------------------

def test_a_relaunch_wall_clock_limit_is_above_its_watchdog(mpich_engine):
    from mpiscope.execute.part import launch_limit_s
    from mpiscope.plan.engine import Plan, engine_plan
    planned = engine_plan(mpich_engine, Plan(("pingpong", "allreduce"), 2, sizes="1:64K", max_time_s=0.2))
    for k in (1, 3, len(planned.points)):
        entries = list(planned.points[-k:])
        timeout = 86.2
        watchdog = sum(e.phases * (timeout + max(0.1 * timeout, 1.0)) for e in entries)  # ranks > 0 wait longer
        assert launch_limit_s(planned, entries, timeout) > watchdog
        assert launch_limit_s(planned, entries, None) == planned.wall_limit_s(entries)


# -- 13. SIGTERM and SIGHUP after the measurement ------------------------------------------------

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_termination_signal_while_the_report_is_written_is_an_interrupt(tmp_path, embedded_mpi, sig):
    proc = subprocess.Popen([sys.executable, "-m", "mpiscope", "run", "-b", "pingpong,allreduce", "--sizes",
                             "1:64K", "--reps", "10", "--launches", "1", "--no-progress", "--runs-dir",
                             str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        meta = next(tmp_path.glob("*/run.json"), None)
        try:
            if meta and json.loads(meta.read_text())["status"] != "running":
                break
        except ValueError:
            pass
        time.sleep(0.02)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in err and "Traceback" not in err
    (run,) = tmp_path.iterdir()
    assert json.loads((run / "run.json").read_text())["status"] in ("ok", "interrupted")
    assert not list(run.glob("*.tmp")) and not list(run.glob(".*.tmp*"))
    report = run / "report.html"
    assert not report.exists() or report.read_text().endswith("</html>\n")
    records_of(run)


# -- files read later: a batch job's measurement, the engine's MPI cache --------------------------

def test_a_measurement_saved_for_a_batch_job_is_whole_or_absent(embedded_mpi, tmp_path):
    from mpiscope.plan.spec import expand, load_spec
    from mpiscope.execute.submit import load_measurement, save_measurement
    from mpiscope.execute.sweep import plan_sweep
    spec = tmp_path / "s.toml"
    spec.write_text('[measure]\nbenchmarks = ["pingpong"]\nsizes = "1:4K"\n[factors]\nranks = [2]\n'
                    'engine_options = ["--window 8"]\n')
    s = load_spec(spec)
    ((_, m),) = plan_sweep(s, expand(s))
    with tmpfs(tmp_path / "full", "64k") as full:
        fill(full)
        with pytest.raises(OSError):
            save_measurement(m, full / "batch" / "job.json")
        assert not list((full / "batch").iterdir())   # no part of it for the job to read
        (full / "filler").unlink()
        save_measurement(m, full / "batch" / "job.json")
        assert load_measurement(full / "batch" / "job.json") == m


def test_a_damaged_mpi_info_cache_is_asked_again(mpich_engine, tmp_path):
    from mpiscope.mpi.build import mpi_info
    engine = Path(shutil.copy2(mpich_engine, tmp_path / mpich_engine.name))
    (tmp_path / "mpi-info.json").write_text('{"library": "MPICH Vers')   # cut short by a crash
    info = mpi_info(engine)
    assert isinstance(info, dict) and info
    assert json.loads((tmp_path / "mpi-info.json").read_text()) == info
    assert not list(tmp_path.glob("*.tmp"))


def test_the_ring_study_names_no_option_it_lacks(mpiscope_home, embedded_mpi, tmp_path, capsys):
    assert call(["study", "ring", "-n", "1000", "--runs-dir", str(tmp_path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "far beyond" in err and "--oversubscribe" in err and "--hosts" not in err and "--nodes" not in err
