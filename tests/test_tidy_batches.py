"""The tidy table gathers the points of a launch whose columns are alike a column at a time
(results.table._Batch): it must be the table pandas makes of one dict per point, whatever the
points hold, including names that collide (a tag key that is also a field, a detail called
`placement`), shapes that alternate within a launch, and points that take the dict path."""
from __future__ import annotations

import pandas as pd

from mpiscope.records import Context, End, Point, Stats
from mpiscope.records.model import Pair, Rate
from mpiscope.results import table
from mpiscope_test_fixtures.synthetic import stored_run, tidy_row_by_row


def _points(launch: int) -> list[Point]:
    t = Stats(n=100, median=1.0 + launch / 10, min=0.9, ci_low=0.95, ci_high=1.05)
    tag = {"launch": launch}
    return [
        Point("pingpong", 8, 2, t, family="p2p", bw_MBps=Rate(8.0, 9.0), tag=tag,
              pairs=(Pair((0, 1), True),), disturbance={"nivcsw": [0, 900 * (launch % 2)]}, elapsed_s=0.01),
        Point("allreduce", 8, 2, t, family="coll", busbw_MBps=Rate(4.0, 5.0, 4.5), busbw_factor=1.0, tag=tag),
        Point("pingpong", 16, 2, t, family="p2p", bw_MBps=Rate(16.0, 17.0), tag=tag, details={"placement": "x"}),
        Point("allreduce", 16, 2, t, family="coll", tag={**tag, "benchmark": "renamed", "series": 3},
              details={"datatype": "double", "op": "sum"}, msg_rate=2.5),
        Point("pingpong", 32, 2, t, family="p2p", tag=tag, clock_sync={"error_share": 0.1, "offset_us": 2}),
        Point("pingpong", 64, 2, t, family="p2p", tag={"launch": "first" if launch == 0 else launch},
              details={"grid": {"rows": 2}}, window_us=3.0, converged=True, stop_reason="ci"),
    ]


def test_batched_columns_are_the_rows_of_every_point(tmp_path):
    records: list = []
    for launch in range(3):
        records.append(Context(world_size=2, cores_online=2, options={"window": 64 if launch else "auto"}))
        records += _points(launch)
        records.append(End(points=6, elapsed_s=1.0))
    run = stored_run(tmp_path / "runs", records)
    got = table.tidy([run])
    want = tidy_row_by_row(run)
    assert list(got.columns) == list(want.columns)
    pd.testing.assert_frame_equal(got, want)
    assert list(got["benchmark"][:4]) == ["pingpong", "allreduce", "pingpong", "renamed"]  # the tag's, as in a dict
    # the point's placement, not the detail of that name; a launch that is no number is launch 0
    assert got["placement"][0] == "intra-node" and got["placement"][1:3].isna().all() and got["launch"][5] == 0


def test_every_point_of_the_usual_shapes_is_batched(tmp_path, monkeypatch):
    """Only the points with a clock sync or a nested detail take the dict path."""
    records: list = [Context(world_size=2)]
    for launch in range(2):
        records += _points(launch)
    run = stored_run(tmp_path / "runs", records)
    rows: list = []
    real = table._Columns.add
    monkeypatch.setattr(table._Columns, "add", lambda self, base, row: (rows.append(row), real(self, base, row)))
    assert len(table.tidy([run])) == 12
    assert [r["size"] for r in rows] == [32, 64] * 2
