"""The terminal: standard output for results, standard error for progress and warnings.
Pipes and files get a fixed width, so a summary table does not wrap at 80 columns."""
from __future__ import annotations

import sys
from typing import Iterable

from rich.console import Console
from rich.markup import escape

out = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 120)


def warn(message: str, console: Console = err) -> None:
    """A warning on one line; its text is never read as markup (error messages quote brackets)."""
    console.print(f"[yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True)


def warn_problems(run_id: str, problems: Iterable[str]) -> None:
    """A run's damaged lines or files, one warning each."""
    for p in problems:
        warn(f"run {run_id}: {p}")
