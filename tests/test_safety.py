"""Issue 32: no file hangs or exhausts a reader, plans have a cap, nothing is counted twice or
pooled in silence, and the messages name the real fix. Every case for real: a real FIFO, a real
link to /dev/zero read under a memory limit the test sets in the child, real signals, real
runs measured by the engine."""
from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_faults import good_run  # noqa: F401  (the same small real run: pingpong and allreduce on 2 ranks)

SAMPLES = Path(__file__).resolve().parent / "data" / "imports"
READERS = [("show",), ("table",), ("export",), ("model",)]


def one_error_line(r: subprocess.CompletedProcess, fragment: str) -> str:
    said = " ".join(r.stderr.split())
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and fragment in said, said
    assert len([x for x in r.stderr.splitlines() if x.startswith("mpiscope: error:")]) == 1
    return said


def limited(*args: str, memory: int = 2 << 30, timeout: float = 120) -> subprocess.CompletedProcess:
    """mpiscope with its address space capped (set in the child before it starts)."""
    return subprocess.run([sys.executable, "-m", "mpiscope", *args], capture_output=True, text=True,
                          timeout=timeout, env=os.environ.copy(),
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (memory, memory)))


def copy_run(good_run: Path, where: Path, name: str = "copy") -> Path:
    run = where / name
    shutil.copytree(good_run, run, ignore=shutil.ignore_patterns("owner.lock"))
    return run


# -- readers ------------------------------------------------------------------------------------

def repeated_launches(good_run: Path, where: Path, launches: int) -> Path:
    """A copy of `good_run` whose records hold its launch `launches` times (tagged 0, 1, ...),
    every launch's times alike: launches that agree to the last digit, as a coarse clock gives."""
    import json
    run = copy_run(good_run, where, "repeated")
    lines = [json.loads(x) for x in (good_run / "records.jsonl").read_text().splitlines() if x.strip()]
    with open(run / "records.jsonl", "w") as f:
        for launch in range(launches):
            for rec in lines:
                f.write(json.dumps({**rec, "tag": {**rec.get("tag", {}), "launch": launch}}) + "\n")
    return run


def test_the_tidy_table_is_the_frame_of_its_rows(cli, good_run, tmp_path):
    """The tidy table gathered a column at a time is the frame pandas makes of one dict per point,
    value for value and type for type, and the launch-level table and summary of launches that
    agree exactly are shown (not a ZeroDivisionError)."""
    import pandas as pd
    from mpiscope.results.table import tidy
    from mpiscope.store.runs import Run
    from mpiscope_test_fixtures.synthetic import tidy_row_by_row
    run = Run(repeated_launches(good_run, tmp_path, 3))
    rows = tidy_row_by_row(run)
    got = tidy([run])
    assert len(got) == len(rows) > 0 and list(got.columns) == list(rows.columns)
    pd.testing.assert_frame_equal(got, rows)
    for args in (("show",), ("table", "--format", "csv"), ("export",)):
        r = cli(*args, str(run.path))
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("args", READERS)
def test_records_that_are_a_fifo_do_not_hang_a_reader(good_run, tmp_path, args):
    run = copy_run(good_run, tmp_path)
    (run / "records.jsonl").unlink()
    os.mkfifo(run / "records.jsonl")
    r = limited(args[0], str(run), timeout=60)  # a hang is the timeout's error
    assert "Traceback" not in r.stderr
    assert "is a FIFO (named pipe), not the regular file mpiscope writes" in " ".join(r.stderr.split())


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_records_linked_to_a_device_are_refused_within_a_memory_limit(good_run, tmp_path, device):
    run = copy_run(good_run, tmp_path)
    (run / "records.jsonl").unlink()
    (run / "records.jsonl").symlink_to(device)
    r = limited("show", str(run), memory=1 << 30)
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr
    assert "is a character device, not the regular file" in " ".join(r.stderr.split())


