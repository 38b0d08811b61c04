"""Every file mpiscope reads is read through one bounded reader (util.bounded): a FIFO, a device,
a file far too large, nesting too deep for the parser or bytes that are not text are a one-line
error and exit 2, never a hang, a memory exhaustion or a traceback (issue 47). Each command runs
as its own process, its address space capped, so that a reader without bounds fails here rather
than take the machine."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from mpiscope.util import bounded
from mpiscope_test_fixtures.cli import run_forked

MEMORY = 1 << 30


def limited(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    """mpiscope as its own process (forked from this one, its imports paid), its address space
    capped at MEMORY beyond what it holds (a hang is the timeout's error)."""
    return run_forked(*args, memory=MEMORY, cwd=cwd, timeout=timeout)


def one_line_error(r: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr, r.stderr[-2000:]
    assert r.returncode == 2 and r.stderr.startswith("mpiscope: error:") and len(r.stderr.splitlines()) == 1, \
        r.stderr[-2000:]
    return " ".join(r.stderr.split())


# Each maker puts something hostile at `path` and returns the words the error must hold.
def _fifo(path: Path) -> str:
    os.mkfifo(path)
    return "is a FIFO (named pipe)"


def _zero(path: Path) -> str:
    path.symlink_to("/dev/zero")
    return "is a character device"


def _deep(path: Path) -> str:
    path.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return "nested deeper than"


def _binary(path: Path) -> str:
    path.write_bytes(b"{\xff\xfe\x00" + bytes(range(256)) * 100)
    return "not UTF-8 text"


def _huge(path: Path) -> str:
    with open(path, "wb") as f:
        f.truncate(300 << 20)  # sparse: 300 MB that take no room
    return "far more than"


HOSTILE: dict[str, Callable[[Path], str]] = {"fifo": _fifo, "dev-zero": _zero, "deep": _deep, "binary": _binary,
                                             "huge": _huge}


@pytest.mark.parametrize("kind", HOSTILE)
def test_tune_show_reads_a_hostile_file_as_one_line(tmp_path, kind):
    words = HOSTILE[kind](tmp_path / "tuned.json")
    assert words in one_line_error(limited("tune", "--show", "tuned.json", cwd=tmp_path))


@pytest.mark.parametrize("kind", HOSTILE)
def test_tune_resume_reads_a_hostile_state_as_one_line(tmp_path, kind):
    (tmp_path / "tune-1").mkdir()
    words = HOSTILE[kind](tmp_path / "tune-1" / "state.json")
    assert words in one_line_error(limited("tune", "--resume", "tune-1", "--runs-dir", str(tmp_path), cwd=tmp_path))


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "huge"])
def test_a_hostile_spec_is_one_line(tmp_path, kind):
    words = HOSTILE[kind](tmp_path / "spec.toml")
    said = one_line_error(limited("sweep", "spec.toml", "--runs-dir", str(tmp_path), cwd=tmp_path))
    assert (words if kind != "huge" else "far more than a spec can be") in said


def test_a_spec_with_a_byte_order_mark_is_read(tmp_path):
    from mpiscope.plan.spec import load_spec
    (tmp_path / "spec.toml").write_bytes(b"\xef\xbb\xbf" + b'name = "bom"\n[measure]\nbenchmarks = "pingpong"\n')
    assert load_spec(tmp_path / "spec.toml").name == "bom"


def test_the_reader_says_why_in_a_few_words(tmp_path):
    (tmp_path / "a.json").write_text('{"a": ')
    with pytest.raises(ValueError) as e:
        bounded.read_json(tmp_path / "a.json", 1 << 20, "a test file")
    assert bounded.why(e.value).startswith("not valid JSON (")
    os.mkfifo(tmp_path / "f")
    with pytest.raises(OSError) as e:
        bounded.read_json(tmp_path / "f", 1 << 20, "a test file")
    assert bounded.why(e.value) == "is a FIFO (named pipe), not the regular file mpiscope writes"
    (tmp_path / "b.json").write_text(json.dumps({"x": 1}))
    with pytest.raises(OSError, match=r"is 8 bytes, far more than a test file can be \(at most 4 bytes"):
        bounded.read_json(tmp_path / "b.json", 4, "a test file")


def test_an_excerpt_is_short_and_says_how_long_the_whole_was():
    assert bounded.excerpt("short") == "short"
    assert bounded.excerpt("x" * 5_000_000) == "x" * 60 + "... (5,000,000 characters)"
    assert bounded.excerpt(b"\xff" * 100, 10).endswith("... (100 bytes)")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "deep"])
@pytest.mark.parametrize("args", [["doctor", "--facts", "f.json"], ["batch-run", "f.json"]])
def test_facts_and_saved_configurations_are_read_bounded(tmp_path, kind, args):
    words = HOSTILE[kind](tmp_path / "f.json")
    assert words in one_line_error(limited(*args, "--runs-dir", str(tmp_path), cwd=tmp_path)
                                   if args[0] == "batch-run" else limited(*args, cwd=tmp_path))


@pytest.mark.parametrize("kind", ["fifo", "deep"])
def test_a_registry_of_mpis_that_is_no_file_is_said(tmp_path, kind):
    home = tmp_path / "home"
    home.mkdir()
    words = HOSTILE[kind](home / "mpis.json")
    r = run_forked("mpi", "list", memory=MEMORY, env={"MPISCOPE_HOME": str(home)})
    assert words in one_line_error(r)
