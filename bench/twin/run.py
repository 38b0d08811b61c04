#!/usr/bin/env python3
"""A twin against ground truth: network-namespace hosts (tests/fixtures/netns.py) joined by the
user-space delay line (tests/fixtures/delayline.py: this kernel has no netem), every host sending
at a known rate (the line charges each packet its bytes / rate, no burst; `tbf` at the same rate
in front) and the line holding each packet a known one-way delay, MPI over TCP between them. For
each setting: the pingpong across two hosts at the rate without the delay (the line costs time of
its own, so the ground truth is that link plus the set delay), then with it pingpong and bw across
two hosts and the default collectives at `--coll-hosts` (after each run, what the line did and how
often the ranks lost their core), `mpiscope
calibrate` of those runs (its validation table: measured against simulated point by point), the
fitted figures against the settings, then the twin behind a shared backbone at larger rank
counts: the simulated allreduce beside the closed form and its contention check (`mpiscope
predict --simulate`). Prints the host time each step took. A benchmark script, not a test (root;
docs/simulation.md, "A twin of your machine").

MPICH busy-polls: more ranks than the machine has cores measure its scheduler, not the link.
`--mpi openmpi` (its ranks yield when idle) for the collectives at 3-4 hosts on a small machine.

Usage: sudo python bench/twin/run.py [--settings 1gbit/100us,200mbit/1ms] [--coll-hosts 2,3,4]
                                     [--sizes 0:4M] [--bw-sizes 0:256K] [--mpi openmpi]
                                     [--predict-ranks 64,256,1024] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
from shaping import netns_module, rate_mbps  # noqa: E402 (the bench that loads the fixture)

from mpiscope.analysis.calibrate.platform import read_twin  # noqa: E402
from mpiscope.results.view import results_of  # noqa: E402
from mpiscope.store.runs import resolve  # noqa: E402
from mpiscope.util import paths  # noqa: E402

COLLECTIVES = "allreduce,bcast,allgather,alltoall,barrier"


def shape(c, rate: str, delay: str) -> None:
    """Every host's link: `rate` by its token bucket ("none": unshaped), `delay` one way by the line."""
    c.unshape()
    c.shape(None if rate == "none" else rate, delay=delay or 0)


def launcher_options(c, mpi: str | None) -> list[str]:
    """What each library needs to reach the namespace hosts (the ssh stand-in) and to use TCP
    between them, as tests/cluster/test_run_hosts.py passes them."""
    if mpi == "openmpi":
        return ["--mpi", "openmpi", "--bind-to", "none", "--launcher-args",
                f"--prtemca plm_ssh_agent {c.agent} --prtemca oob_tcp_if_include {c.iface} "
                f"--mca btl_tcp_if_include {c.iface} --mca mpi_yield_when_idle 1"]
    return [*(["--mpi", mpi] if mpi else []),
            "--launcher-args", f"-launcher ssh -launcher-exec {c.agent} -iface {c.iface}",
            "--env", "UCX_TLS=self,tcp", "--env", f"UCX_NET_DEVICES={c.iface}"]


def mpiscope(args: list[str], env: dict[str, str], c=None, timeout: float = 3600) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "mpiscope", *args]
    if c is not None:
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        return c.run(argv, env={"PATH": path, **env}, timeout=timeout)
    return subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env}, timeout=timeout)


def across(c, hosts: list[str], runs: Path, env: dict[str, str], options: list[str]) -> str:
    done = mpiscope(["run", "--runs-dir", str(runs), "--hosts", ",".join(hosts), "--ranks-per-node", "1",
                     "-n", str(len(hosts)), *options, "--no-progress", "--no-report"], env, c)
    if done.returncode != 0:
        raise SystemExit(f"run failed: {done.stderr.strip()[-800:]}")
    return re.findall(r"saved in (\S+)", done.stdout + done.stderr)[-1]


