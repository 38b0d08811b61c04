"""OS noise: the fixed-work-quantum probe (the engine's `fwq` row) on every rank's core.

Each sample is the slowest rank's time for one quantum after a barrier, which is what a
barrier-synchronised collective of this job waits for. Its excess over the quietest quantum is
the noise. At k times the ranks, a step waits for the slowest of k such samples: with the
samples' empirical distribution F, the maximum of k has distribution F^k, so its expected
excess is sum_i x_(i) [(i/m)^k - ((i-1)/m)^k] - x_(1) over the m sorted samples."""
from __future__ import annotations

from mpiscope.doctor import Check
from mpiscope.doctor.facts import Facts

GROUP = "noise"
SCALES = (1, 10, 100)
WARN_AT = 0.10  # expected slowdown of a synchronised step at the job's size
NOISE_FIX = ("quiet the cores the ranks use: stop other jobs and daemons there, leave one core per host to the OS "
             "(fewer ranks per node), or isolate cores (isolcpus / nohz_full, irqaffinity)")


def percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    i = min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))
    return s[i]


def expected_max(xs: list[float], k: int) -> float:
    """E[max of k draws] from the empirical distribution of xs."""
    s = sorted(xs)
    m = len(s)
    return sum(x * ((i / m) ** k - ((i - 1) / m) ** k) for i, x in enumerate(s, start=1))


def predicted(xs: list[float], scales: tuple[int, ...] = SCALES) -> dict[int, float]:
    """Scale -> the expected slowdown of one synchronised step (fraction of the quiet quantum)."""
    quiet = min(xs)
    excess = [x - quiet for x in xs]
    return {k: max(0.0, expected_max(excess, k)) / quiet for k in scales}


def checks(f: Facts) -> list[Check]:
    name = "OS noise (fixed work quantum)"
    job = f.noise
    points = job.points("fwq") if job else []
    samples = [s for p in points for s in p.samples_us]
    if len(samples) < 20:
        why = "not measured" if job is None else f"the probe gave {len(samples)} samples (launch {job.status}, exit {job.exit_code})"
        return [Check(name, "skip", why, group=GROUP)]
    n = points[0].ranks
    quiet = min(samples)
    noise = [x - quiet for x in samples]
    pred = predicted(samples)
    figure = (f"{len(samples)} quanta of {quiet:.3g} us on {n} rank(s): noise p50 {percentile(noise, .5):.3g} us, "
              f"p90 {percentile(noise, .9):.3g} us, p99 {percentile(noise, .99):.3g} us, max {max(noise):.3g} us; "
              f"predicted slowdown of a barrier-synchronised step: "
              + ", ".join(f"{pred[k]:.1%} at {k * n} ranks" for k in SCALES))
    if pred[1] > WARN_AT:
        return [Check(name, "warn", figure, NOISE_FIX, GROUP)]
    return [Check(name, "ok", figure, group=GROUP)]

