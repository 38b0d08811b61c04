"""Collective models equal the closed forms of Thakur, Rabenseifner & Gropp
(2005), checked by hand for p = 4, 8 and the non-power of two 6."""
from __future__ import annotations

import numpy as np
import pytest

from mpiscope.analysis.predict import (Params, best, fit_algorithm, mpich_default, regime_params,
                                       predict, prediction_table)
from mpiscope.analysis.validate import validate
from mpiscope.report.predictions import format_validation, format_winners
from mpiscope.records import Context, Point, Stats

A, B, G = 2.0, 0.001, 0.0005
M = Params(A, B, G)
N = 60000.0


@pytest.mark.parametrize("coll, alg, p, expected", [
    # bcast
    ("bcast", "binomial", 4, 2 * (A + N * B)),
    ("bcast", "binomial", 6, 3 * (A + N * B)),
    ("bcast", "scatter_rd_allgather", 8, 6 * A + 2 * 7 / 8 * N * B),
    ("bcast", "scatter_ring_allgather", 6, (3 + 5) * A + 2 * 5 / 6 * N * B),
    # reduce
    ("reduce", "binomial", 8, 3 * (A + N * B + N * G)),
    ("reduce", "rabenseifner", 4, 4 * A + 2 * 3 / 4 * N * B + 3 / 4 * N * G),
    ("reduce", "rabenseifner", 6, 5 * A + (1 + 2 * 3 / 4) * N * B + (1 + 3 / 4) * N * G),
    # allreduce
    ("allreduce", "recursive_doubling", 8, 3 * (A + N * B + N * G)),
    ("allreduce", "recursive_doubling", 6, 4 * A + 4 * N * B + 3 * N * G),
    ("allreduce", "rabenseifner", 4, 4 * A + 2 * 3 / 4 * N * B + 3 / 4 * N * G),
    ("allreduce", "rabenseifner", 6, 6 * A + (2 + 2 * 3 / 4) * N * B + (1 + 3 / 4) * N * G),
    ("allreduce", "ring", 6, 10 * A + 2 * 5 / 6 * N * B + 5 / 6 * N * G),
    # allgather
    ("allgather", "ring", 8, 7 * A + 7 / 8 * N * B),
    ("allgather", "recursive_doubling", 4, 2 * A + 3 / 4 * N * B),
    ("allgather", "bruck", 6, 3 * A + 5 / 6 * N * B),
    # alltoall
    ("alltoall", "bruck", 8, 3 * A + 3 * N / 2 * B),
    ("alltoall", "bruck", 6, 3 * A + 3 * N / 2 * B),
    ("alltoall", "pairwise", 6, 5 * A + 5 / 6 * N * B),
    # reduce_scatter
    ("reduce_scatter", "recursive_halving", 4, 2 * A + 3 / 4 * N * (B + G)),
    ("reduce_scatter", "recursive_halving", 6,
     (A + N * B + N * G) + 2 * A + 3 / 4 * N * (B + G) + (A + N / 6 * B)),
    ("reduce_scatter", "pairwise", 6, 5 * A + 5 / 6 * N * (B + G)),
    # gather, scatter, barrier
    ("gather", "binomial", 8, 3 * A + 7 / 8 * N * B),
    ("scatter", "binomial", 6, 3 * A + 5 / 6 * N * B),
    ("barrier", "dissemination", 6, 3 * A),
])
def test_closed_forms(coll, alg, p, expected):
    assert predict(coll, p, N, M)[alg] == pytest.approx(expected, rel=1e-12)


def test_the_ring_allreduce_leaves_fewer_elements_than_ranks_to_a_reduce_and_a_bcast():
    # 4 floats on 8 ranks: no ring; SimGrid's lr reduces then broadcasts (binomial both)
    assert predict("allreduce", 8, 16, M)["ring"] == pytest.approx(3 * (A + 16 * B + 16 * G) + 3 * (A + 16 * B))
    # 62 floats on 6 ranks: the ring over 60, the 2 left reduced then broadcast
    ring = 10 * A + 2 * 5 / 6 * 240 * B + 5 / 6 * 240 * G
    assert predict("allreduce", 6, 248, M)["ring"] == pytest.approx(ring + 3 * (A + 8 * B + 8 * G) + 3 * (A + 8 * B))


def test_power_of_two_only_algorithms_are_left_out_for_6():
    assert "recursive_doubling" not in predict("allgather", 6, N, M)
    assert "scatter_rd_allgather" not in predict("bcast", 6, N, M)


