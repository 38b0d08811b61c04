#!/usr/bin/env python3
"""A twin against ground truth: network-namespace hosts (tests/fixtures/netns.py) whose links are
shaped by `tc netem` to a known rate and one-way delay, MPICH over TCP between them. For each
setting: pingpong and bw across two hosts, the default collectives at 3 and 4 hosts, `mpiscope
calibrate` of those runs (its validation table: measured against simulated point by point), the
fitted figures against the tc settings (a delay needs netem in the kernel; without one the
rate alone is shaped, by a token bucket), then the twin behind a shared backbone at larger rank
counts: the simulated allreduce beside the closed form and its contention check (`mpiscope predict
--simulate`). Prints the host time each step took. A benchmark script, not a test (root;
docs/simulation.md, "A twin of your machine").

Usage: sudo python bench/twin/run.py [--settings 1gbit/100us,200mbit/1ms] [--predict-ranks 64,256]
                                     [--backbone-links 8] [--keep DIR]
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
from mpiscope.util import paths  # noqa: E402

COLLECTIVES = "allreduce,bcast,allgather,alltoall,barrier"
DELAY_US = {"us": 1.0, "ms": 1e3, "s": 1e6}


def shape(c, rate: str, delay: str) -> None:
    """Every host's link: the rate on its egress, and with a delay the one-way delay too (netem),
    so a message between two hosts is delayed once and paced at the rate. Without a delay (or a
    kernel without netem) a token bucket (tbf) sets the rate alone."""
    if not delay:
        c.shape(rate)
        return
    for h in c.hosts:
        done = subprocess.run(["tc", "-n", h, "qdisc", "replace", "dev", c.iface, "root", "netem", "delay", delay,
                               "rate", rate, "limit", "100000"], capture_output=True, text=True, timeout=20)
        if done.returncode != 0:
            raise SystemExit(f"tc netem: {done.stderr.strip()} (this kernel has no netem: give rates alone, "
                             f"--settings 500mbit,200mbit, shaped by tbf)")


def mpiscope(args: list[str], env: dict[str, str], c=None, timeout: float = 3600) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "mpiscope", *args]
    if c is not None:
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        return c.run(argv, env={"PATH": path, **env}, timeout=timeout)
    return subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env}, timeout=timeout)


def across(c, hosts: list[str], runs: Path, env: dict[str, str], options: list[str]) -> str:
    done = mpiscope(["run", "--runs-dir", str(runs), "--hosts", ",".join(hosts), "--ranks-per-node", "1",
                     "-n", str(len(hosts)), *options, "--no-progress", "--no-report",
                     "--launcher-args", f"-launcher ssh -launcher-exec {c.agent} -iface {c.iface}",
                     "--env", "UCX_TLS=self,tcp", "--env", f"UCX_NET_DEVICES={c.iface}"], env, c)
    if done.returncode != 0:
        raise SystemExit(f"run failed: {done.stderr.strip()[-800:]}")
    return re.findall(r"saved in (\S+)", done.stdout + done.stderr)[-1]


def step(name: str, t0: float) -> None:
    print(f"  [{name}: {time.monotonic() - t0:.0f} s host time]", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--settings", default="1gbit/100us,200mbit/1ms", help="RATE/DELAY,... (tc units)")
    p.add_argument("--sizes", default="0:4M", help="pingpong and bw sizes")
    p.add_argument("--coll-sizes", default="8,1K,64K")
    p.add_argument("--max-time", default="0.2", help="per point, seconds")
    p.add_argument("--predict-ranks", default="64,256")
    p.add_argument("--predict-sizes", default="8,64K")
    p.add_argument("--backbone-links", type=float, default=8,
                   help="the twin's shared backbone at scale, in link rates (8: 8 links' worth)")
    p.add_argument("--keep", type=Path, metavar="DIR", help="keep the runs and the twins in DIR")
    a = p.parse_args()
    netns = netns_module()
    if a.keep:
        a.keep.mkdir(parents=True, exist_ok=True)
    work = nullcontext(str(a.keep)) if a.keep else tempfile.TemporaryDirectory(prefix="twin-bench-")
    with work as tmp, netns.netns_cluster(4) as c:
        home = Path(tmp) / "home"
        home.mkdir(exist_ok=True)
        if not (home / "builds").exists():
            (home / "builds").symlink_to(paths.home() / "builds")  # this machine's engine builds
        env = {"MPISCOPE_HOME": str(home)}
        if mpiscope(["mpi", "add", "smpi"], env).returncode != 0:
            raise SystemExit("SimGrid's smpicc/smpirun are needed (apt-get install libsimgrid-dev)")
        for setting in a.settings.split(","):
            rate, _, delay = setting.partition("/")
            runs = Path(tmp) / setting.replace("/", "-")
            shape(c, rate, delay)
            how = f"{delay} one-way, tc netem" if delay else "tc tbf, no delay added"
            print(f"\n=== {rate} ({how}) on every host's link ===", flush=True)
            t0 = time.monotonic()
            ids = [across(c, c.hosts[:2], runs, env, ["-b", "pingpong,bw", "--sizes", a.sizes, "--launches", "1",
                                                      "--max-time", a.max_time])]
            step("pingpong and bw across 2 hosts", t0)
            for n in (3, 4):
                t0 = time.monotonic()
                ids.append(across(c, c.hosts[:n], runs, env, ["-b", COLLECTIVES, "--sizes", a.coll_sizes,
                                                              "--launches", "1", "--max-time", a.max_time]))
                step(f"collectives at {n} hosts", t0)
            t0 = time.monotonic()
            twin = Path(tmp) / f"{runs.name}.xml"
            done = mpiscope(["calibrate", *ids, "--runs-dir", str(runs), "-o", str(twin)], env)
            print(done.stdout, done.stderr, sep="", end="")
            step("calibrate and its validation", t0)
            if done.returncode != 0:
                continue
            rec = read_twin(twin)
            keys = dict(kv.split("=") for kv in rec["description"].split(":", 1)[1].split(","))
            lat_us = 2 * float(keys["lat"].removesuffix("us"))
            bw = float(keys["bw"].removesuffix("Bps")) / 1e6
            want = rate_mbps(rate)
            said = "no delay shaped: the link's own"
            if delay:
                want_us = float(re.sub(r"[a-z]+$", "", delay)) * DELAY_US[re.sub(r"^[\d.]+", "", delay)]
                said = f"tc delay {want_us:g} us one-way: {lat_us / want_us - 1:+.1%}"
            print(f"fitted against tc: route latency {lat_us:.1f} us ({said}), bandwidth {bw:.2f} MB/s "
                  f"(tc rate {want:g} MB/s: {bw / want - 1:+.1%})", flush=True)
            predict_at_scale(a, env, runs, ids, rate, bw)
    return 0


def predict_at_scale(a, env: dict[str, str], runs: Path, ids: list[str], rate: str, bw_MBps: float) -> None:
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
    done = mpiscope(["predict", "--from", ids[0], "--runs-dir", str(runs / "scale"), "-n", a.predict_ranks,
                     "--sizes", a.predict_sizes, "--collective", "allreduce", "--platform", str(twin), "--simulate"],
                    env)
    print(done.stdout if done.returncode == 0 else f"prediction by simulation failed: {done.stderr.strip()[-300:]}",
          flush=True)


if __name__ == "__main__":
    sys.exit(main())
