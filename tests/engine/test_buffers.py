"""Buffer layouts of the streaming rows on the real engine (--buffers for bw, bibw, msgrate;
--rma-buffers for put_bw, get_bw, put_bibw, get_bibw): --check under each layout, the layout and
its working set recorded in every point, the launch's copy rate beside every bandwidth figure,
and a figure above that copy rate marked by the analysis."""
from __future__ import annotations

import pandas as pd
import pytest

from conftest import run_engine
from mpiscope.analysis.cache import above_copy_rate, copy_rate_flags, copy_reference
from mpiscope.analysis.policy import ANALYSIS
from mpiscope.report.copyrate import MARK
from mpiscope.report.table import side_by_side

QUICK = ["--max-time", "0.05", "--warmup-bytes", "64K"]
SIZES = [8, 4096, 1 << 20]
WINDOW = 8
STREAMS = {"bw": 1, "bibw": 2, "msgrate": 1, "put_bw": 1, "get_bw": 1, "put_bibw": 2, "get_bibw": 2}


@pytest.mark.parametrize("layout", ["single", "multiple"])
def test_p2p_layouts_check_and_working_set_mpich(engine_mpich, mpich_launch, layout):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", ",".join(map(str, SIZES)), "--check",
                     "--window", str(WINDOW), "--buffers", layout, *QUICK, "bw", "bibw", "msgrate")
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.context["options"]["buffers"] == layout
    points = run.points()
    assert {(p["benchmark"], p["size"]) for p in points} == {(b, s) for b in ("bw", "bibw", "msgrate") for s in SIZES}
    slots = 1 if layout == "single" else WINDOW
    for p in points:
        assert p["check"]["errors"] == 0 and p["check"]["verified_bytes"] > 0, p
        assert p["buffers"] == layout and p["buffer_slots"] == slots
        # one stream's distinct source and destination bytes of an event
        assert p["working_set_bytes"] == 2 * slots * p["size"]
        assert p["streams"] == STREAMS[p["benchmark"]]
        assert p["copy_MB_per_s"] > 0


def test_p2p_default_is_single_as_osu_bw(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "1M", *QUICK, "bw")
    assert run.returncode == 0, run.stderr
    assert run.context["options"]["buffers"] is None
    (p,) = run.points()
    assert (p["buffers"], p["buffer_slots"], p["working_set_bytes"]) == ("single", 1, 2 << 20)


@pytest.mark.parametrize("layout", ["single", "multiple", None])
def test_rma_layouts_check_and_working_set_mpich(engine_mpich, mpich_launch, layout):
    given = ["--rma-buffers", layout] if layout else []
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", ",".join(map(str, SIZES)), "--check",
                     "--rma-ops", str(WINDOW), "--rma-sync", "fence,flush,pscw", *given, *QUICK,
                     "put_bw", "get_bw", "put_bibw", "get_bibw", "put_latency", timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    slots = 1 if layout == "single" else WINDOW  # multiple is the default, as osu_put_bw's sbuf + j*size
    for p in run.points():
        assert p["check"]["errors"] == 0, p
        if p["benchmark"] == "put_latency":  # one operation per epoch: no layout to choose
            assert "buffers" not in p and p["working_set_bytes"] == 2 * p["size"]
            continue
        assert p["buffers"] == (layout or "multiple") and p["buffer_slots"] == slots
        # bibw: each direction's checks cover its own places
        directions = 2 if p["benchmark"].endswith("bibw") else 1
        assert p["check"]["verified_bytes"] == 3 * directions * slots * p["size"]
        assert p["working_set_bytes"] == 2 * slots * p["size"]
        assert p["streams"] == STREAMS[p["benchmark"]]
        assert p["copy_MB_per_s"] > 0


