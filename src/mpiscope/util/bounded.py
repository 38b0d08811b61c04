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
    """A file mpiscope will not read: not a regular file, or far larger than it could be. Its
    strerror says why and what to do; `reason` says only why (for a message that says the rest)."""

    def __init__(self, path: str | os.PathLike, reason: str):
        super().__init__(errno.EINVAL, f"{reason}: move it away", os.fspath(path))
        self.reason = reason


def open_regular(path: str | os.PathLike, max_bytes: int, what: str) -> BinaryIO:
    """`path` opened for reading when it is a regular file of at most `max_bytes`; Refused (an
    OSError whose strerror says why, e.g. a FIFO) otherwise. `what` names what it should be."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer; a regular file ignores the flag
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(path, f"is {_kind(st.st_mode)}, not the regular file mpiscope writes")
        if st.st_size > max_bytes:
            raise Refused(path, f"is {_bytes(st.st_size)}, far more than {what} can be (at most "
                                f"{_bytes(max_bytes)} are read)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike, max_bytes: int, what: str) -> bytes:
    """The whole of a small file, as `open_regular` allows it."""
    with open_regular(path, max_bytes, what) as f:
        return f.read(max_bytes + 1)[:max_bytes]


def read_text(path: str | os.PathLike, max_bytes: int, what: str) -> str:
    """A small file's UTF-8 text, a byte-order mark left out, as `open_regular` allows it;
    UnicodeDecodeError when it is not UTF-8."""
    return read_regular(path, max_bytes, what).decode("utf-8-sig")


def read_json(path: str | os.PathLike, max_bytes: int, what: str) -> Any:
    """A small JSON file's value, as `open_regular` and `loads` allow it (ValueError: not JSON)."""
    return loads(read_regular(path, max_bytes, what))


def why(e: OSError | ValueError) -> str:
    """What went wrong reading a file, in a few words for a one-line message: an OSError's own
    words, or why its bytes are not the UTF-8 text or the JSON they should be."""
    if isinstance(e, Refused):
        return e.reason
    if isinstance(e, OSError):
        return e.strerror or str(e)
    if isinstance(e, UnicodeDecodeError):
        return f"not UTF-8 text (byte {e.start})"
    if isinstance(e, json.JSONDecodeError):
        return f"not valid JSON ({e.msg}, line {e.lineno} column {e.colno})"
    return excerpt(str(e), 200)


def excerpt(text: str | bytes, limit: int = 60) -> str:
    """`text` as a message quotes it: whole when short, else its first `limit` characters and its
    length, so that a 50 MB cell never fills a terminal."""
    n, unit = len(text), "bytes" if isinstance(text, bytes) else "characters"
    shown = text[:4 * limit].decode("utf-8", "replace") if isinstance(text, bytes) else text
    return shown if n <= limit and len(shown) <= limit else f"{shown[:limit]}... ({n:,} {unit})"


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


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

