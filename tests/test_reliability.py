"""Faults injected for real (issue 10). A hang is a result: the point is recorded as a
time-out, the job is relaunched from the next point, and a benchmark that hangs twice in a
row is not tried larger. A killed rank fails the run but keeps its points. Ctrl-C keeps the
points and --resume finishes the run.

The hang is real: the ring case study's algorithm 1 (MPI_Send before MPI_Recv) deadlocks
once a message no longer fits Open MPI's shared-memory eager limit, set small here."""
from __future__ import annotations

import json
import subprocess

from mpiscope_test_fixtures.synthetic import records_of


def test_deadlock_is_recorded_and_the_run_goes_on(cli, openmpi_prefix, tmp_path):
    r = cli("run", "--mpi", "openmpi", "-n", "2", "-b", "ringcs1,ringcs2", "--sizes", "256:8K",
            "--env", "OMPI_MCA_btl_sm_eager_limit=1024", "--max-time", "0.05", "--no-progress",
            "--runs-dir", str(tmp_path), timeout=300)
    assert r.returncode == 0, r.stderr
    assert "hung" in r.stdout and "deadlock?" in r.stdout
    (run,) = tmp_path.iterdir()
    records = records_of(run)
    by = {(rec["type"], rec.get("benchmark"), rec.get("size")) for rec in records}

    # `table` marks the cells: hung where the launch timed out, skipped after two hangs in a row
    t = cli("table", str(run), "--benchmark", "ringcs1")
    assert t.returncode == 0, t.stderr
    cells = {int(line.split("│")[1]): line.split("│")[2].strip() for line in t.stdout.splitlines()
             if line.startswith("│") and line.split("│")[1].strip().isdigit()}
    for kind, mark in (("timeout", "hung"), ("skip", "skipped")):
        sizes = {s for k, b, s in by if (k, b) == (kind, "ringcs1")}
        assert sizes and all(cells[s] == mark for s in sizes), (kind, cells)
    assert all(cells[s] not in ("", "-", "hung", "skipped") for k, b, s in by if (k, b) == ("point", "ringcs1"))
    assert "timed out" in t.stdout

    timeouts = sorted(rec["size"] for rec in records if rec["type"] == "timeout" and rec["benchmark"] == "ringcs1")
    assert timeouts == [1024, 2048]             # the eager limit, then the next size: two in a row
    assert all(("point", "ringcs1", s) in by for s in (256, 512))
    assert all(("skip", "ringcs1", s) in by for s in (4096, 8192))   # not tried after two hangs
    # The run went on with the next benchmark. (A loaded machine may stall one of its points
    # past the watchdog too: then that point is a time-out, and the sizes after it still come.)
    assert all(("point", "ringcs2", s) in by or ("timeout", "ringcs2", s) in by
               for s in (256, 512, 1024, 2048, 4096, 8192))

    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "ok" and len(meta["timeouts"]) >= 2
    assert len(meta["launches"]) >= 3           # the first job, the next size alone, the next benchmark
    assert any("hung past" in w for w in meta["warnings"])

    engine = meta["engine_command"][0]
    left = subprocess.run(["pgrep", "-f", engine], capture_output=True, text=True).stdout.split()
    assert left == [], f"ranks of {engine} still running"


