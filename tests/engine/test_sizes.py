"""The size grammar as the engine expands it (the context lists the result)."""
from __future__ import annotations

import pytest

from conftest import run_engine


@pytest.mark.parametrize("expr, units, expected", [
    ("0,1:16", "bytes", [0, 1, 2, 4, 8, 16]),
    ("3:40", "bytes", [4, 8, 16, 32]),
    ("1:4096:+1024", "bytes", [1, 1025, 2049, 3073]),
    ("1:1K:*4", "bytes", [1, 4, 16, 64, 256, 1024]),
    ("1:16:2^k-1", "bytes", [1, 2, 3, 4, 7, 8, 15, 16]),
    ("0:8:2^k-1", "words", [0, 8, 16, 24, 32, 56, 64]),
    ("64,8,8,1K", "bytes", [8, 64, 1024]),
    ("1:4M", "bytes", [1 << k for k in range(23)]),
    ("2,1", "words", [8, 16]),
])
def test_expansion(engine_mpich, mpich_launch, expr, units, expected):
    run = run_engine(mpich_launch(1), engine_mpich, "--sizes", expr, "--units", units, "--reps", "1",
                     "--max-memory", "1", "pingpong")
    # one rank is too few for pingpong: the expansion is still validated first
    assert run.returncode == 2
    run = run_engine(mpich_launch(2), engine_mpich, "--sizes", expr, "--units", units, "--reps", "1",
                     "--max-memory", "1", "pingpong")
    assert run.returncode == 0, run.stderr
    assert run.context["options"]["sizes_bytes"] == expected
