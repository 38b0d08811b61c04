"""The studies' analysis on synthetic data: the grid ranking from a tidy table, the ring study's
factors, leaders and deadlocks from tagged typed records, and the figures of both drawn from
the same tables."""
from __future__ import annotations

import pandas as pd
import pytest
from rich.console import Console

from mpiscope.analysis import grid, ring
from mpiscope.records import Point, Rate, Stats, Timeout

SHAPES = {"1x4": 10.0, "2x2": 7.0, "4x1": 12.0}


def grid_table() -> pd.DataFrame:
    """Tidy rows as results.table.tidy makes them of grid points: cyclic order slows 2x2 by 30 %."""
    rows = []
    for size in (64, 4096):
        for order in ("block", "cyclic"):
            for shape, t in SHAPES.items():
                step = t * (1 + size / 1000) * (1.3 if (order, shape) == ("cyclic", "2x2") else 1.0)
                rows.append({"benchmark": "grid", "size": size, "ranks": 4, "variant": shape, "order": order,
                             "grid_shape": shape, "time_median_us": step, "phases_us_row": 0.4 * step,
                             "phases_us_column": 0.6 * step, "grid_max_hosts_per_row": 1,
                             "grid_max_hosts_per_column": 2, "converged": shape != "4x1"})
    rows.append({"benchmark": "pingpong", "size": 64, "time_median_us": 1.0})  # not a grid point
    return pd.DataFrame(rows)


def test_grid_ranking_is_best_first_per_panel_size():
    r = grid.ranking(grid_table())
    assert len(r) == 12 and set(r["size"]) == {64, 4096}
    for size, g in r.groupby("size"):
        assert list(g["step_us"]) == sorted(g["step_us"])
        assert list(zip(g["shape"], g["order"]))[:2] == [("2x2", "block"), ("2x2", "cyclic")]
        assert g["x_best"].iloc[0] == 1.0 and g["x_best"].iloc[1] == pytest.approx(1.3)
        assert list(g["row_us"] / g["step_us"]) == pytest.approx([0.4] * 6)
    assert set(r.columns) >= {"shape", "order", "step_us", "row_us", "column_us", "row_hosts", "column_hosts",
                              "converged", "x_best"}
    assert grid.ranking(pd.DataFrame()).empty


def test_grid_comparison_prints_the_ranking_in_order():
    from mpiscope.studies.grid import print_comparison
    console = Console(record=True, width=200)
    r = grid.ranking(grid_table())
    print_comparison(console, r)
    text = console.export_text()
    block = text.split("64 B panel", 1)[1].split("panel", 1)[0]
    shapes = [line.split("│")[1].strip() for line in block.splitlines() if line.startswith("│")]
    assert shapes == list(r[r["size"] == 64]["shape"])
    assert "1.30" in block and "no" in block  # x best of cyclic 2x2; 4x1 did not converge


def ring_records() -> list:
    """Two loads of algorithms 1 and 2 tagged by the study, algorithm 1 hanging at 4 KiB (and a slow
    point of algorithm 2 at 64 B), algorithm 5's MPI_Testall series at two nblocks."""
    out = []
    for k in (1, 2):
        for load in ("balanced", "imbalanced"):
            tag = {"series": f"alg{k} {load}", "algorithm": k, "load": load, "env_X": "1"}
            for size in (8, 64, 512, 4096, 8192):
                if k == 1 and size >= 4096 or k == 2 and size == 64:
                    out.append(Timeout(f"ringcs{k}", size, 2, limit_s=1.0, tag=tag))
                    continue
                t = 1 + size / (500 * k) * (2 if load == "imbalanced" else 1)
                out.append(Point(f"ringcs{k}", size, 2, Stats(n=10, median=t), family="ringcs",
                                 bw_MBps=Rate(16 * size / t, None), tag=tag))
    for nblock in (128, 1024):
        tag = {"series": f"alg5 nblock={nblock}", "algorithm": 5, "load": "imbalanced", "nblock": nblock}
        for size in (2048, 8192):
            t = 1 + size / nblock
            out.append(Point("ringcs5", size, 2, Stats(n=10, median=t), family="ringcs",
                             bw_MBps=Rate(16 * size / t, None), tag=tag))
        out.append(Timeout("ringcs5", 16384, 2, tag=tag))  # the nblock series are no size sweeps
    return out


