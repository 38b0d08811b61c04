"""Cost models of the standard collective algorithms (Thakur, Rabenseifner &
Gropp 2005, "Optimization of collective communication operations in MPICH"),
which one wins for given (p, n), and a table over p and n.

Conventions (the paper's): alpha = latency per message (us), beta = time per
byte (us/byte), gamma = local reduction time per byte (us/byte); p = ranks;
n = bytes, meaning per collective:
  bcast, reduce, allreduce       the whole vector
  allgather, gather              the total gathered (each rank brings n/p)
  scatter                        the total at the root
  alltoall                       what one rank sends in all (n/p to each)
  reduce_scatter                 the whole vector (each rank ends with n/p)
  barrier                        ignored
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from .hockney import HockneyFit
from .policy import ANALYSIS

if TYPE_CHECKING:
    from mpiscope.records import Record

    from mpiscope.records.measured import Measured


@dataclass(frozen=True)
class Params:
    alpha_us: float
    beta_us_per_byte: float
    gamma_us_per_byte: float = 0.0

    @classmethod
    def from_fit(cls, fit: HockneyFit, gamma_us_per_byte: float = 0.0) -> "Params":
        # a latency the sizes do not determine can come out negative (sizes far above n_1/2): it
        # prices no message below 0 (a negative alpha made every collective's time negative)
        return cls(max(fit.alpha_us, 0.0), fit.beta_us_per_byte, gamma_us_per_byte)


ParamsFor = Callable[[float], Params]
REDUCE_LOCAL = "reduce_local"     # the engine's MPI_Reduce_local sweep: gamma's source


def resolve(params: "Params | ParamsFor", n: float) -> Params:
    """Fixed parameters, or the ones for messages of about n bytes."""
    return params if isinstance(params, Params) else params(n)


def regime_params(fits: "Sequence[tuple[tuple[int, int], HockneyFit]]",
                  gamma_us_per_byte: float = 0.0) -> ParamsFor:
    """Parameters that follow the protocol: the Hockney fit of the regime whose
    size range holds n (the nearest regime outside the measured range).
    `fits` are (size_range, fit) pairs, e.g. from a SwitchReport's regimes."""
    ordered = sorted(fits, key=lambda rf: rf[0][0])

    def pick(n: float) -> Params:
        chosen = ordered[0][1]
        for (lo, _hi), fit in ordered:
            if n >= lo:
                chosen = fit
        return Params.from_fit(chosen, gamma_us_per_byte)
    return pick


def _lg(p: int) -> int:
    """ceil(log2 p): rounds of a tree or of doubling over p ranks."""
    return (p - 1).bit_length()


def _pof2(p: int) -> int:
    """Largest power of two <= p: the non-power-of-two algorithms fold the
    surplus ranks into it first."""
    return 1 << (p.bit_length() - 1)


def _frac(p: int) -> float:
    return (p - 1) / p


Cost = Callable[[int, float, Params], "float | None"]


def _tree(p, n, m):
    """ceil(lg p) rounds that move (p-1)/p of the data once: binomial gather and scatter, Bruck's
    allgather, recursive-doubling allgather."""
    return _lg(p) * m.alpha_us + _frac(p) * n * m.beta_us_per_byte


def _linear(p, n, m):
    """p - 1 rounds of n/p bytes each: ring allgather, pairwise alltoall."""
    return (p - 1) * m.alpha_us + _frac(p) * n * m.beta_us_per_byte


def _bcast_binomial(p, n, m):
    return _lg(p) * (m.alpha_us + n * m.beta_us_per_byte)


def _bcast_scatter_rd_allgather(p, n, m):
    # Recursive-doubling allgather needs p a power of two; MPICH then uses the ring.
    if p != _pof2(p):
        return None
    return 2 * _lg(p) * m.alpha_us + 2 * _frac(p) * n * m.beta_us_per_byte


def _bcast_scatter_ring_allgather(p, n, m):
    return (_lg(p) + p - 1) * m.alpha_us + 2 * _frac(p) * n * m.beta_us_per_byte


def _reduce_binomial(p, n, m):
    return _lg(p) * (m.alpha_us + n * (m.beta_us_per_byte + m.gamma_us_per_byte))


def _fold(p, n, m, reduce: bool = True):
    """Cost of folding a non-power-of-two p onto p' = pof2(p): the surplus
    ranks send their whole vector to a partner, which reduces it (reduce=False:
    sending the results back)."""
    if p == _pof2(p):
        return 0.0
    return m.alpha_us + n * m.beta_us_per_byte + (n * m.gamma_us_per_byte if reduce else 0.0)


