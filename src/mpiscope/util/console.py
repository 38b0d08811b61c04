"""The terminal: standard output for results, standard error for progress and warnings.
Pipes and files get a fixed width, so a summary table does not wrap at 80 columns."""
from __future__ import annotations

import sys
from typing import Any, Collection, Iterable

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def _console(stderr: bool) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, highlight=False, width=None if stream.isatty() else 120)


out = _console(stderr=False)
err = _console(stderr=True)


def renew() -> None:
    """Both consoles set up again for the present sys.stdout, sys.stderr and environment, as a
    new process sets them up (the tests run commands in-process). In place: `warn` and other
    modules hold these objects."""
    for console in (out, err):
        console.__dict__.update(_console(console.stderr).__dict__)


def warn(message: str, console: Console = err) -> None:
    """A warning on one line; its text is never read as markup (error messages quote brackets)."""
    console.print(f"[yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True)


def warn_problems(run_id: str, problems: Iterable[str]) -> None:
    """A run's damaged lines or files, one warning each."""
    for p in problems:
        warn(f"run {run_id}: {p}")


def records_of(runs: Iterable[Any]) -> list[Any]:
    """Every record of `runs` (store.Run) in order, each run's damaged lines or files warned about."""
    out: list[Any] = []
    for run in runs:
        recs = run.records()
        warn_problems(run.id, recs.problems)
        out += recs.records
    return out


def make_table(title: str, columns: Iterable[str], left: Collection[str] | None = None, **kw) -> Table:
    """A table titled on the left; its columns are left-aligned when `left` is None, else only
    those in `left` are and the rest (figures) right-aligned."""
    t = Table(title=title, title_justify="left", **kw)
    for col in columns:
        t.add_column(col, justify="left" if left is None or col in left else "right")
    return t
