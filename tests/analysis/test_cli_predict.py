"""`mpiscope predict`: rank lists, the formulas through the CLI, gamma from a
reduce_local sweep, and --validate against collectives measured on the real
engine (structure of the report, never speed)."""
from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from mpiscope.analysis.predict import gamma_from_records
from mpiscope.commands.predict import parse_ranks
from mpiscope.util.errors import UsageError
from mpiscope.plan.engine import expand_sizes
from mpiscope.records import Point, Stats


def test_rank_lists(mpich_engine):
    def parse(text: str) -> list[int]:  # size expressions as the engine expands them
        return parse_ranks(text, lambda expr: expand_sizes(mpich_engine, expr))
    assert parse("2,4,...,1024") == [2 ** k for k in range(1, 11)]
    assert parse("2,3,...,6") == [2, 3, 4, 5, 6]
    assert parse("1,2,4,8,...,64,100") == [1, 2, 4, 8, 16, 32, 64, 100]
    assert parse("2:16") == [2, 4, 8, 16]
    assert parse("3,5,7") == [3, 5, 7]
    for bad in ("2,x,...,8", "4,2,...,8", "...,8", "0,1", "2:x"):
        with pytest.raises(UsageError):
            parse(bad)


def test_gamma_is_the_slope_of_a_reduce_local_sweep():
    recs = [Point("reduce_local", s, 1, Stats(n=50, median=0.05 + s * 0.0004, ci_low=0.05 + s * 0.0004 * 0.99,
                                              ci_high=0.05 + s * 0.0004 * 1.01))
            for s in (64, 1024, 4096, 16384, 65536, 262144)]
    assert gamma_from_records(recs) == pytest.approx(0.0004, rel=0.01)
    assert gamma_from_records(recs[:1]) is None


def test_predictions_match_the_formulas(cli):
    r = cli("predict", "--alpha", "1", "--beta", "0.001", "--gamma", "0.0005", "-n", "4,6",
            "--sizes", "1K", "--collective", "allreduce,bcast", "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = {(x["collective"], x["p"]): x for x in json.loads(r.stdout)["predictions"]}
    a, b, g, n = 1.0, 0.001, 0.0005, 1024
    assert rows["allreduce", 4]["recursive_doubling"] == pytest.approx(2 * (a + n * b + n * g))
    assert rows["allreduce", 4]["ring"] == pytest.approx(6 * a + 2 * 3 / 4 * n * b + 3 / 4 * n * g)
    # p = 6: the paper's (floor(lg p) + 2) alpha + (floor(lg p) + 2) n beta + (floor(lg p) + 1) n gamma
    assert rows["allreduce", 6]["recursive_doubling"] == pytest.approx(4 * a + 4 * n * b + 3 * n * g)
    assert rows["bcast", 4]["binomial"] == pytest.approx(2 * (a + n * b))
    assert rows["bcast", 6].get("scatter_rd_allgather") is None     # powers of two only
    for x in rows.values():
        algs = {k: v for k, v in x.items() if k not in ("collective", "p", "n", "best", "best_us",
                                                         "mpich_default") and v is not None}
        assert x["best_us"] == min(algs.values()) and x["best"] in algs
    text = cli("predict", "--alpha", "1", "--beta", "0.001", "-n", "2,4,...,1024",
               "--sizes", "8,1M", "--collective", "allgather").stdout
    assert "allgather: fastest algorithm" in text and "1024" in text and "every algorithm" in text


def test_bad_input(cli_offline):
    for args, words in ((["predict"], "--alpha"),
                        (["predict", "--alpha", "1"], "--beta"),
                        (["predict", "--alpha", "1", "--beta", "0.1", "--collective", "allredux"],
                         "allreduce"),
                        (["predict", "--alpha", "1", "--beta", "0.1", "-n", "4,2,...,1"], "-n")):
        r = cli_offline(*args)
        text = " ".join(r.stderr.split())
        assert r.returncode == 2 and text.startswith("mpiscope: error:") and words in text, r.stderr


def test_validate_against_measured_collectives(cli, tmp_path):
    # up to 32 KiB: on shared memory 8 B-4 KiB is nearly flat, and one noisy launch once fitted it
    # a negative per-byte cost, which predict rightly refuses as no model
    r = cli("run", "-n", "2", "-b", "pingpong,allreduce,bcast", "--sizes", "8:32K:*8",
            "--max-time", "0.02", "--no-progress", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    v = cli("predict", "--validate", "latest", cwd=tmp_path)
    assert v.returncode == 0, v.stderr
    assert "pingpong" in v.stdout and "error = predicted / measured - 1" in v.stdout
    lines = [ln.split() for ln in v.stdout.splitlines()]
    assert {(ln[0], ln[1]) for ln in lines if ln and ln[0] in ("allreduce", "bcast")} == \
        {("allreduce", "2"), ("bcast", "2")}
    csv = cli("predict", "--validate", "latest", "--format", "csv", cwd=tmp_path).stdout
    t = pd.read_csv(io.StringIO(csv))
    assert len(t) == 10 and set(t.p) == {2}    # 5 sizes x 2 collectives
    assert ((t.best_us / t.measured_us - 1 - t.err_best).abs() < 1e-9).all()
    # given parameters replace the run's own
    g = cli("predict", "--validate", "latest", "--alpha", "1", "--beta", "0", "--format", "csv",
            cwd=tmp_path).stdout
    t2 = pd.read_csv(io.StringIO(g))
    assert (t2[t2.collective == "bcast"].best_us == 1.0).all()     # binomial at p = 2: alpha


def test_validation_skips_points_without_a_valid_sample():
    from mpiscope.analysis.predict import Params
    from mpiscope.analysis.validate import validate
    pt = lambda size, median, n: Point("allreduce", size, 2, Stats(n=n, median=median))
    t = validate([pt(8, 2.0, 40), pt(4096, 0.0, 0)], Params(1.0, 0.001))
    assert list(t["size"]) == [8]
    assert t["err_best"].iloc[0] == pytest.approx((1.0 + 8 * 0.001) / 2.0 - 1)


def test_a_regime_that_is_no_model_prices_nothing(capsys):
    import argparse

    from mpiscope.records.measured import Synthetic
    from mpiscope.commands.predict import params_from_args

    from .conftest import make_points
    a = argparse.Namespace(alpha=None, beta=None, gamma=None, from_run=None, runs_dir=None)
    small = make_points(lambda n: 1.0 + 0 * n, [1, 2, 4, 8, 16, 32], noise=0.002)
    steep = make_points(lambda n: -54.0 + n / 100.0, list(range(8000, 13001, 1000)), noise=0.002)
    params, source = params_from_args(a, fallback=small + steep)
    assert "not a model (negative latency" in " ".join(capsys.readouterr().err.split())
    assert "-54" not in source and params(12000).alpha_us == pytest.approx(1.0, rel=0.01)
    falling = [Synthetic(n, 10.0 - n / 100.0, 10.0 - n / 100.0 - 0.01, 10.0 - n / 100.0 + 0.01)
               for n in (100, 200, 300, 400)]
    with pytest.raises(UsageError, match="no pingpong regime that is a model"):
        params_from_args(a, fallback=falling)