def measured(c, hosts: list[str], runs: Path, env: dict[str, str], options: list[str], what: str) -> str:
    """`across`, then its host time, what the line did meanwhile and how often the ranks lost their
    core: on 2 cores each wake-up of the line takes one from a polling rank."""
    c.line.lateness()
    t0 = time.monotonic()
    run_id = across(c, hosts, runs, env, options)
    late = c.line.lateness()
    step(what, t0)
    switches = events = queue = 0
    for pt in resolve(run_id, runs).records().points:
        d = pt.disturbance or {}
        switches += max(d.get("nivcsw") or [0])
        events += pt.time_us.n + pt.invalid + pt.warmup
        queue = max(queue, *(d.get("run_queue") or [0]))
    events = max(events, 1)
    print(f"  the line: {late.sent} packets, {late.mean_s * 1e6:.1f} us late on average ({late.share_over(10):.1%} "
          f"over 10 us, {late.share_over(100):.2%} over 100 us), {late.cpu_share:.1%} of a core "
          f"({_share(late.spin_s, late.wall_s):.1%} polling), {late.wakes / events:.2f} wake-ups an event, idle CPUs "
          f"{'polling' if late.awake else 'halting'}; the "
          f"worst rank {switches / events:.2f} involuntary switches an event; run queue up to {queue:g}", flush=True)
    return run_id


