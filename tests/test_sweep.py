"""`mpiscope sweep` for real: two MPI libraries (MPICH and Open MPI wheels) x two rank counts, the
side-by-side table in every format, dry runs, and resuming after the sweep was killed."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from mpiscope_test_fixtures.synthetic import records_of


SPEC = """
name = "libs-ranks"
description = "two libraries x two rank counts"
[measure]
benchmarks = ["allreduce"]
sizes = "1:64:2^k-1"
units = "words"
max_time = 0.05
[factors]
mpi = ["embedded", "openmpi"]
ranks = [1, 2]
"""
WORDS = [1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64]


def sweep_dir(runs: Path, name: str) -> Path:
    found = sorted((runs / "sweeps").glob(f"{name}-*"))
    assert len(found) == 1, found
    return found[0]


def entries(sd: Path) -> list[dict]:
    return [json.loads(line) for line in (sd / "results.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def swept(cli, openmpi_prefix, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sweep")
    (tmp / "spec.toml").write_text(SPEC)
    r = cli("sweep", str(tmp / "spec.toml"), "--runs-dir", str(tmp / "runs"), "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    return tmp, sweep_dir(tmp / "runs", "libs-ranks"), r


def test_sweep_runs_every_configuration_and_stores_its_factors(swept):
    tmp, sd, r = swept
    plan = json.loads((sd / "sweep.json").read_text())
    assert [c["factors"] for c in plan["configurations"]] == [
        {"mpi": m, "ranks": n} for m in ("embedded", "openmpi") for n in (1, 2)]
    assert plan["varying"] == ["mpi", "ranks"]
    done = sorted(entries(sd), key=lambda e: e["config"])  # interleaved: they end in any order
    assert [(e["config"], e["launch"], e["status"]) for e in done] == [
        ("c001", 1, "ok"), ("c002", 1, "ok"), ("c003", 1, "ok"), ("c004", 1, "ok")]
    for e, c in zip(done, plan["configurations"]):
        meta = json.loads((tmp / "runs" / e["run"] / "run.json").read_text())
        assert meta["factors"] == c["factors"]
        assert meta["mpi"]["name"] == c["factors"]["mpi"]
        assert meta["plan"]["ranks"] == c["factors"]["ranks"]
        assert meta["sweep"]["config"] == c["id"]
        ctx = json.loads((tmp / "runs" / e["run"] / "records.jsonl").read_text().splitlines()[0])
        assert ctx["world_size"] == c["factors"]["ranks"]
    assert "c004" in r.stdout and "mpiscope table" in r.stdout
    html = (sd / "report.html").read_text()  # the sweep ends with one report of all its runs
    assert f"report: {sd / 'report.html'}" in r.stdout
    assert all(e["run"] in html for e in done)


def test_report_and_plot_take_a_sweep_directory(cli, swept, tmp_path):
    tmp, sd, _ = swept
    done = entries(sd)
    r = cli("report", str(sd), "-o", str(tmp_path / "r.html"), "--runs-dir", str(tmp / "runs"))
    assert r.returncode == 0, r.stderr
    assert all(e["run"] in (tmp_path / "r.html").read_text() for e in done if e.get("event") == "finished")
    r = cli("plot", str(sd), "-o", str(tmp_path), "--runs-dir", str(tmp / "runs"))
    assert r.returncode == 0, r.stderr
    written = sorted(p.name for p in tmp_path.glob("*.png"))
    assert written and all(str(tmp_path / name) in r.stdout for name in written)


def test_export_has_a_column_per_factor(cli, swept):
    tmp, sd, _ = swept
    runs = [e["run"] for e in entries(sd)]
    r = cli("export", *runs, "--format", "csv", "--runs-dir", str(tmp / "runs"))
    assert r.returncode == 0, r.stderr
    from io import StringIO
    df = pd.read_csv(StringIO(r.stdout))
    got = df.groupby("run_id")[["factor_mpi", "factor_ranks", "mpi_name", "world_size", "sweep_config"]].first()
    assert (got["factor_mpi"] == got["mpi_name"]).all() and (got["factor_ranks"] == got["world_size"]).all()
    assert sorted(got["sweep_config"]) == ["c001", "c002", "c003", "c004"]


def test_table_csv_is_sizes_by_configurations(cli, swept):
    tmp, sd, _ = swept
    r = cli("table", str(sd), "--format", "csv", "--words")
    assert r.returncode == 0, r.stderr
    from io import StringIO
    df = pd.read_csv(StringIO(r.stdout))
    labels = [f"mpi={m}, ranks={n}" for m in ("embedded", "openmpi") for n in (1, 2)]
    assert list(df.columns) == ["benchmark", "size_bytes", "size_words"] + [
        f"{lab} {unit}" for lab in labels for unit in ("MB/s", "us")]
    assert list(df["size_words"]) == WORDS and list(df["size_bytes"]) == [8 * w for w in WORDS]
    for lab in labels:
        # MB/s is the bytes moved over the time: the two columns of one configuration agree.
        # A point lost to a hang (the engine's watchdog, on a loaded machine) is an empty cell.
        ratio = (df["size_bytes"] / df[f"{lab} us"] / df[f"{lab} MB/s"]).dropna()
        assert len(ratio) >= len(WORDS) - 2 and ((ratio - 1).abs() < 0.01).all(), ratio


def test_table_terminal_and_markdown_put_sizes_in_rows(cli, swept):
    tmp, sd, _ = swept
    md = cli("table", str(sd), "--format", "markdown", "--words")
    assert md.returncode == 0, md.stderr
    rows = [line for line in md.stdout.splitlines() if line.startswith("|")]
    assert rows[0] == ("| size (8-byte words) | mpi=embedded, ranks=1 | mpi=embedded, ranks=2 | "
                       "mpi=openmpi, ranks=1 | mpi=openmpi, ranks=2 |")
    body = [[c.strip() for c in row.strip("|").split("|")] for row in rows[2:]]
    assert [int(b[0]) for b in body] == WORDS
    for b in body:
        small = int(b[0]) <= 32  # up to 256 bytes the latency stands beside the MB/s
        for cell in (c for c in b[1:] if c):  # empty: a point lost to a hang
            assert ("(" in cell) == small, (b[0], cell)
    term = cli("table", str(sd), "--words")
    assert term.returncode == 0, term.stderr
    assert "size (8-byte words)" in term.stdout and "mpi=openmpi" in term.stdout
    assert term.stdout.count("\n") >= len(WORDS) + 4
    bytes_ = cli("table", str(sd), "--format", "markdown")
    assert "| size (bytes) |" in bytes_.stdout and "| 512 |" in bytes_.stdout


def test_table_errors_are_one_line(cli, swept):
    tmp, sd, _ = swept
    r = cli("table", str(sd), "--benchmark", "rign")
    assert r.returncode == 2
    assert r.stderr.strip() == "mpiscope: error: no 'rign' points in these runs: use --benchmark with one of allreduce"


def test_dry_run_prints_launch_commands_and_runs_nothing(cli, openmpi_prefix, tmp_path):
    (tmp_path / "spec.toml").write_text(SPEC)
    r = cli("sweep", str(tmp_path / "spec.toml"), "--dry-run", "--runs-dir", str(tmp_path / "runs"))
    assert r.returncode == 0, r.stderr
    cmds = [line for line in r.stdout.splitlines() if not line.startswith("#") and "mpiscope-engine" in line]
    assert len(cmds) == 4
    # the engine expands the sizes: mpiscope passes the expression and its units on as written
    assert all("--sizes '1:64:2^k-1' --units words --max-time 0.05 allreduce" in c for c in cmds)
    assert [" -n 1 " in c for c in cmds] == [True, False, True, False]
    assert "/managed/openmpi/" in cmds[2] and "/managed/openmpi/" not in cmds[0]
    assert not (tmp_path / "runs").exists()
    auto = cli("sweep", str(tmp_path / "spec.toml"), "--dry-run", "--runs-dir", str(tmp_path / "runs"),
               env={"MPISCOPE_LAUNCHES": "auto"})
    assert auto.returncode == 0, auto.stderr
    headers = [line for line in auto.stdout.splitlines() if line.startswith("# c00")]
    assert len(headers) == 4 and all(h.endswith("(auto launches: 3, then more where the interval is still wide, "
                                                "each in its own order)") for h in headers)
    assert "4 configuration(s), auto launches: 3" in auto.stdout


# Each configuration takes about 3 s whatever the machine's speed (the CI target is never met,
# so every point runs its 0.2 s), so the signal lands inside the second configuration.
RESUME_SPEC = """
name = "resume"
[measure]
benchmarks = ["pingpong"]
sizes = "1:32K"
max_time = 0.2
ci_target = 0.00001
[factors]
ranks = 2
[factors.env]
MPISCOPE_TEST_LEVEL = ["a", "b", "c"]
"""


def _start(tmp: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mpiscope", "sweep", str(tmp / "spec.toml"), "--runs-dir",
                             str(tmp / "runs"), "--no-progress", *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=os.environ.copy())


def _wait_for_finished(tmp: Path, n: int, proc: subprocess.Popen, limit: float = 300) -> Path:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        found = list((tmp / "runs" / "sweeps").glob("resume-*/results.jsonl"))
        if found and len(found[0].read_text().splitlines()) >= n:
            return found[0].parent
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the sweep did not finish a configuration in time")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_resume_after_a_killed_sweep_skips_finished_configurations(cli, mpiscope_home, tmp_path, sig):
    (tmp_path / "spec.toml").write_text(RESUME_SPEC)
    proc = _start(tmp_path)
    sd = _wait_for_finished(tmp_path, 1, proc)
    first = entries(sd)[0]  # interleaved: any configuration may end first
    assert first["status"] == "ok"
    time.sleep(0.5)  # into the next configuration's launch
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    if sig == signal.SIGINT:
        assert proc.returncode == 130, err
        assert "--resume" in err
    before = {e["config"]: e for e in entries(sd) if e["status"] == "ok"}
    assert len(before) < 3

    r = cli("sweep", str(tmp_path / "spec.toml"), "--runs-dir", str(tmp_path / "runs"), "--resume", "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    ok = [e for e in entries(sd) if e["status"] == "ok"]
    assert sorted(e["config"] for e in ok) == ["c001", "c002", "c003"]  # nothing ran twice
    assert {e["config"]: e["run"] for e in ok}[first["config"]] == first["run"]
    assert f"{len(before)} configuration(s) were already finished" in r.stdout
    runs = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/run.json")]
    statuses = sorted(m["status"] for m in runs)
    # the launch that was cut off is kept and says so; every configuration has one good run
    assert statuses.count("ok") == 3 and set(statuses) <= {"ok", "interrupted"}
    assert {m["factors"]["env.MPISCOPE_TEST_LEVEL"] for m in runs if m["status"] == "ok"} == {"a", "b", "c"}


def test_resume_refuses_a_changed_spec(cli, mpiscope_home, tmp_path):
    (tmp_path / "spec.toml").write_text(RESUME_SPEC.replace('"1:32K"', '"8"'))
    r = cli("sweep", str(tmp_path / "spec.toml"), "--runs-dir", str(tmp_path / "runs"), "--no-progress")
    assert r.returncode == 0, r.stderr
    (tmp_path / "spec.toml").write_text(RESUME_SPEC.replace('"1:32K"', '"16"'))
    r = cli("sweep", str(tmp_path / "spec.toml"), "--runs-dir", str(tmp_path / "runs"), "--resume")
    assert r.returncode == 2
    assert "the spec changed since the sweep" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_failed_configuration_is_recorded_and_the_sweep_goes_on(cli, mpiscope_home, tmp_path):
    (tmp_path / "spec.toml").write_text("""
