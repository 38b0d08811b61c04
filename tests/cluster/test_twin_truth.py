"""A twin against ground truth: two namespace hosts joined by the delay line (a known one-way
delay and rate, no burst; tests/fixtures/delayline.py), MPICH over TCP between
them, and `mpiscope calibrate` of the pingpong measured across them must give back the delay and
the rate (issue 45, point 5; docs/simulation.md, "A link with a known delay on this machine")."""
from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from mpiscope.analysis.calibrate.platform import read_twin
from mpiscope.results.view import results_of
from mpiscope.store.runs import resolve

RATE, RATE_BPS = "200mbit", 25e6
DELAY_US = 1000.0
# Runnable tasks the measurement itself brings (the two ranks, the delay line, the engine's own
# reading of the counter): a run queue above this was another process's load.
OWN_TASKS = 4
# The latency from the small sizes; the rate from sizes far past the token bucket's 64 kB burst,
# where the bytes take 10-40 ms and a busy machine's scheduling is a few per cent of that.
SIZES = "0,8,64,512,256K,512K,1M"


def _run(cluster, env: dict[str, str], runs: Path, *args: str) -> str:
    """`mpiscope run` inside host 0, one rank on each host (MPICH, UCX over TCP on the line)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = cluster.run([sys.executable, "-m", "mpiscope", "run", "--runs-dir", str(runs),
                        "--hosts", ",".join(cluster.hosts), "--ranks-per-node", "1", "-n", "2", "-b", "pingpong",
                        "--launches", "1", "--no-progress", "--no-report", *args,
                        "--launcher-args", f"-launcher ssh -launcher-exec {cluster.agent} -iface {cluster.iface}",
                        "--env", "UCX_TLS=self,tcp", "--env", f"UCX_NET_DEVICES={cluster.iface}"],
                       env={"PATH": path, **env}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return re.findall(r"saved in (\S+)", done.stdout + done.stderr)[-1]


def _run_queue(run_id: str, runs: Path) -> float:
    """The largest run queue the run's points recorded (the host's runnable tasks)."""
    recs = resolve(run_id, runs).records()
    return max((max(p.disturbance.get("run_queue") or [0]) for p in recs.points if p.disturbance), default=0)


@pytest.fixture
def twin_home(cli, mpiscope_home, tmp_path) -> dict[str, str]:
    """A home with SMPI added (calibration simulates), sharing the session's engine builds."""
    if not (shutil.which("smpicc") and shutil.which("smpirun")):
        pytest.skip("SimGrid's smpicc/smpirun are not installed (apt-get install libsimgrid-dev)")
    home = tmp_path / "home"
    home.mkdir()
    (mpiscope_home / "builds").mkdir(exist_ok=True)
    (home / "builds").symlink_to(mpiscope_home / "builds")
    env = {"MPISCOPE_HOME": str(home)}
    r = cli("mpi", "add", "smpi", env=env)
    assert r.returncode == 0, r.stderr
    return env


def test_calibration_recovers_the_delay_lines_delay_and_rate(delay_hosts, mpich, twin_home, cli, tmp_path):
    c, runs = delay_hosts, tmp_path / "runs"
    quick = ["--max-time", "0.05"]
    try:
        c.unshape()
        c.shape(RATE, delay=0)
        base = _run(c, twin_home, runs, "--sizes", "0", *quick)
        c.shape(RATE, delay=f"{DELAY_US:g}us")
        run = _run(c, twin_home, runs, "--sizes", SIZES, *quick)
    finally:
        c.unshape()
    frame = results_of([resolve(base, runs)]).frame
    base_us = float(frame.loc[frame["benchmark"] == "pingpong", "time_median_us"].iloc[0])

    twin = tmp_path / "twin.xml"
    r = cli("calibrate", run, "--runs-dir", str(runs), "-o", str(twin), env=twin_home)
    assert r.returncode == 0, r.stderr
    keys = dict(kv.split("=") for kv in read_twin(twin)["description"].split(":", 1)[1].split(","))
    route_us = 2 * float(keys["lat"].removesuffix("us"))
    bw = float(keys["bw"].removesuffix("Bps"))
    truth_us = base_us + DELAY_US
    # Never below the truth: the line holds every packet the delay, and a loaded machine only adds
    # to a busy-polling rank's round trip.
    assert route_us >= 0.95 * truth_us, (route_us, truth_us, r.stdout)
    queue = max(_run_queue(base, runs), _run_queue(run, runs))
    if "measured while the machine was disturbed" in r.stderr and queue > OWN_TASKS:
        # then the medians carry other processes' load, not the link (docs/simulation.md, "Ground
        # truth"). With nothing else runnable calibrate still says so: on 2 cores each wake-up of the
        # line takes a core from a polling rank (3-4 an 8 B round trip), and the rule counts those
        # switches, but they are the link's own cost, in the truth measured through the same line
        # (on an idle machine: route +0.7 %, rate -0.8 %; on 3 December route +0.1 to +2.2 % before
        # the line kept idle CPUs polling, +1.0 to +3.6 % since, rate -1 to -2 % either way).
        pytest.skip(f"the machine was too busy for ground truth (run queue {queue:g}): route {route_us:.0f} us "
                    f"against {truth_us:.0f} us, {bw / 1e6:.1f} MB/s against {RATE_BPS / 1e6:g} MB/s; calibrate "
                    f"said: {r.stderr.strip()[-200:]}")
    # Issue 45's 5 %: the line's delay and rate are each known within 3 % (bench/twin/delay.py)
    assert route_us == pytest.approx(truth_us, rel=0.05), (route_us, truth_us, r.stdout)
    assert bw == pytest.approx(RATE_BPS, rel=0.05), (bw, r.stdout)
