#!/usr/bin/env python3
"""Inter-node bandwidth against the configured link rate: two network-namespace hosts
(tests/fixtures/netns.py), a `tbf` token bucket on each host's link, and `mpiscope run
--hosts` pingpong across them; prints the per-placement Hockney fit for each rate.

A benchmark script, not a test: it prints figures (needs root; MPICH, UCX over TCP).

Usage: sudo python bench/cluster/shaping.py [--rates none,1gbit,500mbit,250mbit] [--sizes 512K:4M] [--reps 5]
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

from mpiscope.report.placement import groups
from mpiscope.store.runs import list_runs

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"
RATE_MBPS = {"gbit": 1000 / 8, "mbit": 1 / 8}


def netns_module():
    """The test fixture module, loaded by path (it is a pytest plugin, not an installed package)."""
    spec = importlib.util.spec_from_file_location("mpiscope_test_fixtures", FIXTURES / "__init__.py",
                                                  submodule_search_locations=[str(FIXTURES)])
    pkg = importlib.util.module_from_spec(spec)
    sys.modules["mpiscope_test_fixtures"] = pkg
    spec.loader.exec_module(pkg)
    return importlib.import_module("mpiscope_test_fixtures.netns")


def pingpong_across(c, runs: Path, options: list[str]):
    """`mpiscope run` pingpong with one rank on each of the cluster's two hosts (MPICH, UCX over
    TCP on the hosts' link), its runs in `runs`; the finished process."""
    h0, h1 = c.hosts
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return c.run([sys.executable, "-m", "mpiscope", "run", "--runs-dir", str(runs), "--hosts", f"{h0},{h1}",
                  "--ranks-per-node", "1", "-b", "pingpong", *options, "--no-progress", "--no-report",
                  "--launcher-args", f"-launcher ssh -launcher-exec {c.agent} -iface {c.iface}",
                  "--env", "UCX_TLS=self,tcp", "--env", f"UCX_NET_DEVICES={c.iface}"],
                 env={"PATH": path}, timeout=900)


def rate_mbps(rate: str) -> float | None:
    for unit, factor in RATE_MBPS.items():
        if rate.endswith(unit):
            return float(rate[: -len(unit)]) * factor
    return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rates", default="none,1gbit,500mbit,250mbit")
    p.add_argument("--sizes", default="512K:4M")
    p.add_argument("--reps", default="5")
    a = p.parse_args()
    netns = netns_module()
    print(f"{'rate':>9} {'MB/s set':>9} {'fit MB/s':>9} {'ratio':>6} {'alpha us':>9} {'wall s':>7}")
    with tempfile.TemporaryDirectory() as tmp, netns.netns_cluster(2) as c:
        runs = Path(tmp)
        for rate in a.rates.split(","):
            if rate != "none":
                c.shape(rate)
            t0 = time.monotonic()
            done = pingpong_across(c, runs, ["--sizes", a.sizes, "--reps", a.reps])
            wall = time.monotonic() - t0
            c.unshape()
            if done.returncode != 0:
                print(f"{rate:>9} failed: {done.stderr.strip().splitlines()[-1:]}")
                continue
            (g,) = groups(list_runs(runs)[-1].records().records)
            want = rate_mbps(rate)
            fit = g.fit.bandwidth_MBps
            print(f"{rate:>9} {want or float('nan'):>9.1f} {fit:>9.1f} {fit / want if want else float('nan'):>6.2f} "
                  f"{g.fit.alpha_us:>9.0f} {wall:>7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