def test_a_records_file_far_too_large_is_refused_with_its_size(good_run, tmp_path):
    run = copy_run(good_run, tmp_path)
    with open(run / "records.jsonl", "r+b") as f:
        f.truncate(5 << 30)  # sparse: 5 GiB that take no room
    r = limited("show", str(run), memory=1 << 30)
    assert "Traceback" not in r.stderr
    assert "is 5.0 GiB, far more than a run's records can be" in " ".join(r.stderr.split())


def test_overlong_and_deeply_nested_lines_are_problems_with_their_numbers(good_run, tmp_path):
    run = copy_run(good_run, tmp_path)
    lines = (run / "records.jsonl").read_bytes().splitlines(keepends=True)
    deep = b'{"type": "point", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    long = b'{"type": "point", "x": "' + b"a" * (65 << 20) + b'"}\n'
    (run / "records.jsonl").write_bytes(b"".join([*lines, deep, long]))
    for command in ("show", "table", "export"):
        r = limited(command, str(run), memory=2 << 30)
        said = " ".join(r.stderr.split())
        assert r.returncode == 0 and "Traceback" not in said and "RecursionError" not in said, said
        assert f"line {len(lines) + 1} is corrupt and was skipped (nested deeper than 64 levels" in said
        assert f"line {len(lines) + 2} is longer than 64 MiB" in said


@pytest.mark.parametrize("kind", ["directory", "fifo", "zero"])
def test_a_run_json_that_is_not_a_file_is_named_by_runs(good_run, tmp_path, kind):
    runs = tmp_path / "runs"
    run = copy_run(good_run, runs, "odd")
    copy_run(good_run, runs, "fine")
    meta = run / "run.json"
    meta.unlink()
    {"directory": meta.mkdir, "fifo": lambda: os.mkfifo(meta), "zero": lambda: meta.symlink_to("/dev/zero")}[kind]()
    r = limited("runs", "--runs-dir", str(runs), timeout=60)
    assert r.returncode == 0 and "fine" in r.stdout
    said = " ".join(r.stderr.split())
    assert "left out odd: run.json is" in said and "not the regular file" in said
    shown = limited("show", str(run), timeout=60)
    assert "Traceback" not in shown.stderr


