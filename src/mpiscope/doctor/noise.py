"""OS noise: the fixed-work-quantum probe (the engine's `fwq` row) on every rank's core.

Each sample is the slowest rank's time for one quantum after a barrier, which is what a
barrier-synchronised collective of this job waits for. Its excess over the quietest quantum is
the noise. At k times the ranks, a step waits for the slowest of k such samples: with the
samples' empirical distribution F, the maximum of k has distribution F^k, so its expected
excess is sum_i x_(i) [(i/m)^k - ((i-1)/m)^k] - x_(1) over the m sorted samples.

Per core: every rank also times its own quanta (the row's `fwq.rank_quantum_us`), so the
noise of each core used (host:core, from the context's placement) is shown on its own and
the noisiest core is named: the one whose quanta lose the largest share to noise (mean
over the quietest quantum)."""
from __future__ import annotations

from dataclasses import dataclass

from mpiscope.doctor import Check
from mpiscope.doctor.facts import Facts
from mpiscope.records import Context, Point

GROUP = "noise"
SCALES = (1, 10, 100)
WARN_AT = 0.10  # expected slowdown of a synchronised step at the job's size
CORE_WARN_AT = 0.10  # share of a core's quantum time lost to noise (mean over the quietest)
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
        return [Check(name, "skip", why, group=GROUP), cores(f)]
    n = points[0].ranks
    quiet = min(samples)
    noise = [x - quiet for x in samples]
    pred = predicted(samples)
    figure = (f"{len(samples)} quanta of {quiet:.3g} us on {n} rank(s): noise p50 {percentile(noise, .5):.3g} us, "
              f"p90 {percentile(noise, .9):.3g} us, p99 {percentile(noise, .99):.3g} us, max {max(noise):.3g} us; "
              f"slowdown of a barrier-synchronised step: {pred[1]:.1%} measured on {n} rank(s); extrapolated "
              f"(assuming every added rank sees this noise independently): "
              + ", ".join(f"{pred[k]:.1%} at {k * n} ranks" for k in SCALES if k > 1))
    job_check = Check(name, "warn", figure, NOISE_FIX, GROUP) if pred[1] > WARN_AT else Check(name, "ok", figure,
                                                                                              group=GROUP)
    return [job_check, cores(f)]



@dataclass(frozen=True)
class CoreNoise:
    """One rank's own quanta: where it ran and its noise (excess over its quietest quantum)."""
    rank: int
    where: str          # host:core (host:cpus a,b when bound to several; "unbound" when free)
    quanta: int
    quiet_us: float
    p50_us: float
    p99_us: float
    max_us: float
    lost: float         # (mean - quietest) / quietest: the share of work time lost to noise

    def text(self) -> str:
        return (f"{self.where} (rank {self.rank}): +{self.p50_us:.3g}/+{self.p99_us:.3g}/+{self.max_us:.3g} us "
                f"p50/p99/max, {self.lost:.1%} lost")


def place(ctx: Context | None, point: Point, rank: int) -> str:
    """host:core of a rank: its binding when bound, else the CPU it was last on."""
    r = next((x for x in ctx.ranks if x.rank == rank), None) if ctx else None
    host = r.host if r else "?"
    last = point.rank_cpus[rank] if rank < len(point.rank_cpus) else None
    if r and r.bound and len(r.cpus) == 1:
        return f"{host}:{r.cpus[0]}"
    if r and r.bound:
        return f"{host}:cpus {','.join(map(str, r.cpus))}"
    return f"{host}:{last if last is not None else '?'} (unbound)"


def per_core(ctx: Context | None, point: Point) -> list[CoreNoise]:
    """The point's per-rank quanta (the engine's `fwq.rank_quantum_us`), noisiest first."""
    rows = (point.details.get("fwq") or {}).get("rank_quantum_us") or []
    out = []
    for row in rows:
        try:
            rank, n, quiet = int(row["rank"]), int(row["n"]), float(row["min_us"])
            p50, p99, mx, mean = (float(row[k]) for k in ("p50_us", "p99_us", "max_us", "mean_us"))
        except (KeyError, TypeError, ValueError):
            continue
        if n < 1 or quiet <= 0:
            continue
        out.append(CoreNoise(rank, place(ctx, point, rank), n, quiet, p50 - quiet, p99 - quiet, mx - quiet,
                             (mean - quiet) / quiet))
    return sorted(out, key=lambda c: -c.lost)


def cores(f: Facts) -> Check:
    name = "OS noise per core"
    job = f.noise
    points = job.points("fwq") if job else []
    if not points:
        return Check(name, "skip", "not measured", group=GROUP)
    point = max(points, key=lambda p: p.ranks)
    ctxs = job.contexts if job else []
    found = per_core(ctxs[0] if ctxs else None, point)
    if not found:
        return Check(name, "skip", "the engine did not report each rank's quanta", group=GROUP)
    worst = found[0]
    shown = "; ".join(c.text() for c in found[:16]) + (f"; ... ({len(found)} ranks)" if len(found) > 16 else "")
    figure = f"noisiest {worst.where} ({worst.lost:.1%} of its quantum time lost); each rank's own quanta: {shown}"
    if worst.lost > CORE_WARN_AT:
        noisy = [c.where for c in found if c.lost > CORE_WARN_AT]
        return Check(name, "warn", figure, f"{', '.join(noisy[:8])}: " + NOISE_FIX, GROUP)
    return Check(name, "ok", figure, group=GROUP)