def test_a_killed_rank_fails_the_run_but_keeps_its_points(embedded_mpi, tmp_path):
    import os
    import signal
    import sys
    import time
    proc = subprocess.Popen([sys.executable, "-m", "mpiscope", "run", "-b", "bw", "--sizes", "1:4M",
                             "--max-time", "1", "--ci-target", "0.0001", "--no-progress",
                             "--runs-dir", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(600):  # until the first point is stored
        time.sleep(0.1)
        records = next(tmp_path.glob("*/records.jsonl"), None)
        if records and records.read_text().count('"point"') >= 1:
            break
    (run,) = tmp_path.iterdir()
    engine = json.loads((run / "run.json").read_text())["engine_command"][0]
    ranks = [pid for pid, args in descendants(proc.pid) if args.startswith(engine)]
    assert len(ranks) == 2
    os.kill(max(ranks), signal.SIGKILL)  # the out-of-memory killer's way
    out, errs = proc.communicate(timeout=120)

    assert proc.returncode == 2 and "Traceback" not in errs
    assert "mpiscope: error: the engine stopped early" in errs and "launcher stderr" in errs
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "failed" and meta["points"] >= 1
    lines = (run / "records.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(json.loads(line) for line in lines[:-1])  # whole records only
    time.sleep(0.5)
    assert all(not os.path.exists(f"/proc/{pid}") for pid in ranks)


def descendants(root: int) -> list[tuple[int, str]]:
    """(pid, command line) of every process below `root`: this test's ranks, not other jobs'."""
    ps = subprocess.run(["ps", "-e", "-ww", "-o", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    rows = [line.split(None, 2) for line in ps.splitlines() if len(line.split(None, 2)) == 3]
    children: dict[int, list[tuple[int, str]]] = {}
    for pid, ppid, args in rows:
        children.setdefault(int(ppid), []).append((int(pid), args))
    found, todo = [], [root]
    while todo:
        for pid, args in children.get(todo.pop(), []):
            found.append((pid, args))
            todo.append(pid)
    return found


def test_ctrl_c_then_resume_finishes_the_run_in_place(cli, tmp_path):
    import signal
    import sys
    import time
    args = ["run", "-b", "pingpong,bw", "--sizes", "1:64K", "--max-time", "0.3", "--ci-target", "0.0001",
            "--no-progress", "--runs-dir", str(tmp_path)]
    proc = subprocess.Popen([sys.executable, "-m", "mpiscope", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for _ in range(600):
        time.sleep(0.1)
        records = next(tmp_path.glob("*/records.jsonl"), None)
        if records and records.read_text().count('"point"') >= 3:
            break
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    (run,) = tmp_path.iterdir()
    before = records_of(run)
    measured = {(r["benchmark"], r["size"]) for r in before if r["type"] == "point"}
    assert 3 <= len(measured) < 34 and json.loads((run / "run.json").read_text())["status"] == "interrupted"

    r = cli("run", "--resume", run.name, "--no-progress", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    after = records_of(run)
    points = [(r["benchmark"], r["size"]) for r in after if r["type"] == "point"]
    sizes = [1 << k for k in range(17)]
    assert sorted(points) == sorted((b, s) for b in ("pingpong", "bw") for s in sizes)  # each once
    assert all(after[i] == before[i] for i in range(len(before)))  # nothing measured before was touched
    assert json.loads((run / "run.json").read_text())["status"] == "ok"
    again = cli("run", "--resume", run.name, "--runs-dir", str(tmp_path))
    assert again.returncode == 0 and "nothing to resume" in again.stdout


def test_resume_finishes_every_part_of_a_default_run(cli, tmp_path):
    """The default run has two parts (pairs on 2 ranks, collectives on every core), both written
    down before the first launch: a run cut off in the first part gets its collectives on resume."""
    r = cli("run", "--sizes", "8,1K", "--max-time", "0.02", "--no-progress", "--no-report",
            "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (run,) = tmp_path.iterdir()
    meta = json.loads((run / "run.json").read_text())
    assert [p["tag"]["part"] for p in meta["parts"]] == [0, 1]
    records = records_of(run)
    # as if mpiscope had been killed after bw at 8 B: the rest of part 0 and all of part 1 missing
    cut = next(i for i, rec in enumerate(records) if rec.get("benchmark") == "bw" and rec["type"] == "point")
    (run / "records.jsonl").write_text("".join(json.dumps(rec) + "\n" for rec in records[:cut + 1]))
    (run / "run.json").write_text(json.dumps({**meta, "status": "interrupted"}))

    r = cli("run", "--resume", run.name, "--no-progress", "--no-report", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    after = records_of(run)
    points = sorted((rec["tag"]["part"], rec["benchmark"], rec["size"]) for rec in after if rec["type"] == "point")
    from mpiscope.plan.engine import DEFAULT_COLLECTIVES
    want = [(0, b, s) for b in ("pingpong", "bw") for s in (8, 1024)]
    want += [(1, b, 0 if b == "barrier" else s) for b in DEFAULT_COLLECTIVES for s in (8, 1024)
             if not (b == "barrier" and s == 1024)]
    assert points == sorted(want)  # every point once: nothing lost, nothing measured twice


def test_a_grid_run_cut_off_in_its_second_shape_resumes_the_remaining_shapes(cli, tmp_path):
    """Points are told apart by their variant (the grid shape): the second shape's sizes are
    not taken for done because the first shape measured the same sizes."""
    r = cli("run", "-b", "grid", "-n", "2", "--sizes", "1K,4K", "--max-time", "0.02", "--no-progress",
            "--no-report", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (run,) = tmp_path.iterdir()
    records = records_of(run)
    shapes = [(rec["variant"], rec["size"]) for rec in records if rec["type"] == "point"]
    assert shapes == [("1x2", 1024), ("1x2", 4096), ("2x1", 1024), ("2x1", 4096)]
    cut = next(i for i, rec in enumerate(records) if rec.get("variant") == "2x1")  # after 2x1 at 1 KiB
    (run / "records.jsonl").write_text("".join(json.dumps(rec) + "\n" for rec in records[:cut + 1]))
    meta = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**meta, "status": "interrupted"}))

    r = cli("run", "--resume", run.name, "--no-progress", "--no-report", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    after = records_of(run)
    assert sorted((rec["variant"], rec["size"]) for rec in after if rec["type"] == "point") == sorted(shapes)
    launches = json.loads((run / "run.json").read_text())["launches"]
    assert "--points" in launches[-1]["argv"]  # only what was missing, named by the engine's plan


def test_a_launch_stopped_while_its_point_still_progressed_is_no_hang(tmp_path):
    """mpiscope's wall-clock limit stops a launch whose point the engine's watchdog had found
    still progressing (its notice on the launch's stderr): the time-out says so, and it does
    not count as a hang in a row, so the larger sizes are still measured."""
    from types import SimpleNamespace

    from mpiscope.execute.part import Outcome, _after_hang, _hang_without_record, series_of
    from mpiscope.plan.engine import PlanPoint
    from mpiscope.records.model import STILL_PROGRESSING
    from mpiscope.store.runs import RecordWriter

    entries = [PlanPoint(i, "bw", size, 2) for i, size in enumerate((64, 128, 256))]
    stderr = tmp_path / "stderr"
    earlier = b"mpiscope-engine: watchdog: still progressing: bw 64 B on 2 ranks, past its limit of 2.000 s\n"
    stderr.write_bytes(earlier)
    part = SimpleNamespace(tag={"part": 0})
    writer = RecordWriter(tmp_path / "records.jsonl")
    # an earlier launch's notice says nothing of this one: a hang
    out = Outcome(done=0)
    _hang_without_record(part, entries, out, writer, 115.2, "mpiscope wall-clock limit", stderr, len(earlier))
    assert out.timeouts[-1].hung and out.timeouts[-1].source == "mpiscope wall-clock limit"
    with open(stderr, "ab") as f:
        f.write(b"mpiscope-engine: watchdog: still progressing: bw 64 B on 2 ranks, past its limit of 2.000 s: "
                b"extended (slowed, not hung)\n")
    out = Outcome(done=0)
    _hang_without_record(part, entries, out, writer, 115.2, "mpiscope wall-clock limit", stderr, len(earlier))
    writer.close()
    t = out.timeouts[-1]
    assert not t.hung and t.source == STILL_PROGRESSING and t.limit_s == 115.2
    stored = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert [r["source"] for r in stored] == ["mpiscope wall-clock limit", STILL_PROGRESSING]
    # one hang of the series before: a real second one would give the larger sizes up (and
    # store skips in the run); this one does not, and the row of hangs starts again
    hangs = {series_of(entries[0]): 1}
    rest = _after_hang(None, part, entries, out, hangs, [])
    assert [[e.size for e in launch.entries] for launch in rest] == [[128], [256]]
    assert hangs[series_of(entries[0])] == 0
