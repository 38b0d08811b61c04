#!/usr/bin/env python3
"""A link of known rate and delay on this machine: set against measured.

Two network-namespace hosts joined by the user-space delay line (tests/fixtures/delayline.py:
the kernel has no netem), the rate set by `tbf` on each host's link. For each RATE/DELAY
setting: TCP ping-pongs with and without the delay, alternating in blocks (the one-way delay
recovered from the fastest and from the median round trip), TCP streams (the rate), how late
the line itself let packets go and the CPU it took, and the engine's pingpong across the hosts
(MPICH by default: 8 B with and without the delay, and a medium and a large message against 8 B
+ size / rate: the line charges every byte its time at the rate, the bucket's burst included). A
benchmark script, not a test (root; docs/simulation.md, "A twin of your machine").

Usage: sudo python bench/twin/delay.py [--settings none/100us,1gbit/100us,200mbit/1ms]
                                       [--trips 200] [--blocks 5] [--mpi NAME|none] [--large-kib 64,1024]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
from shaping import netns_module, rate_mbps  # noqa: E402 (the bench that loads the fixture)

from mpiscope.mpi import find  # noqa: E402
from mpiscope.mpi.build import build_engine  # noqa: E402

def engine_pingpong(c, lib, engine: Path, sizes: str) -> dict[int, dict]:
    """The engine's pingpong with one rank on each host: time_us by size."""
    if "open" in lib.vendor.lower():
        argv, env = [str(lib.launcher), *c.openmpi_args(1)], c.openmpi_env
    else:
        argv, env = [str(lib.launcher), *c.mpich_args(1)], c.mpich_env
    path = f"{lib.launcher.parent}:/usr/sbin:/usr/bin:/sbin:/bin"
    done = c.run([*argv, str(engine), "--sizes", sizes, "--min-reps", "5", "--max-time", "1", "--warmup", "2",
                  "--warmup-bytes", "0", "--timeout", "120", "pingpong"], env={**env, "PATH": path}, timeout=900)
    records = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    points = [r for r in records if r.get("type") == "point"]
    if done.returncode != 0 or not points:
        raise SystemExit(f"engine pingpong failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()[-800:]}")
    return {p["size"]: p["time_us"] for p in points}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--settings", default="none/100us,none/1ms,1gbit/100us,200mbit/1ms",
                   help="RATE/DELAY,... in tc's units; RATE none: no token bucket")
    p.add_argument("--trips", type=int, default=200, help="TCP round trips per block")
    p.add_argument("--blocks", type=int, default=5)
    p.add_argument("--stream-mib", type=int, default=16, help="MiB per TCP stream (3 streams)")
    p.add_argument("--mpi", default=None, help="the MPI for the engine's pingpong (default: the embedded one); none: skip")
    p.add_argument("--mpi-blocks", type=int, default=3, help="engine launches without and with the delay")
    p.add_argument("--large-kib", default="64,1024", help="the engine pingpong's larger messages, KiB")
    a = p.parse_args()
    netns = netns_module()
    from mpiscope_test_fixtures import delayline as dl  # loaded with the fixture's package
    lib = engine = None
    if a.mpi != "none":
        lib = find(a.mpi)
        engine = build_engine(lib.mpicc)
    large, nbytes = [int(k) << 10 for k in a.large_kib.split(",")], a.stream_mib << 20

    rows = []
    with netns.netns_cluster(2, delay=0) as c:
        for setting in a.settings.split(","):
            rate, _, delay = setting.partition("/")
            t0 = time.monotonic()
            c.unshape()
            c.shape(None if rate == "none" else rate, delay=0)
            c.line.lateness()
            base, delayed = dl.alternating(c, delay or "0", a.trips, a.blocks)
            late = c.line.lateness()
            stream = statistics.median(8 * nbytes / dl.stream_seconds(c, nbytes) for _ in range(3)) / 1e6
            mpi = None
            if lib is not None:
                zero, small, big = [], [], []  # big: one time_us per larger size, per launch
                for _ in range(a.mpi_blocks):  # alternating, as the TCP ping-pongs
                    c.shape(None, delay=0)
                    zero.append(engine_pingpong(c, lib, engine, "8")[8])
                    c.shape(None, delay=delay or "0")
                    got = engine_pingpong(c, lib, engine, ",".join(str(x) for x in [8, *large]))
                    small.append(got[8])
                    big.append({x: got[x] for x in large})
                # the launch with the fastest 8 B, and each larger size's fastest launch
                mpi = (_best(zero), _best(small), {x: _best([b[x] for b in big]) for x in large})
            rows.append((setting, rate, dl.seconds(delay or "0"), base, delayed, late, stream, mpi,
                         time.monotonic() - t0))
            print(f"  [{setting}: {rows[-1][-1]:.0f} s host time]", file=sys.stderr, flush=True)
        c.unshape()

    print(f"TCP ping-pong, {a.blocks} x {a.trips} round trips each way; the one-way delay is half what the round "
          f"trip gained (fastest | median); the line's lateness over every packet of those round trips")
    print(f"{'setting':>14} {'delay us':>8} {'fastest':>8} {'err':>6} {'median':>8} {'err':>6} "
          f"{'late us':>7} {'>10us':>6} {'>100us':>7} {'max us':>7} {'cpu':>6} {'spin':>6} {'wake us':>7} "
          f"{'stream Mbit/s':>13} {'set':>6}")
    for setting, rate, d, base, delayed, late, stream, _, _ in rows:
        fast, med = dl.one_way(base, delayed), dl.one_way(base, delayed, statistics.median)
        want = rate_mbps(rate)
        print(f"{setting:>14} {d * 1e6:>8.0f} {fast * 1e6:>8.1f} {_err(fast, d):>6} {med * 1e6:>8.1f} "
              f"{_err(med, d):>6} {late.mean_s * 1e6:>7.1f} {late.share_over(10):>6.1%} {late.share_over(100):>7.2%} "
              f"{late.max_s * 1e6:>7.0f} {late.cpu_share:>6.1%} {_share(late.spin_s, late.wall_s):>6.1%} "
              f"{late.wake_s * 1e6:>7.1f} {stream:>13.1f} {8 * want if want else float('nan'):>6.0f}")
    awake = [row[5].awake for row in rows]
    print("idle CPUs polled while the line ran (its request on /dev/cpu_dma_latency): "
          + ("yes" if all(awake) else "no, packets after an idle spell may be read a wake-up late" if not any(awake)
             else f"in {sum(awake)} of {len(awake)} settings"))
    if lib is not None:
        print(f"\nengine pingpong ({lib.name}), half round trip in us (min | median): 8 B without and with the "
              f"delay (the best of {a.mpi_blocks} launches each), and each larger size (its best launch) against "
              f"8 B + size / rate (err: min | median)")
        print(f"{'setting':>14} {'8B, 0':>15} {'8B, delay':>17} {'delay from min':>14} {'err':>6} "
              f"{'size':>8} {'measured':>19} {'expected':>9} {'err':>13}")
        for setting, rate, d, *_, mpi, _ in rows:
            zero, with_delay, big = mpi
            got = (with_delay["min"] - zero["min"]) * 1e-6
            want = rate_mbps(rate)
            print(f"{setting:>14} {zero['min']:>7.1f} {zero['median']:>7.1f} {with_delay['min']:>8.1f} "
                  f"{with_delay['median']:>8.1f} {got * 1e6:>14.1f} {_err(got, d):>6}")
            for size, t in big.items():
                expected = with_delay["min"] + (size / want if want else float("nan"))
                print(f"{'':>71} {size >> 10:>6}Ki {t['min']:>9.0f} {t['median']:>9.0f} {expected:>9.0f} "
                      f"{_err(t['min'], expected):>6} {_err(t['median'], expected):>6}")
    return 0


def _best(times: list[dict]) -> dict:
    """The launch with the fastest sample: a loaded machine slows whole launches."""
    return min(times, key=lambda t: t["min"])


def _share(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


def _err(got: float, want: float) -> str:
    return f"{(got - want) / want:+.1%}" if want else "-"


if __name__ == "__main__":
    sys.exit(main())