name = "fails"
[measure]
benchmarks = ["pingpong"]
sizes = "8"
max_time = 0.05
[factors]
ranks = 2
launcher_args = ["-no-such-launcher-option", ""]
""")
    r = cli("sweep", str(tmp_path / "spec.toml"), "--runs-dir", str(tmp_path / "runs"), "--no-progress")
    assert r.returncode == 1, r.stdout + r.stderr
    got = sorted((e["config"], e["status"]) for e in entries(sweep_dir(tmp_path / "runs", "fails")))
    assert got == [("c001", "failed"), ("c002", "ok")]
    assert "failed: c001" in r.stderr


def test_launches_report_within_and_between_launch_variation(cli, mpiscope_home, tmp_path):
    (tmp_path / "spec.toml").write_text(RESUME_SPEC.replace('"1:32K"', '"8,1K"')
                                        .replace('["a", "b", "c"]', '"a"'))
    r = cli("sweep", str(tmp_path / "spec.toml"), "--runs-dir", str(tmp_path / "runs"), "--launches", "3",
            "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    sd = sweep_dir(tmp_path / "runs", "resume")
    # one run per configuration, measured in three launches (each in its own order) as `run` does
    (entry,) = entries(sd)
    assert (entry["config"], entry["status"]) == ("c001", "ok")
    recs = records_of(tmp_path / "runs" / entry["run"])
    assert sorted({r["tag"]["launch"] for r in recs if r["type"] == "point"}) == [0, 1, 2]
    # the status table: one row per configuration, with the launches its run made
    (row,) = [line for line in r.stdout.splitlines() if line.startswith("│ c001")]
    assert [c.strip() for c in row.strip("│").split("│")][2:5] == ["ok", "3", entry["run"]]
    assert "not run" not in r.stdout
    assert "launch-to-launch variation" in r.stdout
    v = cli("table", str(sd), "--variation")
    assert v.returncode == 0, v.stderr
    lines = [line for line in v.stdout.splitlines() if "pingpong" in line]
    assert len(lines) == 2 and all("│        3 │" in line for line in lines)