def tidy_of(records: list) -> pd.DataFrame:
    from mpiscope.results.table import point_columns
    return pd.DataFrame([{**point_columns(p), "point": p} for p in records if isinstance(p, Point)])


def test_ring_points_carry_the_study_factors():
    d = ring.points(tidy_of(ring_records()))
    assert set(d["algorithm"]) == {1, 2, 5} and set(d["load"]) == {"balanced", "imbalanced"}
    assert list(d[d["nblock_series"]]["nblock"].unique()) == [128, 1024]
    assert d[~d["nblock_series"]]["nblock"].isna().all()
    assert ring.points(pd.DataFrame()).empty


def test_ring_points_without_tags_come_from_names_and_options():
    df = pd.DataFrame({"benchmark": ["ringcs3", "ringcs3", "pingpong"], "size": [8, 8, 8],
                       "opt_ncompute_a": [0, 1, 0], "opt_ncompute_b": [0, 200, 0], "opt_nblock": [64, 64, 64],
                       "factor_nblock": [None, "512", None]})
    d = ring.points(df)
    assert list(d["algorithm"]) == [3, 3] and list(d["load"]) == ["balanced", "imbalanced"]
    assert list(d["nblock_series"]) == [False, True] and list(d["nblock"]) == [64, 512]
    assert list(d["series"]) == ["ringcs3", "ringcs3"]


def test_ring_leaders_per_load_and_size():
    lead = ring.leaders(tidy_of(ring_records()))
    assert set(lead["load"]) == {"balanced", "imbalanced"}
    # algorithm 2 is faster wherever both were measured, algorithm 1 leads where 2 timed out
    both = lead[lead["size"].isin([8, 512])]
    assert set(both["algorithm"]) == {2} and set(both["runner_up"]) == {1} and (both["ratio"] > 1).all()
    assert set(lead[lead["size"] == 64]["algorithm"]) == {1} and lead[lead["size"] == 64]["runner_up"].isna().all()
    assert set(lead[lead["size"] == 8192]["algorithm"]) == {2}


def test_ring_deadlocks_from_typed_records():
    from mpiscope.report.deadlocks import deadlock_table
    table = deadlock_table(ring_records()).set_index("series")
    assert set(table.index) == {"alg1 balanced", "alg1 imbalanced", "alg2 balanced", "alg2 imbalanced"}
    alg1 = table.loc["alg1 balanced"]
    assert alg1["deadlock"] == 4096 and alg1["largest_ok"] == 512
    assert alg1["result"] == "deadlock at 4096 bytes" and alg1["env_X"] == "1"
    alg2 = table.loc["alg2 imbalanced"]
    assert pd.isna(alg2["deadlock"]) and alg2["slow"] == [64]
    assert alg2["result"] == "no deadlock up to 8192 bytes (timed out at 64 bytes, not a deadlock)"


def test_nearest_sizes_on_a_log_scale():
    assert ring.nearest_sizes(iter([0, 1000, 8000, 70000]), [1024, 8192, 1 << 20]) == {1024: 1000, 8192: 8000}


def test_ring_tables_and_deadlock_figure():
    from mpiscope.report.ring_figures import deadlock_figure
    from mpiscope.studies.ring import print_tables
    recs = ring_records()
    console = Console(record=True, width=200)
    print_tables(console, tidy_of(recs), recs)
    text = console.export_text()
    assert "leading algorithm" in text and "MPI_Testall" in text
    assert "deadlock at 4096 bytes" in text and "no deadlock up to 8192 bytes" in text
    assert "8 KiB" in text  # the bandwidth table's column nearest 8 KiB
    fig = deadlock_figure(recs)
    assert fig.axes[0].get_title() == "where each algorithm deadlocked"
