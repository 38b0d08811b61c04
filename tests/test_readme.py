"""The README's tables are whole: every row of the question table has a question and a command,
and the command table lists every command and sub-command the CLI has."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from mpiscope.cli import parser

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def table(heading_row: str) -> list[list[str]]:
    """The rows of the Markdown table that starts with `heading_row`, cells split on unescaped |."""
    lines = README[README.index(heading_row):].splitlines()
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows


def commands() -> list[str]:
    """`run`, `mpi list`, `study ring`, ...: every command a user can type."""
    def walk(p: argparse.ArgumentParser, prefix: str) -> list[str]:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            return [prefix]
        return [name for sub in subs for cmd, child in sub.choices.items() for name in walk(child, f"{prefix} {cmd}")]
    return [c.strip() for c in walk(parser(), "")]


def test_the_question_table_has_a_command_for_every_question():
    rows = table("| the question | the command |")
    assert len(rows) >= 8
    for question, *rest in rows:
        assert len(rest) == 1 and "`mpiscope " in rest[0] and "mpiscope" not in question, (question, rest)


def test_the_command_table_lists_every_command():
    listed = " ".join(row[0] for row in table("| command | what it does |"))
    missing = [c for c in commands() if f"`mpiscope {c}" not in listed]
    assert not missing, f"README's Commands table lacks: {missing}"
    assert len(commands()) >= 18
