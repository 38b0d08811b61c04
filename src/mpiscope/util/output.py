"""Where a command's output goes (`-o`): a regular file is written whole through a temporary file
and a rename; standard output, a FIFO or a character device (a pipe, a terminal, /dev/null) is
written into, since a rename would replace a node mpiscope does not own. No mpiscope module below it."""
from __future__ import annotations

import errno
import os
import stat
import sys
import time
from pathlib import Path

from mpiscope.util.atomic import write_atomic
from mpiscope.util.errors import UsageError

STDOUT = "-"
READER_WAIT_S = 10.0  # how long a FIFO may stay without a reader before the write is refused


def write_output(path: str | os.PathLike, data: bytes | str) -> None:
    """Write `data` to `path` ('-' is standard output). OSError when the write fails; UsageError
    for a node that takes no output (a block device, a socket) or a FIFO nobody reads."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    if os.fspath(path) == STDOUT:
        sys.stdout.buffer.write(raw)
        sys.stdout.flush()
        return
    try:
        mode = os.stat(path).st_mode  # through links, /dev/stdout's too
    except FileNotFoundError:
        mode = stat.S_IFREG
    if stat.S_ISFIFO(mode):
        fd = _open_fifo(Path(path))
    elif stat.S_ISCHR(mode):
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY)
    elif stat.S_ISREG(mode) or stat.S_ISDIR(mode):  # a directory: write_atomic's own error
        write_atomic(os.path.realpath(path), raw)  # a link stays, its target is the file written
        return
    else:
        raise UsageError(f"will not write into {path}: it is a {_kind(mode)}, not a file, a FIFO or a "
                         f"character device; give a file with -o")
    try:
        _write_all(fd, raw)
    finally:
        os.close(fd)


def _open_fifo(path: Path) -> int:
    """A FIFO opened for writing once a reader has it open; waiting without end would hang."""
    deadline = time.monotonic() + READER_WAIT_S
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
            if time.monotonic() > deadline:
                raise UsageError(f"nobody read the FIFO {path} within {READER_WAIT_S:g} s: start its reader "
                                 f"first, or give a file with -o") from e
            time.sleep(0.05)
            continue
        os.set_blocking(fd, True)  # the reader sets the pace from here
        return fd


def _write_all(fd: int, raw: bytes) -> None:
    view = memoryview(raw)
    while view:
        view = view[os.write(fd, view):]


def _kind(mode: int) -> str:
    return "block device" if stat.S_ISBLK(mode) else "socket" if stat.S_ISSOCK(mode) else "special file"