def _reduce_rabenseifner(p, n, m):
    q = _pof2(p)            # reduce-scatter (recursive halving) + binomial gather on q ranks
    return (_fold(p, n, m) + 2 * _lg(q) * m.alpha_us + 2 * _frac(q) * n * m.beta_us_per_byte
            + _frac(q) * n * m.gamma_us_per_byte)


def _allreduce_recursive_doubling(p, n, m):
    # fold in, lg q exchanges of the full vector, send results back
    per_round = m.alpha_us + n * (m.beta_us_per_byte + m.gamma_us_per_byte)
    return _fold(p, n, m) + _lg(_pof2(p)) * per_round + _fold(p, n, m, reduce=False)


def _allreduce_rabenseifner(p, n, m):
    # fold in, reduce-scatter + allgather on q ranks (Rabenseifner's reduce), send results back
    return _reduce_rabenseifner(p, n, m) + _fold(p, n, m, reduce=False)


# The element a reduction's count is of: the engine reduces floats unless --datatype says otherwise.
REDUCE_ELEMENT_BYTES = 4


def _allreduce_ring(p, n, m):
    """Ring reduce-scatter then ring allgather, p-1 steps each of n/p bytes. A ring needs an
    element a rank: with fewer elements than ranks SimGrid's `lr` runs a reduce then a bcast
    instead (allreduce__redbcast; binomial both, as the smpirun adapter names them), and after the
    ring over the largest multiple of p elements it reduces the rest the same way (Open MPI's ring
    also leaves counts below p to another algorithm, recursive doubling)."""
    count = int(n // REDUCE_ELEMENT_BYTES)
    if count < p:
        return _reduce_binomial(p, n, m) + _bcast_binomial(p, n, m)
    ring = count - count % p
    rest = (count % p) * REDUCE_ELEMENT_BYTES
    n_ring = ring * REDUCE_ELEMENT_BYTES
    return (2 * (p - 1) * m.alpha_us + 2 * _frac(p) * n_ring * m.beta_us_per_byte
            + _frac(p) * n_ring * m.gamma_us_per_byte
            + (_reduce_binomial(p, rest, m) + _bcast_binomial(p, rest, m) if rest else 0.0))


def _allgather_recursive_doubling(p, n, m):
    return _tree(p, n, m) if p == _pof2(p) else None  # the paper uses Bruck for non-powers of two


def _alltoall_bruck(p, n, m):
    # each of ceil(lg p) steps sends about half of the n bytes
    return _lg(p) * (m.alpha_us + n / 2 * m.beta_us_per_byte)


def _reduce_scatter_recursive_halving(p, n, m):
    q = _pof2(p)            # fold in, recursive halving on q ranks, blocks to dropped ranks
    back = 0.0 if p == q else m.alpha_us + n / p * m.beta_us_per_byte
    return (_fold(p, n, m) + _lg(q) * m.alpha_us
            + _frac(q) * n * (m.beta_us_per_byte + m.gamma_us_per_byte) + back)


def _reduce_scatter_pairwise(p, n, m):
    return (p - 1) * m.alpha_us + _frac(p) * n * (m.beta_us_per_byte + m.gamma_us_per_byte)


def _barrier_dissemination(p, n, m):
    return _lg(p) * m.alpha_us


ALGORITHMS: dict[str, dict[str, Cost]] = {
    "bcast": {"binomial": _bcast_binomial,
              "scatter_rd_allgather": _bcast_scatter_rd_allgather,
              "scatter_ring_allgather": _bcast_scatter_ring_allgather},
    "reduce": {"binomial": _reduce_binomial, "rabenseifner": _reduce_rabenseifner},
    "allreduce": {"recursive_doubling": _allreduce_recursive_doubling,
                  "rabenseifner": _allreduce_rabenseifner, "ring": _allreduce_ring},
    "allgather": {"ring": _linear, "recursive_doubling": _allgather_recursive_doubling, "bruck": _tree},
    "alltoall": {"bruck": _alltoall_bruck, "pairwise": _linear},
    "reduce_scatter": {"recursive_halving": _reduce_scatter_recursive_halving,
                       "pairwise": _reduce_scatter_pairwise},
    "gather": {"binomial": _tree},
    "scatter": {"binomial": _tree},
    "barrier": {"dissemination": _barrier_dissemination},
}


def predict(collective: str, p: int, n: float, params: "Params | ParamsFor") -> dict[str, float]:
    """Predicted time (us) of every applicable algorithm, fastest first.
    `params` may depend on n (see regime_params)."""
    if collective not in ALGORITHMS:
        raise ValueError(f"unknown collective {collective!r}; known: {', '.join(ALGORITHMS)}")
    if p < 1:
        raise ValueError("p must be at least 1")
    m = resolve(params, n)
    out = {}
    for name, cost in ALGORITHMS[collective].items():
        t = 0.0 if p == 1 else cost(p, float(n), m)
        if t is not None:
            out[name] = t
    return dict(sorted(out.items(), key=lambda kv: kv[1]))


def best(collective: str, p: int, n: float, params: "Params | ParamsFor") -> tuple[str, float]:
    return next(iter(predict(collective, p, n, params).items()))


def mpich_default(collective: str, p: int, n: float) -> str:
    """The algorithm classic MPICH (ch3, thresholds of the 2005 paper era)
    selects: a plausible library choice to validate against. Modern MPICH
    (ch4, shared-memory collectives) and Open MPI (tuned) choose differently."""
    pow2 = p == _pof2(p)
    if collective == "bcast":
        if n < 12288 or p < 8:
            return "binomial"
        return "scatter_rd_allgather" if n < 524288 and pow2 else "scatter_ring_allgather"
    if collective == "allreduce":
        return "recursive_doubling" if n <= 2048 else "rabenseifner"
    if collective == "reduce":
        return "binomial" if n <= 2048 else "rabenseifner"
    if collective == "allgather":
        if pow2 and n < 524288:
            return "recursive_doubling"
        return "bruck" if n < 81920 else "ring"
    if collective == "alltoall":
        return "bruck" if n / p <= 256 and p >= 8 else "pairwise"
    if collective == "reduce_scatter":
        return "recursive_halving" if n < 524288 else "pairwise"
    return next(iter(ALGORITHMS[collective]))


def prediction_table(collective: str, ps: Iterable[int], ns: Iterable[float],
                     params: "Params | ParamsFor") -> pd.DataFrame:
    """One row per (p, n): every algorithm's time, the winner, MPICH's choice."""
    rows = []
    for p in ps:
        for n in ns:
            pred = predict(collective, p, n, params)
            win = next(iter(pred))
            rows.append({"collective": collective, "p": p, "n": n, **pred,
                         "best": win, "best_us": pred[win],
                         "mpich_default": mpich_default(collective, p, n)})
    return pd.DataFrame(rows)


def gamma_from_records(records: "Iterable[Record | Measured]") -> float | None:
    """gamma (us per byte reduced) = the slope of the engine's reduce_local
    sweep (MPI_Reduce_local on one core, float sum); None without one."""
    from .hockney import fit_hockney
    from .measured import select
    from .policy import ANALYSIS
    pts = [p for p in select(records, REDUCE_LOCAL) if p.size > 0]
    if len({p.size for p in pts}) < 2:
        return None
    big = [p for p in pts if p.size >= ANALYSIS.gamma_min_bytes]
    big = big if len({p.size for p in big}) >= 2 else pts
    return max(fit_hockney(big).beta_us_per_byte, 0.0)


def fit_algorithm(collective: str, algorithm: str, observed: "Iterable[tuple[int, float, float]]",
                  gamma_us_per_byte: float = 0.0) -> Params:
    """alpha and beta of one algorithm's model fitted to its own runs, (p, n, us) each (e.g. at
    few ranks, to predict many): every model is alpha x (messages on the critical path) + beta x
    (bytes on it) + a gamma term, so the fit is a non-negative least squares on relative
    errors. The fitted alpha and beta absorb what the pingpong's miss: the algorithm's
    contention and its software costs."""
    from scipy.optimize import nnls

    cost = ALGORITHMS[collective][algorithm]
    rows, targets = [], []
    for p, n, us in observed:
        if p < 2 or us <= 0 or (a := cost(p, n, Params(1.0, 0.0))) is None:
            continue  # one rank, or the algorithm does not apply at this p
        b, gamma = cost(p, n, Params(0.0, 1.0)), cost(p, n, Params(0.0, 0.0, gamma_us_per_byte))
        rows.append([a / us, b / us])
        targets.append(1.0 - gamma / us)
    if len({tuple(r) for r in rows}) < 2:
        raise ValueError(f"{collective} {algorithm}: fitting alpha and beta needs runs at two or more (ranks, size)")
    (alpha, beta), _ = nnls(np.array(rows), np.array(targets))
    return Params(float(alpha), float(beta), gamma_us_per_byte)


# --- the closed form's own assumption: no shared link binds -----------------------------------

# the share of the closed form's time at which contention makes it unreliable (value and
# evidence: analysis.policy, "the twin")
CONTENTION_SHARE = ANALYSIS.contention_share


@dataclass(frozen=True)
class SharedLink:
    """The narrowest link many routes share, and the share of all traffic that crosses it."""
    name: str
    bytes_per_s: float
    crossing: Callable[[int], float]  # ranks -> share of the traffic that crosses it (0 when none does)


def min_bytes(collective: str, p: int, n: float) -> float:
    """The fewest bytes any algorithm of the collective moves between ranks in all (n as in
    `predict`): what a shared link has to carry whatever the algorithm."""
    if p < 2:
        return 0.0
    if collective == "allreduce":
        return 2.0 * n * (p - 1)
    if collective in ("gather", "scatter"):
        return n * (p - 1) / p
    if collective == "barrier":
        return 0.0
    return n * (p - 1)  # bcast, reduce (each other rank receives or sends n), allgather, alltoall, reduce_scatter


# the algorithms in whose every step every rank sends (the closed form's critical path is each
# rank's own): the link carries p times the path's messages and bytes; the others are trees,
# whose p - 1 messages carry the fewest bytes (min_bytes)
EVERY_RANK_SENDS = {("allreduce", "recursive_doubling"), ("allreduce", "rabenseifner"), ("allreduce", "ring"),
                    ("reduce", "rabenseifner"), ("bcast", "scatter_rd_allgather"),
                    ("bcast", "scatter_ring_allgather"), ("barrier", "dissemination"),
                    *((c, a) for c in ("allgather", "alltoall", "reduce_scatter") for a in ALGORITHMS[c])}
MESSAGE_LINK_BYTES = ANALYSIS.message_link_bytes


def link_bytes(collective: str, p: int, n: float, algorithm: str | None = None) -> float:
    """The bytes a shared link carries for the collective if every route crosses it, each message
    costing MESSAGE_LINK_BYTES besides its payload: of `algorithm` (the closed form's pick) where
    every rank sends in every step, p times its critical path's; else (a tree, the ring allreduce
    below an element a rank, which SimGrid runs as a reduce and a bcast, or no algorithm named)
    the fewest bytes any algorithm moves and a message to each other rank."""
    if p < 2:
        return 0.0
    cost = ALGORITHMS.get(collective, {}).get(algorithm or "")
    fallback = algorithm == "ring" and n // REDUCE_ELEMENT_BYTES < p
    if cost is not None and (collective, algorithm) in EVERY_RANK_SENDS and not fallback:
        messages, path = cost(p, float(n), Params(1.0, 0.0)), cost(p, float(n), Params(0.0, 1.0))
        if messages is not None and path is not None:
            return p * (path + messages * MESSAGE_LINK_BYTES)
    trees = 2 if collective == "allreduce" else 0 if collective == "barrier" else 1
    return min_bytes(collective, p, n) + trees * (p - 1) * MESSAGE_LINK_BYTES


def contention(collective: str, p: int, n: float, predicted_us: float, link: SharedLink,
               algorithm: str | None = None) -> float:
    """The time the shared link needs for the bytes of the collective (`link_bytes`: of
    `algorithm`, the closed form's pick), over the closed form's time: CONTENTION_SHARE or more
    makes the closed form unreliable, 1 or more impossible."""
    if predicted_us <= 0:
        return 0.0
    return link_bytes(collective, p, n, algorithm) * link.crossing(p) / link.bytes_per_s * 1e6 / predicted_us


def shared_link(platform: str) -> SharedLink | None:
    """The narrowest shared link of a platform description (launchers/platform.py) or of a
    platform file with a cluster backbone (as calibrate writes); None where there is none to
    check (a dragonfly, a file without a backbone)."""
    import re
    from pathlib import Path

    from mpiscope.launchers.platform import BANDWIDTH, _quantity, parse
    if Path(platform).suffix == ".xml":
        text = parse(platform, 1).file.read_text(errors="replace")  # the same refusal of a missing file
        m = re.search(r'<backbone\b[^>]*\bbandwidth="([\d.eE+-]+)([A-Za-z]*)"', text) or \
            re.search(r'<cluster\b[^>]*\bbb_bw="([\d.eE+-]+)([A-Za-z]*)"', text)
        if not m:
            return None
        bw = float(m.group(1)) * BANDWIDTH.get(m.group(2) or "Bps", 1.0)
        return SharedLink("the backbone", bw, lambda p: 1.0)
    kind, _, rest = platform.partition(":")
    keys = {k: v for k, _, v in (item.partition("=") for item in rest.split(",") if item)}
    parse(platform, 1 if "nodes" in keys else 2)  # the grammar's own errors
    if kind == "cluster":
        return SharedLink("the backbone", _quantity("bb-bw", keys.get("bb-bw", "100GBps"), BANDWIDTH), lambda p: 1.0)
    if kind == "fattree":
        per, top = int(keys.get("per-switch", "8")), int(keys.get("top", "1"))
        up = _quantity("bw", keys.get("bw", "12.5GBps"), BANDWIDTH) * top
        # a leaf's up links carry what its nodes send to the other leaves: per/p of all traffic,
        # (p - per)/(p - 1) of it leaving the leaf
        return SharedLink("a leaf switch's up links", up,
                          lambda p: 0.0 if p <= per else per / p * (p - per) / (p - 1))
    return None
