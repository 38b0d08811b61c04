"""Reading what a user's disk holds without hanging or running out of memory: a file is opened
only when it is a regular file (a FIFO would block, /dev/zero never ends) of a size a run could
have written, and JSON is parsed only when its nesting is shallow enough for the parser and for
the code that walks it (deep nesting would end in a RecursionError). No mpiscope module below it."""
from __future__ import annotations

import errno
import json
import os
import re
import stat
from functools import cache
from typing import Any, BinaryIO

MAX_DEPTH = 64  # a record nests 4 levels; run.json 6
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')  # a JSON string: its brackets do not nest anything


@cache
def _depth_steps() -> Any:
    """+1 for an opening bracket, -1 for a closing one, per byte value (numpy, loaded only when a
    line has many brackets: `mpiscope --version` imports no numpy)."""
    import numpy as np
    steps = np.zeros(256, dtype=np.int8)
    steps[[ord("["), ord("{")]] = 1
    steps[[ord("]"), ord("}")]] = -1
    return steps


class Refused(OSError):
    """A file mpiscope will not read: not a regular file, or far larger than it could be."""

    def __init__(self, path: str | os.PathLike, why: str):
        super().__init__(errno.EINVAL, why, os.fspath(path))


def open_regular(path: str | os.PathLike, max_bytes: int, what: str) -> BinaryIO:
    """`path` opened for reading when it is a regular file of at most `max_bytes`; Refused (an
    OSError whose strerror says why, e.g. a FIFO) otherwise. `what` names what it should be."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer; a regular file ignores the flag
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(path, f"is {_kind(st.st_mode)}, not the regular file mpiscope writes: move it away")
        if st.st_size > max_bytes:
            raise Refused(path, f"is {st.st_size / 2 ** 30:.1f} GiB, far more than {what} can be (at most "
                                f"{max_bytes / 2 ** 30:.0f} GiB are read): move it away")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike, max_bytes: int, what: str) -> bytes:
    """The whole of a small file, as `open_regular` allows it."""
    with open_regular(path, max_bytes, what) as f:
        return f.read(max_bytes + 1)[:max_bytes]


def too_deep(text: bytes, limit: int = MAX_DEPTH) -> bool:
    """Does the JSON `text` nest arrays and objects deeper than `limit`? Cheap for the usual line:
    only a line with more brackets than the limit is looked at closely."""
    if text.count(b"[") + text.count(b"{") <= limit:
        return False
    import numpy as np
    bare = np.frombuffer(_STRING.sub(b'""', text), dtype=np.uint8)
    return bool(np.cumsum(_depth_steps()[bare], dtype=np.int64).max(initial=0) > limit)


def loads(text: bytes | str, limit: int = MAX_DEPTH) -> Any:
    """json.loads of `text`, ValueError when it nests deeper than `limit` (or is not JSON)."""
    raw = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    if too_deep(raw, limit):
        raise ValueError(f"JSON nested deeper than {limit} levels")
    return json.loads(raw)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"