def test_rma_layouts_openmpi(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(2), engine_openmpi, "--sizes", "8,64K", "--check", "--rma-ops", "4",
                     "--rma-sync", "lock,flush_local", "--rma-buffers", "multiple", *QUICK, "put_bw", "get_bibw",
                     timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    assert {p["benchmark"] for p in run.points()} == {"put_bw", "get_bibw"}
    for p in run.points():
        assert p["check"]["errors"] == 0 and p["buffer_slots"] == 4
        assert p["working_set_bytes"] == 8 * p["size"]


@pytest.mark.parametrize("args, fragment", [
    (["--buffers", "double", "bw"], "--buffers"),
    (["--rma-buffers", "many", "put_bw"], "--rma-buffers"),
])
def test_a_wrong_layout_is_one_line_and_status_2(engine_mpich, mpich_launch, args, fragment):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8", *args)
    assert run.returncode == 2 and fragment in run.stderr and "single" in run.stderr
    assert "Traceback" not in run.stderr and not run.points()


def test_a_figure_above_the_copy_rate_is_marked(engine_mpich, mpich_launch):
    # one real run whose points carry the launch's copy rates; the figures themselves are then
    # put above and below the reference, so the outcome does not depend on this machine's speed
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "64K", *QUICK, "bw", "bibw")
    assert run.returncode == 0, run.stderr
    rows, margin = [], ANALYSIS.copy_margin
    for p in run.points():
        copy, memory, streams = p["copy_MB_per_s"], p["memory_copy_MB_per_s"], p["streams"]
        assert copy > 0 and memory > 0
        # bw and bibw send a window's messages from one buffer into one (osu_bw's layout): the
        # working set stays in the cache, so the reference is the out-of-cache copy
        ref = copy_reference(p["buffers"], copy, memory)
        assert p["buffers"] == "single" and ref == memory
        median = p["bw_MBps"]["median"]
        assert above_copy_rate(median, streams, ref) == (median / streams > margin * ref)
        assert above_copy_rate(1.01 * margin * streams * ref, streams, ref)
        assert not above_copy_rate(0.99 * margin * streams * ref, streams, ref)
        # bibw's two streams together may exceed one copy: only a stream's share counts
        assert above_copy_rate(1.5 * margin * ref, streams, ref) == (streams == 1)
        for scale, run_id in ((3.0, "fast"), (0.5, "slow")):
            rows.append({"run_id": run_id, "benchmark": p["benchmark"], "size": p["size"], "buffers": p["buffers"],
                         "bw_median_MBps": scale * margin * streams * ref, "time_median_us": 1.0,
                         "copy_MB_per_s": copy, "memory_copy_MB_per_s": memory, "streams": streams,
                         "mpi_name": run_id})
    df = pd.DataFrame(rows)
    assert list(copy_rate_flags(df)) == [r["run_id"] == "fast" for r in rows]
    for t in side_by_side(df):
        fast, slow = (c for c in t.columns if "fast" in c), (c for c in t.columns if "slow" in c)
        assert t.cell(65536, next(fast)).endswith(MARK) and not t.cell(65536, next(slow)).endswith(MARK)
        assert "buffers: single" in t.note and "memcpy" in t.note


def test_without_a_copy_rate_nothing_is_marked():
    assert not above_copy_rate(1e9, 1, None)
    assert not above_copy_rate(1e9, 1, float("nan"))
    assert not above_copy_rate(None, 1, 100.0)
    assert copy_reference("single", None, None) is None
    df = pd.DataFrame({"bw_median_MBps": [1e9]})
    assert not copy_rate_flags(df).any()


def test_the_html_report_marks_the_figure_and_names_the_layout():
    from mpiscope.report.html import _one_config
    rows = pd.DataFrame({"size": [65536, 1 << 20], "time_median_us": [1.0, 2.0], "time_ci_low_us": [0.9, 1.9],
                         "time_ci_high_us": [1.1, 2.1], "converged": [True, True], "stop_reason": ["ci", "ci"],
                         "samples": [10, 10], "bw_median_MBps": [1e6, 10.0], "copy_MB_per_s": [5e4, 5e4],
                         "streams": [1, 1], "buffers": ["multiple", "multiple"]})
    html = _one_config(rows, "<h3>bw</h3>")
    assert "buffers: multiple" in html
    first, second = html.split("<tr>")[2:4]  # the header row, then one row per size
    assert MARK in first and MARK not in second