def test_winners_follow_the_paper():
    assert best("allreduce", 64, 8, M)[0] == "recursive_doubling"      # latency-bound
    assert best("allreduce", 64, 1 << 22, M)[0] == "rabenseifner"      # bandwidth-bound
    assert best("bcast", 64, 8, M)[0] == "binomial"
    assert best("bcast", 64, 1 << 22, M)[0].startswith("scatter")
    assert best("alltoall", 64, 64 * 8, M)[0] == "bruck"
    assert best("alltoall", 64, 1 << 24, M)[0] == "pairwise"
    assert predict("allreduce", 1, N, M)["ring"] == 0.0
    with pytest.raises(ValueError):
        predict("allscatter", 4, N, M)


def test_mpich_default_is_applicable():
    for coll in ("bcast", "allreduce", "reduce", "allgather", "alltoall", "reduce_scatter"):
        for p in (2, 3, 4, 6, 8, 16):
            for n in (8, 4096, 1 << 16, 1 << 20):
                assert mpich_default(coll, p, n) in predict(coll, p, n, M)


def test_table_and_format():
    t = prediction_table("allreduce", [2, 4, 6], [8, 1 << 20], M)
    assert len(t) == 6 and set(t["best"]) <= {"recursive_doubling", "rabenseifner", "ring"}
    assert "allreduce" in format_winners(t)


def test_validation_reports_error():
    def rec(bench, p, size, t):
        return Point(bench, size, p, Stats(n=10, median=t))
    exact = predict("allreduce", 4, 1 << 20, M)["rabenseifner"]
    recs = [rec("allreduce", 4, 1 << 20, exact), rec("allgather", 3, 1000, 100.0),
            rec("pingpong", 2, 8, 1.0), rec("allreduce", 8, 8, 1.0)]
    t = validate(recs, M)
    assert list(t["collective"]) == ["allreduce", "allgather"]
    row = t.iloc[0]
    assert row.default == "rabenseifner" and row.err_default == pytest.approx(0.0, abs=1e-12)
    assert t.iloc[1].n == 3000          # per-rank block x p
    rs = validate([rec("reduce_scatter_block", 4, 4096, 10.0), rec("alltoallv", 2, 100, 1.0)], M)
    assert list(rs.collective) == ["reduce_scatter", "alltoall"] and list(rs.n) == [4096, 200]
    assert "allgather" in format_validation(t)


def test_validation_flags_oversubscribed_runs():
    def rec(p, t):
        return Point("bcast", 8, p, Stats(n=10, median=t))
    recs = [Context(world_size=2, oversubscribed=False), rec(2, 3.0),
            Context(world_size=4, oversubscribed=True), rec(4, 900.0)]
    t = validate(recs, M)
    assert list(t.oversubscribed) == [False, True]
    assert "p = 4 were oversubscribed" in format_validation(t)


def test_regime_params_follow_the_message_size():
    from mpiscope.analysis.hockney import fit_hockney
    from .conftest import make_points
    eager = fit_hockney(make_points(lambda n: 1 + n / 5000.0, [1, 64, 1024, 4096], noise=0.0))
    rndv = fit_hockney(make_points(lambda n: 4 + n / 10000.0, [8192, 65536, 1 << 20], noise=0.0))
    pf = regime_params([((8192, 1 << 20), rndv), ((0, 4096), eager)], gamma_us_per_byte=G)
    assert pf(100).alpha_us == pytest.approx(1.0) and pf(1 << 22).alpha_us == pytest.approx(4.0)
    assert predict("bcast", 4, 100, pf)["binomial"] == pytest.approx(2 * (1 + 100 / 5000.0))
    assert predict("bcast", 4, 1 << 16, pf)["binomial"] == pytest.approx(2 * (4 + 65536 / 10000.0))


def test_an_algorithms_alpha_and_beta_fitted_at_few_ranks_predict_many():
    # truth: 3 us a message, 10 GB/s, plus 2 % noise; fitted at 4-16 ranks, checked at 256
    truth, rng = Params(3.0, 1e-4), np.random.default_rng(0)
    observed = [(p, n, predict("allreduce", p, n, truth)["rabenseifner"] * (1 + 0.02 * rng.standard_normal()))
                for p in (4, 8, 16) for n in (8.0, 1024.0, 65536.0, 1048576.0)]
    fitted = fit_algorithm("allreduce", "rabenseifner", observed)
    assert fitted.alpha_us == pytest.approx(3.0, rel=0.1) and fitted.beta_us_per_byte == pytest.approx(1e-4, rel=0.1)
    for n in (8.0, 1048576.0):
        assert predict("allreduce", 256, n, fitted)["rabenseifner"] == pytest.approx(
            predict("allreduce", 256, n, truth)["rabenseifner"], rel=0.1)
    with pytest.raises(ValueError, match="two or more"):
        fit_algorithm("allgather", "recursive_doubling", [(6, 8.0, 5.0), (12, 8.0, 9.0)])  # not powers of two
