"""--layout (OSU's -D cont, vect, indx) on pingpong, pingping, bw and bibw: each
message is one derived datatype; the size is the payload, the record names the
layout and its extent, and --check compares the payload at its positions and
the untouched gaps. Both wheels; 4 ranks on Open MPI."""
from __future__ import annotations

import pytest

from conftest import run_engine

QUICK = ["--reps", "6", "--warmup", "2", "--warmup-bytes", "0"]
ROWS = ["pingpong", "pingping", "bw", "bibw"]
WINDOW = 4
# bytes each row's --check pass verifies per check iteration, for one message of `size`
VERIFIED = {"pingpong": 2, "pingping": 2, "bw": WINDOW, "bibw": 2 * WINDOW}


def expected_layout(kind: str, size: int, block: int = 4, stride: int = 8) -> dict:
    """Blocks and extent as docs/engine.md defines them."""
    if kind == "contiguous":
        return {"kind": kind, "datatype": "MPI_Type_contiguous", "payload_bytes": size, "extent_bytes": size,
                "blocks": 1 if size else 0}
    lengths, left, i = [], size, 0
    while left > 0:
        n = min(block if kind == "vector" else 1 + i % block, left)
        lengths.append(n)
        left -= n
        i += 1
    extent = (len(lengths) - 1) * stride + lengths[-1] if lengths else 0
    return {"kind": kind, "datatype": "MPI_Type_" + kind, "payload_bytes": size, "extent_bytes": extent,
            "blocks": len(lengths), "block_bytes": block, "stride_bytes": stride}


def check_run(run, kind: str, sizes: list[int], ranks: int, block: int = 4, stride: int = 8) -> None:
    assert run.returncode == 0, run.stderr
    assert run.context["options"]["layout"] == kind
    for row in ROWS:
        points = run.points(row)
        assert [p["size"] for p in points] == sizes, row
        for p in points:
            assert p["ranks"] == ranks and p["participants"] == [0, 1]
            assert p["layout"] == expected_layout(kind, p["size"], block, stride), (row, p["size"])
            assert p["check"] == {"errors": 0, "verified_bytes": 3 * VERIFIED[row] * p["size"]}, (row, p["size"])
            if p["size"]:
                assert p["bw_MBps"]["median"] == pytest.approx(p["bytes_per_op"] / p["time_us"]["median"])


@pytest.mark.parametrize("kind", ["contiguous", "vector", "indexed"])
def test_layouts_two_ranks_mpich(engine_mpich, mpich_launch, kind):
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", "0,8,1000", "--layout", kind, "--window",
                     str(WINDOW), "--check", *QUICK, *ROWS)
    check_run(run, kind, [0, 8, 1000], 2)


@pytest.mark.parametrize("kind", ["vector", "indexed"])
def test_layouts_four_ranks_openmpi(engine_openmpi, openmpi_launch, kind):
    run = run_engine(openmpi_launch(4), engine_openmpi, "--sizes", "24,4096", "--layout", kind, "--layout-block",
                     "3", "--layout-stride", "5", "--window", str(WINDOW), "--check", *QUICK, *ROWS)
    check_run(run, kind, [24, 4096] if kind == "indexed" else [24], 4, block=3, stride=5)
    if kind == "vector":  # 4096 is not a whole number of 3-byte blocks
        skips = [r for r in run.records if r["type"] == "skip"]
        assert {(s["benchmark"], s["size"]) for s in skips} == {(row, 4096) for row in ROWS}
        assert all("not a multiple of --layout-block 3" in s["reason"] for s in skips)


def test_no_layout_changes_nothing(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(2), engine_openmpi, "--sizes", "8", "--check", *QUICK, "pingpong", "bw")
    assert run.returncode == 0, run.stderr
    assert run.context["options"]["layout"] is None
    assert all("layout" not in p for p in run.points()) and len(run.points()) == 2


def test_other_rows_ignore_the_layout(engine_openmpi, openmpi_launch):
    run = run_engine(openmpi_launch(2), engine_openmpi, "--sizes", "8", "--layout", "vector", "--check", *QUICK,
                     "msgrate", "pingpong_persistent")
    assert run.returncode == 0, run.stderr
    assert all("layout" not in p and p["check"]["errors"] == 0 for p in run.points()) and len(run.points()) == 2


@pytest.mark.parametrize("kind", ["vector", "indexed"])
def test_check_catches_corruption(engine_openmpi, openmpi_launch, kind):
    run = run_engine(openmpi_launch(2), engine_openmpi, "--sizes", "64", "--layout", kind, "--check", *QUICK,
                     "pingpong", "bw", env={"MPISCOPE_FAULT": "corrupt"})
    assert run.returncode == 0, run.stderr
    assert all(p["check"]["errors"] > 0 for p in run.points()) and len(run.points()) == 2


def test_overlapping_blocks_are_refused(engine_mpich):
    run = run_engine([], engine_mpich, "--plan", "--ranks", "2", "--layout", "vector", "--layout-block", "8",
                     "--layout-stride", "4", "pingpong")
    assert run.returncode == 2
    assert run.stderr.strip() == ("mpiscope-engine: error: --layout-stride (4) must be at least --layout-block (8): "
                                  "blocks may not overlap")
