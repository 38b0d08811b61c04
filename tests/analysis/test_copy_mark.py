"""The copy-rate mark on figures of real runs (put_bw and get_bw, MPICH, 2 ranks, this machine,
issue 43): the reference follows the layout, and a margin keeps one-copy transfers unmarked."""
from __future__ import annotations

import pandas as pd

from mpiscope.analysis.cache import above_copy_rate, copy_rate_flags, copy_reference
from mpiscope.analysis.policy import ANALYSIS

# (layout, size, bw_MBps median, copy_MB_per_s of its working set, memory_copy_MB_per_s) as recorded
READ = [("single", 1 << 20, 49412.0, 57592.0, 3817.0),     # one place: 2 MiB working set in cache
        ("single", 1 << 16, 94305.0, 114975.0, 3817.0),
        ("multiple", 1 << 20, 3324.0, 2771.0, 2771.0),     # a place per put: 128 MiB, through memory
        ("multiple", 1 << 16, 51599.0, 47532.0, 3980.0)]   # 8 MiB in the 32 MiB cache, still one copy


def frame() -> pd.DataFrame:
    return pd.DataFrame([{"buffers": b, "size": s, "bw_median_MBps": bw, "copy_MB_per_s": c,
                          "memory_copy_MB_per_s": m, "streams": 1} for b, s, bw, c, m in READ])


def test_one_place_per_epoch_is_a_cache_rate_and_is_marked():
    df = frame()
    assert list(copy_rate_flags(df)) == [True, True, False, False]
    # against its own in-cache working set the same figure reads below one copy: the old rule missed it
    single = df.iloc[0]
    assert not above_copy_rate(single.bw_median_MBps, 1, single.copy_MB_per_s)


def test_a_one_copy_transfer_above_its_copy_rate_by_less_than_the_margin_is_not_marked():
    # 1.2x and 1.09x their copy rates: a put is itself one copy, and the copy's fastest sample on a
    # loaded host can read below the put's median
    for _, row in frame()[lambda d: d.buffers == "multiple"].iterrows():
        ratio = row.bw_median_MBps / row.copy_MB_per_s
        assert 1 < ratio < ANALYSIS.copy_margin
        assert not above_copy_rate(row.bw_median_MBps, 1, copy_reference("multiple", row.copy_MB_per_s,
                                                                          row.memory_copy_MB_per_s))


def test_records_without_an_out_of_cache_rate_keep_their_own_reference():
    # runs recorded before memory_copy_MB_per_s: the working set's own copy rate, with the margin
    assert copy_reference("single", 100.0, None) == 100.0
    assert copy_reference("single", 100.0, float("nan")) == 100.0
    assert copy_reference("multiple", 100.0, 10.0) == 100.0
    old = frame().drop(columns="memory_copy_MB_per_s")
    assert not copy_rate_flags(old).any()
