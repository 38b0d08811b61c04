"""Files written whole or not at all: a temporary file beside the target, renamed over it, and
lines appended whole after a fragment left by a crash is cut off. No mpiscope module below it."""
from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Callable

RESERVE = ".reserve"    # a run directory's room for its last run.json on a full disk
RESERVE_BYTES = 64 * 1024


def write_atomic(path: str | os.PathLike, data: bytes | str, before_retry: Callable[[], bool] | None = None) -> None:
    """Write `data` to `path` through `path.tmp` and a rename: readers see the old file or the new
    one, never a part. On failure the temporary file is removed and the target is untouched;
    `before_retry` (freeing room) is called once on a full disk and, when it returns True, the
    write is tried again."""
    path = Path(path)
    # surrogate escapes (a file name that is not UTF-8, in a report) go out as the bytes they came from
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    tmp = path.with_name(path.name + ".tmp")
    try:
        _write_synced(tmp, raw)
        os.replace(tmp, path)
    except BaseException as e:  # an interrupt too: no temporary file is left behind
        _unlink_quietly(tmp)
        if isinstance(e, OSError) and e.errno == errno.ENOSPC and before_retry is not None and before_retry():
            write_atomic(path, raw)
            return
        raise


def _write_synced(path: Path, raw: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink_quietly(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def cut_fragment(path: str | os.PathLike) -> int:
    """Cut off a last line that has no newline (half a record left by a kill or a full disk), so
    the next line appended starts on a line of its own; returns the bytes cut."""
    try:
        f = open(path, "rb+")
    except FileNotFoundError:
        return 0
    with f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return 0
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return 0
        end, step = size, 64 * 1024
        while end > 0:  # look back for the last newline
            start = max(0, end - step)
            f.seek(start)
            chunk = f.read(end - start)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                keep = start + nl + 1
                break
            end = start
        else:
            keep = 0
        f.truncate(keep)
        return size - keep


class LineAppender:
    """Appends whole lines only; each is synced so a crash keeps everything before it. A line
    that does not fit (a full disk) is taken back, never left half-written."""

    def __init__(self, path: str | os.PathLike):
        cut_fragment(path)
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def append(self, line: bytes) -> None:
        if not line.endswith(b"\n"):
            raise ValueError("only complete lines are stored")
        at = os.lseek(self.fd, 0, os.SEEK_END)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(self.fd, view):]
            os.fsync(self.fd)
        except OSError:
            try:
                os.ftruncate(self.fd, at)
            except OSError:
                pass
            raise

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def reserve(directory: str | os.PathLike) -> None:
    """Room kept aside in `directory` so that, when the disk fills, the run can still be marked
    failed (a new run.json needs a new file's room); best effort."""
    path = Path(directory) / RESERVE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    except OSError:
        return
    try:
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        except (OSError, AttributeError):
            os.ftruncate(fd, 0)
            os.write(fd, b"\0" * RESERVE_BYTES)
    except OSError:  # no room even for that: the records need it more
        os.close(fd)
        release(directory)
        return
    os.close(fd)


def release(directory: str | os.PathLike) -> bool:
    """Free the reserve of `directory`; True when there was one."""
    try:
        (Path(directory) / RESERVE).unlink()
        return True
    except OSError:
        return False
