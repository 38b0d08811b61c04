"""Issue 47: `report -o` and `export -o` replace nothing they do not own. A regular file is written
whole (temporary file and rename); standard output, a FIFO or a character device is written into
and stays what it was; a node that takes no output is refused in one line. Real FIFOs, real
device nodes (made here with mknod, never the machine's own), a real socket."""
from __future__ import annotations

import json
import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from mpiscope.records import Context, End
from mpiscope_test_fixtures.synthetic import launch_point, stored_run

WRITERS = [("export", "--format", "csv"), ("report",)]
NULL, FULL = os.makedev(1, 3), os.makedev(1, 7)  # the numbers of /dev/null and /dev/full


@pytest.fixture
def run(tmp_path) -> Path:
    recs = [launch_point(1.0 + k / 10, k, size=s) for k in range(3) for s in (8, 1024)]
    return stored_run(tmp_path / "runs", [Context(world_size=2), *recs, End(points=len(recs))]).path


def one_error_line(r, fragment: str) -> str:
    said = " ".join(r.stderr.split())
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and fragment in said, said
    return said


def device(where: Path, number: int) -> Path:
    node = where / f"dev{os.minor(number)}"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, number)
    except PermissionError:
        pytest.skip("mknod needs root")
    return node


def kind(path: Path) -> tuple[int, int, int]:
    st = os.lstat(path)
    return stat.S_IFMT(st.st_mode), st.st_rdev, st.st_ino


@pytest.mark.parametrize("writer", WRITERS)
def test_a_fifo_is_written_into_and_stays_a_fifo(cli_offline, run, tmp_path, writer):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    r = cli_offline(*writer, str(run), "-o", str(fifo))
    reader.join(timeout=30)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and not list(tmp_path.glob("out.fifo*.tmp"))
    text = got[0].decode()
    if writer[0] == "report":
        assert text.startswith("<!doctype html>") and text.rstrip().endswith("</html>")
    else:
        assert text == cli_offline(*writer, str(run), "-o", "-").stdout


@pytest.mark.parametrize("writer", WRITERS)
def test_a_fifo_nobody_reads_is_refused_in_one_line(cli_offline, run, tmp_path, writer, monkeypatch):
    monkeypatch.setattr("mpiscope.util.output.READER_WAIT_S", 0.3)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    one_error_line(cli_offline(*writer, str(run), "-o", str(fifo)), "nobody read the FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_device_node_is_written_into_never_replaced(cli_offline, run, tmp_path, writer):
    """A node made here first; the machine's /dev/null only once that one survived, so a writer
    that replaces nodes fails here without harming the machine."""
    for null in (device(tmp_path, NULL), Path("/dev/null")):
        before = kind(null)
        r = cli_offline(*writer, str(run), "-o", str(null))
        assert r.returncode == 0, r.stderr
        assert kind(null) == before and stat.S_ISCHR(before[0]), null


@pytest.mark.parametrize("writer", WRITERS)
def test_a_full_device_is_one_line_and_stays(cli_offline, run, tmp_path, writer):
    full = device(tmp_path, FULL)
    before = kind(full)
    one_error_line(cli_offline(*writer, str(run), "-o", str(full)), "No space left on device")
    assert kind(full) == before


@pytest.mark.parametrize("writer", WRITERS)
def test_a_socket_is_refused(cli_offline, run, tmp_path, writer):
    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        one_error_line(cli_offline(*writer, str(run), "-o", str(path)), "it is a socket")
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_dash_is_standard_output(cli_offline, run, tmp_path, writer):
    r = cli_offline(*writer, str(run), "-o", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("<!doctype html>" if writer[0] == "report" else "run")
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("writer", WRITERS)
def test_a_file_is_replaced_whole_and_a_link_stays_a_link(cli_offline, run, tmp_path, writer):
    real = tmp_path / "real.out"
    real.write_text("old")
    link = tmp_path / "link.out"
    link.symlink_to(real)
    old_inode = real.stat().st_ino
    r = cli_offline(*writer, str(run), "-o", str(link))
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.stat().st_ino != old_inode and real.read_text() != "old"  # a new file, renamed in
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.out", "real.out", "runs"]


def test_saved_facts_go_into_a_fifo_and_a_device_never_over_them(tmp_path):
    """doctor --save-facts writes through the same writer."""
    from mpiscope.doctor.facts import Facts
    facts = Facts(mpi_name="embedded", hosts=["h0"])
    fifo = tmp_path / "facts.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    facts.save(fifo)
    reader.join(timeout=30)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and Facts.from_json(json.loads(got[0])) == facts
    null = device(tmp_path, NULL)
    before = kind(null)
    facts.save(null)
    assert kind(null) == before


def test_plot_writes_into_a_fifo_and_a_device_named_like_its_files(cli_offline, osu_run, tmp_path):
    r = cli_offline("plot", str(osu_run), "-o", str(tmp_path / "first"))
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in (tmp_path / "first").glob("*.png"))
    assert len(names) >= 2, names
    out = tmp_path / "out"
    out.mkdir()
    fifo = out / names[0]
    os.mkfifo(fifo)
    null = device(out, NULL)
    null.rename(out / names[1])
    before = kind(out / names[1])
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    r = cli_offline("plot", str(osu_run), "-o", str(out))
    reader.join(timeout=30)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and got[0].startswith(b"\x89PNG")
    assert kind(out / names[1]) == before and not list(out.glob(".*.tmp*"))
    assert (out / names[2]).read_bytes().startswith(b"\x89PNG") if len(names) > 2 else True


def test_plot_refuses_a_socket_named_like_its_file(cli_offline, osu_run, tmp_path):
    r = cli_offline("plot", str(osu_run), "-o", str(tmp_path / "first"))
    name = sorted(p.name for p in (tmp_path / "first").glob("*.png"))[0]
    out = tmp_path / "out"
    out.mkdir()
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(out / name))
        one_error_line(cli_offline("plot", str(osu_run), "-o", str(out)), "will not write into")
        assert stat.S_ISSOCK(os.lstat(out / name).st_mode)