def test_a_run_id_that_is_not_utf8_reports_and_exports(good_run, tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    name = os.fsdecode(b"run-\xff")
    copy_run(good_run, runs, name)
    for args in (("report", name, "-o", str(tmp_path / "r.html")), ("export", name, "-o", str(tmp_path / "e.csv")),
                 ("table", name)):
        r = limited(*args, "--runs-dir", str(runs))
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "run-\ufffd" in (tmp_path / "e.csv").read_text()


def test_a_spec_nested_5000_deep_is_one_line(cli, tmp_path):
    spec = tmp_path / "deep.toml"
    spec.write_text('name = "deep"\n[measure]\nbenchmarks = ["pingpong"]\n[factors]\nranks = '
                    + "[" * 5000 + "2" + "]" * 5000 + "\n")
    one_error_line(cli("sweep", str(spec), "--dry-run"), "deep.toml")


# -- plans ----------------------------------------------------------------------------------------

def big_spec(tmp_path: Path, factors: int) -> Path:
    """A spec of 10**factors configurations (env factors of ten levels each)."""
    spec = tmp_path / "big.toml"
    levels = ", ".join(f'"{i}"' for i in range(10))
    spec.write_text('name = "big"\n[measure]\nbenchmarks = ["pingpong"]\nsizes = "1:1K"\n[factors.env]\n'
                    + "".join(f"V{k} = [{levels}]\n" for k in range(factors)))
    return spec


def test_a_sweep_beyond_the_cap_is_refused_before_it_is_expanded(cli, tmp_path):
    started = time.monotonic()
    said = one_error_line(cli("sweep", str(big_spec(tmp_path, 8)), "--dry-run"),
                          "make 100,000,000 configurations, more than the limit of 10,000")
    assert "--max-configs 100000000" in said
    assert time.monotonic() - started < 60  # not expanded: 10^8 would take many minutes


def test_the_cap_is_raised_by_a_flag(cli, tmp_path):
    spec = big_spec(tmp_path, 2)
    one_error_line(cli("sweep", str(spec), "--dry-run", "--max-configs", "50"), "make 100 configurations")
    r = cli("sweep", str(spec), "--dry-run", "--max-configs", "100")
    assert r.returncode == 0 and "100 configuration(s)" in r.stdout


def test_a_host_list_beyond_the_cap_is_refused(cli, tmp_path):
    hosts = ",".join(f"h{i}" for i in range(10_000))
    said = one_error_line(cli("run", "-b", "pingpong", "-n", "2", "--hosts", hosts, "--submit", "slurm",
                              "--dry-run", "--runs-dir", str(tmp_path)), "--hosts names 10000 hosts")
    assert "more than the limit of 1000" in said and "--max-hosts 10000" in said


@pytest.mark.parametrize("sizes, count", [("1:2G:+1", "2,147,483,648"), ("1:2G:*1.0000001", "64,640,021"),
                                          ("0:4M:+1,1:64", "4,194,312")])
def test_a_size_list_beyond_the_cap_is_refused_before_it_is_expanded(cli_offline, tmp_path, sizes, count):
    """Counted, not expanded: refused before the engine is built or asked (the fast lane's guard
    fails a test that builds or launches), with the count and the limit."""
    said = one_error_line(cli_offline("run", "-b", "pingpong", "--sizes", sizes, "--runs-dir", str(tmp_path)),
                          f"asks for {count} sizes")
    assert "more than the limit of 10,000" in said and "--max-sizes N" in said


def test_the_size_cap_is_lowered_or_raised_by_a_flag(cli_offline, tmp_path):
    said = one_error_line(cli_offline("run", "-b", "pingpong", "--sizes", "1:64", "--max-sizes", "5",
                                      "--runs-dir", str(tmp_path)), "asks for 7 sizes")
    assert "more than the limit of 5" in said
    from mpiscope.plan.sizecap import check_size_count
    from mpiscope.util.errors import UsageError
    with pytest.raises(UsageError, match="asks for 20,001 sizes"):
        check_size_count("0:20000:+1", None)
    check_size_count("0:20000:+1", 100_000)  # raised: passes


def test_a_host_list_that_names_no_host_is_refused(cli_offline, tmp_path):
    """`--hosts ,` is a slip, not "no --hosts": it used to start the default run (bench/fuzz's one hang)."""
    one_error_line(cli_offline("run", "--hosts", ",", "-n", "2", "--runs-dir", str(tmp_path)), "--hosts")


def test_sigterm_while_planning_is_honoured(tmp_path, mpiscope_home, embedded_mpi):
    spec = big_spec(tmp_path, 5)  # 100,000 configurations: planned for far longer than the test waits
    p = subprocess.Popen([sys.executable, "-m", "mpiscope", "sweep", str(spec), "--dry-run", "--max-configs",
                          "100000"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # planning has begun once it has used more CPU than starting Python and mpiscope takes (~1 s)
    deadline = time.monotonic() + 300
    while cpu_seconds(p.pid) < 3:
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.1)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "Traceback" not in err
    assert "nothing was measured and nothing half-made is kept" in " ".join(err.split())


def cpu_seconds(pid: int) -> float:
    """User and system CPU time a process has used so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- nothing counted twice, nothing pooled --------------------------------------------------------

@pytest.mark.parametrize("args", [("compare", "A", "A"), ("compare", "A,A", "B"), ("table", "A", "A"),
                                  ("model", "A", "A")])
def test_a_run_named_twice_is_refused(cli, good_run, tmp_path, args):
    runs = tmp_path / "runs"
    copy_run(good_run, runs, "A")
    copy_run(good_run, runs, "B")
    one_error_line(cli(*args, "--runs-dir", str(runs)), "twice")


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    from mpiscope.importers import import_files
    where = tmp_path_factory.mktemp("imported")
    return import_files([SAMPLES / "osu-7.4_latency_mpich.txt"], mpi_label="MPICH", runs_dir=where)


@pytest.mark.parametrize("args", [("model", "{imp}", "{run}"), ("compare", "{imp},{run}", "{run2}")])
def test_imported_means_are_never_pooled_with_measured_launches(cli, good_run, imported, tmp_path, args):
    runs = tmp_path / "runs"
    run, run2 = copy_run(good_run, runs, "A"), copy_run(good_run, runs, "B")
    names = {"imp": str(imported), "run": str(run), "run2": str(run2)}
    said = one_error_line(cli(*[a.format(**names) for a in args]), "cannot be pooled")
    assert "imported run(s)" in said and "measured run(s)" in said


def test_an_import_with_a_size_twice_is_refused(cli, tmp_path):
    text = (SAMPLES / "osu-7.4_latency_mpich.txt").read_text()
    row = next(line for line in text.splitlines() if line.startswith("8 "))
    twice = tmp_path / "twice.txt"
    twice.write_text(text + row + "\n")
    said = one_error_line(cli("import", str(twice), "--runs-dir", str(tmp_path / "runs")), "appears twice")
    assert "at 8 B" in said
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


# -- messages that name the real fix, nothing half-made --------------------------------------------

def test_a_runs_dir_through_a_symlink_loop_names_the_loop(cli, tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    one_error_line(cli("run", "-b", "pingpong", "-n", "2", "--sizes", "1", "--no-progress", "--no-report",
                       "--runs-dir", str(loop)), "symbolic link that loops back to itself")
    one_error_line(cli("runs", "--runs-dir", str(loop)), "symbolic link that loops back to itself")


@pytest.mark.parametrize("var", ["MPISCOPE_HOME", "XDG_DATA_HOME", "HOME"])
def test_a_home_that_is_a_file_names_the_variable(cli, tmp_path, var):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    env = {"MPISCOPE_HOME": "", "XDG_DATA_HOME": "", var: str(a_file)}
    said = one_error_line(cli("run", "-b", "pingpong", "-n", "2", "--sizes", "1", "--no-progress", "--no-report",
                              "--runs-dir", str(tmp_path / "runs"), env=env), f"point {var} at a directory")
    assert "--runs-dir" not in said


def test_sigterm_during_the_first_engine_build_leaves_nothing(tmp_path, embedded_mpi):
    home = tmp_path / "home"
    p = subprocess.Popen([sys.executable, "-m", "mpiscope", "run", "-b", "pingpong", "-n", "2", "--sizes", "1",
                          "--no-progress", "--no-report", "--runs-dir", str(tmp_path / "runs")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "MPISCOPE_HOME": str(home)})
    builds = home / "builds"
    deadline = time.monotonic() + 120
    while not (builds.is_dir() and any(builds.iterdir())):
        assert p.poll() is None and time.monotonic() < deadline, "the build never started"
        time.sleep(0.05)
    time.sleep(1)  # make and the compiler at work
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    said = " ".join(err.split())
    assert p.returncode == 130 and "nothing was measured and nothing half-made is kept" in said, said
    assert "--resume" not in said
    assert list(builds.iterdir()) == []
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_sigterm_during_mpi_add_leaves_no_managed_folder(tmp_path):
    home = tmp_path / "home"
    p = subprocess.Popen([sys.executable, "-m", "mpiscope", "mpi", "add", "openmpi", "--name", "cut"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "MPISCOPE_HOME": str(home)})
    deadline = time.monotonic() + 120
    while not (home / "managed" / "cut" / "bin").is_dir():
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    said = " ".join(err.split())
    assert p.returncode == 130 and "nothing was measured" in said and "--resume" not in said, said
    assert not (home / "managed" / "cut").exists()
