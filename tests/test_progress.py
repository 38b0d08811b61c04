"""The progress bar of a launch draws only where it can be redrawn: on a pipe or a file it
writes nothing, so a log holds no empty line per launch before the results."""
from __future__ import annotations

import io

from rich.console import Console

from mpiscope.execute.part import _Progress
from mpiscope.plan.engine import Planned, PlanPoint

POINTS = [PlanPoint(id=i, benchmark="pingpong", size=8 << i, ranks=2) for i in range(3)]


def launches(console: Console, n: int = 15) -> None:
    """n launches' bars, each advanced over its points, then the headline."""
    for _ in range(n):
        bar = _Progress(POINTS, Planned(tuple(POINTS)), console, True)
        with bar.bar:
            for _ in POINTS:
                bar.advance(1)
    console.print("headline")


def test_a_pipe_gets_no_empty_lines():
    stream = io.StringIO()
    launches(Console(file=stream, width=120))
    assert stream.getvalue() == "headline\n"


def test_a_terminal_still_gets_the_bar():
    stream = io.StringIO()
    launches(Console(file=stream, width=120, force_terminal=True, force_interactive=True), n=1)
    assert "pingpong" in stream.getvalue() or "finishing" in stream.getvalue()