def _share(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


def step(name: str, t0: float) -> None:
    print(f"  [{name}: {time.monotonic() - t0:.0f} s host time]", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--settings", default="1gbit/100us,200mbit/1ms", help="RATE/DELAY,... (tc units; RATE none: no bucket)")
    p.add_argument("--sizes", default="0:4M", help="pingpong sizes")
    p.add_argument("--bw-sizes", default="0:256K",
                   help="bw sizes (a window of 64 messages: 4 MiB takes 11 s a sample at 200 Mbit/s)")
    p.add_argument("--coll-sizes", default="8,1K,64K")
    p.add_argument("--coll-hosts", default="2", help="host counts for the collectives (one rank each)")
    p.add_argument("--coll-sync", default="window",
                   help="the collectives' start sync (the engine's --sync; '' for its default): namespace hosts "
                        "read one clock, so window sync is exact where its bound, half the best round trip, "
                        "would make the engine give way to barrier sync, whose samples carry a one-way skew")
    p.add_argument("--mpi", default=None, help="the MPI of every run (default: the embedded MPICH; openmpi)")
    p.add_argument("--max-time", default="0.2", help="per point, seconds")
    p.add_argument("--launches", default="1", help="launches of the runs with the delay")
    p.add_argument("--predict-ranks", default="64,256,1024")
    p.add_argument("--predict-sizes", default="8,64K")
    p.add_argument("--backbone-links", type=float, default=8,
                   help="the twin's shared backbone at scale, in link rates (8: 8 links' worth)")
    p.add_argument("--keep", type=Path, metavar="DIR", help="keep the runs and the twins in DIR")
    a = p.parse_args()
    netns = netns_module()
    coll_hosts = [int(n) for n in a.coll_hosts.split(",") if n]
    if a.keep:
        a.keep.mkdir(parents=True, exist_ok=True)
    work = nullcontext(str(a.keep)) if a.keep else tempfile.TemporaryDirectory(prefix="twin-bench-")
    with work as tmp, netns.netns_cluster(max([2, *coll_hosts]), delay=0) as c:
        home = Path(tmp) / "home"
        home.mkdir(exist_ok=True)
        if not (home / "builds").exists():
            (home / "builds").symlink_to(paths.home() / "builds")  # this machine's engine builds
        env = {"MPISCOPE_HOME": str(home)}
        for lib in ("smpi", *([a.mpi] if a.mpi else [])):
            added = mpiscope(["mpi", "add", lib], env)
            if added.returncode != 0 and "exists already" not in added.stderr:  # a kept home has it
                raise SystemExit(f"`mpiscope mpi add {lib}` failed" + (
                    " (SimGrid's smpicc/smpirun: apt-get install libsimgrid-dev)" if lib == "smpi" else ""))
        lib_opts = launcher_options(c, a.mpi)
        for setting in a.settings.split(","):
            rate, _, delay = setting.partition("/")
            runs = Path(tmp) / setting.replace("/", "-")
            print(f"\n=== {rate} from every host, {delay or 'no'} one-way delay, by the delay line (tbf in front) ===",
                  flush=True)
            t0 = time.monotonic()
            shape(c, rate, "")
            base_id = across(c, c.hosts[:2], runs, env, ["-b", "pingpong", "--sizes", "0", "--launches", "3",
                                                         "--max-time", a.max_time, *lib_opts])
            base_us = pingpong_us(base_id, runs)
            step(f"pingpong 0 B across 2 hosts without the delay: {base_us:.1f} us", t0)
            shape(c, rate, delay)
            common = ["--launches", a.launches, "--max-time", a.max_time, *lib_opts]
            ids = [measured(c, c.hosts[:2], runs, env, ["-b", "pingpong", "--sizes", a.sizes, *common],
                            "pingpong across 2 hosts"),
                   measured(c, c.hosts[:2], runs, env, ["-b", "bw", "--sizes", a.bw_sizes, *common],
                            "bw across 2 hosts")]
            for n in coll_hosts:
                sync = [f"--engine-args=--sync {a.coll_sync}"] if a.coll_sync else []
                ids.append(measured(c, c.hosts[:n], runs, env,
                                    ["-b", COLLECTIVES, "--sizes", a.coll_sizes, *common, *sync],
                                    f"collectives at {n} hosts"))
            t0 = time.monotonic()
            twin = Path(tmp) / f"{runs.name}.xml"
            done = mpiscope(["calibrate", *ids, "--runs-dir", str(runs), "-o", str(twin)], env)
            print(done.stdout, done.stderr, sep="", end="")
            step("calibrate and its validation", t0)
            if done.returncode != 0:
                continue
            bw = against_settings(read_twin(twin), rate, delay, base_us)
            predict_at_scale(a, env, runs, ids, bw)
        c.unshape()
    return 0


def pingpong_us(run_id: str, runs: Path, size: int = 0) -> float:
    """The launch-level estimate (median) of one pingpong size of a run, us."""
    frame = results_of([resolve(run_id, runs)]).frame
    row = frame[(frame["benchmark"] == "pingpong") & (frame["size"] == size)]
    return float(row["time_median_us"].iloc[0])


def against_settings(rec: dict, rate: str, delay: str, base_us: float) -> float:
    """Print the twin's route figures against the ground truth (the link measured without the
    delay plus the delay; the bucket's rate); its bandwidth in MB/s."""
    from mpiscope_test_fixtures.delayline import seconds  # loaded with the fixture's package

    keys = dict(kv.split("=") for kv in rec["description"].split(":", 1)[1].split(","))
    lat_us = 2 * float(keys["lat"].removesuffix("us"))
    bw = float(keys["bw"].removesuffix("Bps")) / 1e6
    truth_us = base_us + seconds(delay or "0") * 1e6
    want = rate_mbps(rate)
    rate_said = f"the rate {want:g} MB/s: {bw / want - 1:+.1%}" if want else "no rate"
    print(f"fitted against the settings: route latency {lat_us:.1f} us (without the delay {base_us:.1f} us "
          f"+ the delay {truth_us - base_us:g} us = {truth_us:.1f} us: {lat_us / truth_us - 1:+.1%}), "
          f"bandwidth {bw:.2f} MB/s ({rate_said})", flush=True)
    return bw


def predict_at_scale(a, env: dict[str, str], runs: Path, ids: list[str], bw_MBps: float) -> None:
    """The twin of the same links behind a backbone of `--backbone-links` link rates: allreduce
    simulated at the asked rank counts beside the closed form (pingpong regimes) and its check."""
    most = max(int(r) for r in a.predict_ranks.split(","))
    t0 = time.monotonic()
    twin = runs / f"scale-{most}.xml"
    bb = f"{bw_MBps * 1e6 * a.backbone_links:.6g}Bps"
    done = mpiscope(["calibrate", *ids, "--runs-dir", str(runs), "--nodes", str(most),
                     "--topology", f"cluster:bb-bw={bb}", "-o", str(twin)], env)
    if done.returncode != 0:
        print(f"scale twin failed: {done.stderr.strip()}")
        return
    step(f"the twin at {most} nodes behind a {bb} backbone", t0)
    # predict --simulate: each rank count simulated on the twin beside the closed form and its check
    t0 = time.monotonic()
    done = mpiscope(["predict", "--from", ids[0], "--runs-dir", str(runs), "-n", a.predict_ranks,
                     "--sizes", a.predict_sizes, "--collective", "allreduce", "--platform", str(twin), "--simulate"],
                    env)
    print(done.stdout if done.returncode == 0 else f"prediction by simulation failed: {done.stderr.strip()[-300:]}",
          flush=True)
    step("predict --simulate", t0)


if __name__ == "__main__":
    sys.exit(main())
