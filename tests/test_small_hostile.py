"""The smaller cases of a hostile or clumsy user (issue 47): each gives the message that names
what is wrong, in one line, never a traceback, a silent empty answer or the wrong command."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpiscope.util.errors import UsageError

OSU = Path(__file__).parent / "data" / "imports" / "osu-7.4_latency_mpich.txt"


def one_error_line(r: subprocess.CompletedProcess, *words: str) -> str:
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpiscope: error: "), r.stderr[-3000:]
    assert "Traceback" not in r.stderr and all(w in lines[0] for w in words), lines
    return lines[0]


def test_show_of_a_run_whose_directory_name_is_not_utf8(osu_run, cli_offline):
    odd = osu_run.parent / os.fsdecode(b"run-\xff\xfe")
    osu_run.rename(odd)
    r = cli_offline("show", str(odd))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "saved in" in r.stdout


def test_show_of_a_run_whose_run_json_is_a_directory_says_so(osu_run, cli_offline):
    (osu_run / "run.json").unlink()
    (osu_run / "run.json").mkdir()
    said = one_error_line(cli_offline("show", str(osu_run)), "is a directory")
    assert "no run" not in said


def test_runs_of_a_runs_variable_that_is_no_directory_is_refused(cli_offline, tmp_path):
    one_error_line(cli_offline("runs", env={"MPISCOPE_RUNS": "/dev/null"}), "MPISCOPE_RUNS=/dev/null",
                   "is not a directory")


def test_a_platform_key_given_twice_is_refused():
    from mpiscope.launchers.platform import parse
    with pytest.raises(UsageError, match="nodes is given twice"):
        parse("cluster:nodes=2,nodes=3", 2)


@pytest.mark.parametrize("hosts", ["a..b", "a.", "a" * 64])
def test_a_host_name_with_an_empty_or_bad_label_is_refused(hosts, tmp_path, capsys):
    from mpiscope.cli import main
    code = main(["run", f"--hosts={hosts}", "--submit", "slurm", "--dry-run", "--runs-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "is not a host name" in err and len(err.splitlines()) == 1


def test_a_home_that_cannot_be_written_is_named(monkeypatch, tmp_path):
    from mpiscope.util import paths
    monkeypatch.setenv("MPISCOPE_HOME", str(tmp_path / "home"))
    fix = paths.home_fix(tmp_path / "home" / "builds" / "x")
    assert fix is not None and "MPISCOPE_HOME" in fix and "--runs-dir" not in fix
    assert paths.home_fix(tmp_path / "elsewhere") is None


def test_an_osu_file_with_a_byte_order_mark_is_imported(tmp_path, cli_offline):
    bom = tmp_path / "osu.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + OSU.read_bytes())
    r = cli_offline("import", str(bom), "--mpi-label", "x", "--runs-dir", str(tmp_path / "runs"))
    assert r.returncode == 0, r.stderr


def test_an_import_error_quotes_an_excerpt_of_a_huge_cell(tmp_path, cli_offline):
    lines = OSU.read_text().splitlines()
    row = next(k for k, line in enumerate(lines) if line.strip() and not line.startswith("#"))
    lines[row] = lines[row].split()[0] + "  " + "x" * 5_000_000
    (tmp_path / "osu.txt").write_text("\n".join(lines) + "\n")
    r = cli_offline("import", str(tmp_path / "osu.txt"), "--mpi-label", "x", "--runs-dir", str(tmp_path / "runs"))
    said = one_error_line(r, "is not a number", "5,000,000 characters")
    assert len(said) < 400


def _tune_dir(where: Path) -> Path:
    from mpiscope.execute.tune import FORMAT, STATE
    d = where / "tune-1"
    d.mkdir()
    description = {"benchmarks": ["allreduce"], "rank_counts": [2], "sizes": "8", "rounds": 2, "launches": 1}
    (d / STATE).write_text(json.dumps({"format": FORMAT, "description": description,
                                       "failed": {"allreduce|2|ring": "x"}}))
    return d


def test_tune_resume_of_a_finished_tune_says_it_is_finished(tmp_path, cli_offline):
    d = _tune_dir(tmp_path)
    (d / "tune.json").write_text(json.dumps({"file": str(d / "tuned.json")}))
    one_error_line(cli_offline("tune", "--resume", str(d), timeout=120), "is finished", f"tune --show {d}/tuned.json")


def test_tune_resume_refused_while_another_measures_names_tune(tmp_path):
    """Another process owns the tune's run: the refusal names `tune --resume`, not `run --resume`."""
    from mpiscope.execute.tune import Tune
    from mpiscope.store.owner import LOCK_FILE
    from mpiscope.store.runs import Run
    d = _tune_dir(tmp_path)
    run = tmp_path / "race-run"
    run.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(run / LOCK_FILE)!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.lockf(fd, fcntl.LOCK_EX)\nos.write(fd, b'%d host\\n' % os.getpid())\n"
        "print('held', flush=True)\ntime.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        tune = object.__new__(Tune)  # only its directory matters to a refused resume
        tune.dir = d
        with pytest.raises(UsageError) as e:
            tune._resume(Run(run))
        assert f"`mpiscope tune --resume {d}`" in str(e.value) and "run --resume" not in str(e.value)
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("command", ["report", "plot"])
def test_an_empty_run_name_is_refused(osu_run, cli_offline, monkeypatch, tmp_path, command):
    monkeypatch.chdir(tmp_path)  # '' would be this directory, which holds the run
    one_error_line(cli_offline(command, "", "--runs-dir", str(tmp_path / "runs"), "-o", str(tmp_path / "out")),
                   "empty run name")