def test_the_mark_flags_an_in_cache_rate_not_a_one_copy_transfer_mpich(engine_mpich, mpich_launch):
    """put_bw and get_bw at 1 MiB on 2 ranks. With --rma-buffers single every put of an epoch lands
    in one place: a cache rate (43-53 GB/s here), about the copy rate of its own in-cache working
    set, so it was never marked; held against the out-of-cache copy it is. In the default layout
    each put has its own place, one copy of a working set beyond the cache at about that copy's
    rate (0.5-1.4x here): not marked."""
    flags = {}
    for layout in ("single", "multiple"):
        run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "1M", "--rma-buffers", layout,
                         "--max-time", "0.2", "put_bw", "get_bw")
        assert run.returncode == 0, run.stderr[-3000:]
        df = pd.DataFrame([{"bw_median_MBps": p["bw_MBps"]["median"], "streams": p["streams"],
                            "buffers": p["buffers"], "copy_MB_per_s": p["copy_MB_per_s"],
                            "memory_copy_MB_per_s": p["memory_copy_MB_per_s"]} for p in run.points()])
        assert set(df["buffers"]) == {layout}
        flags[layout] = list(copy_rate_flags(df))
    assert flags == {"single": [True, True], "multiple": [False, False]}


# --buffer-offset: where the buffers sit past a page boundary. The point records the placement
# the engine's pointers have (not the option echoed), so a pool that lost its offset fails here.
OFFSET_ROWS = ("pingpong", "bw", "bcast", "allgather", "alltoall", "reduce", "ibcast")


@pytest.mark.parametrize("given, want", [("16", [16, 16]), ("0,16", [0, 16]), ("2048,48", [2048, 48])])
def test_buffer_offset_places_checks_and_records_mpich(engine_mpich, mpich_launch, given, want):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8,4096,65536", "--check", "--buffer-offset", given,
                     *QUICK, *OFFSET_ROWS)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.context["options"]["buffer_offset"] == want
    points = run.points()
    assert {p["benchmark"] for p in points} == set(OFFSET_ROWS)
    for p in points:
        assert p["check"]["errors"] == 0 and p["check"]["verified_bytes"] > 0, p
        assert p["buffer_offset"] == want, p


def test_buffer_offset_keeps_every_slot_of_a_pool_openmpi(engine_openmpi, openmpi_launch):
    # --off-cache cycles slots: each keeps the offset, and the data still arrives whole
    run = run_engine(openmpi_launch(2), engine_openmpi, "--sizes", "4096,65536", "--check", "--off-cache=1M",
                     "--buffer-offset", "0,48", "--buffers", "multiple", "--window", str(WINDOW), *QUICK,
                     "bw", "allgather")
    assert run.returncode == 0, run.stderr[-3000:]
    for p in run.points():
        assert p["check"]["errors"] == 0 and p["buffer_offset"] == [0, 48], p


def test_buffers_are_page_aligned_by_default_as_osu(engine_mpich, mpich_launch):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "65536", *QUICK, "pingpong", "bcast")
    assert run.returncode == 0, run.stderr
    assert run.context["options"]["buffer_offset"] == [0, 0]
    assert [p["buffer_offset"] for p in run.points()] == [[0, 0], [0, 0]]


@pytest.mark.parametrize("bad", ["4096", "-1", "1,2,3", "16,", ",16", "x", "0x10", ""])
def test_a_wrong_buffer_offset_is_one_line_and_status_2(engine_mpich, mpich_launch, bad):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "8", "--buffer-offset", bad, "bw")
    assert run.returncode == 2, run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("mpiscope-engine: error:")]
    assert len(errors) == 1 and "--buffer-offset" in errors[0], run.stderr
    assert run.records == []
