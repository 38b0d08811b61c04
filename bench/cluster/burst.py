#!/usr/bin/env python3
"""Is a token bucket's burst told from a protocol switch? Two network-namespace hosts
(tests/fixtures/netns.py), a `tbf` bucket of each rate and burst on each host's link, and
`mpiscope run --hosts` pingpong across them; prints per bucket the switches the model finds,
which of them it names a rate limiter's burst, and per size the median over the fastest sample
(docs/models.md, "A token bucket"). A benchmark script, not a test (root; MPICH, UCX over TCP).

Usage: sudo python bench/cluster/burst.py [--buckets 200mbit/64kb,100mbit/256kb,none] [--sizes 256:1M]
                                          [--launches 1] [--max-time 0.05]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shaping import netns_module, pingpong_across  # noqa: E402 (the bench beside this one)

from mpiscope.analysis.burst import split_ratio  # noqa: E402
from mpiscope.analysis.measured import launch_level, select  # noqa: E402
from mpiscope.analysis.switches import find_switches  # noqa: E402
from mpiscope.store.runs import list_runs  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--buckets", default="200mbit/64kb,100mbit/256kb,none", help="RATE/BURST,... (tc tbf units; "
                                                                              "none: unshaped)")
    p.add_argument("--sizes", default="256:1M")
    p.add_argument("--launches", default="1")
    p.add_argument("--max-time", default="0.05")
    a = p.parse_args()
    netns = netns_module()
    with tempfile.TemporaryDirectory() as tmp, netns.netns_cluster(2) as c:
        for bucket in a.buckets.split(","):
            rate, _, burst = bucket.partition("/")
            runs = Path(tmp) / bucket.replace("/", "-")
            if rate != "none":  # none: the link unshaped, the control
                c.shape(rate, burst=burst)
            t0 = time.monotonic()
            done = pingpong_across(c, runs, ["--sizes", a.sizes, "--launches", a.launches,
                                                   "--max-time", a.max_time])
            wall = time.monotonic() - t0
            c.unshape()
            if done.returncode != 0:
                print(f"{bucket}: failed: {done.stderr.strip().splitlines()[-1:]}")
                continue
            pts = select(list_runs(runs)[-1].records().records, "pingpong", 2)
            rep = find_switches(pts, reps=200)
            said = "; ".join(f"~{sw.size:.0f} B ({sw.bracket[0]}..{sw.bracket[1]}) "
                             f"{'burst of a rate limiter' if sw.burst else 'protocol switch'}" for sw in rep.switches)
            ratios = " ".join(f"{lp.size}:{split_ratio(lp) or float('nan'):.1f}"
                              for lp in sorted(launch_level(pts), key=lambda q: q.size))
            print(f"{bucket} ({wall:.0f} s): {said or 'no switch'}\n  median/fastest by size: {ratios}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
