"""One owner at a time for a run or a sweep directory: a POSIX record lock on its `owner.lock`,
which the kernel drops when the owning process dies however it dies (SIGKILL, a crash), so a
dead owner never blocks a resume and a live one always does. The file also says who owns it
(pid and host) for the message. No mpiscope module below it but errors."""
from __future__ import annotations

import fcntl
import os
import socket
import struct
from pathlib import Path

from mpiscope.util.errors import UsageError

LOCK_FILE = "owner.lock"
# struct flock of Linux (short type, short whence, off_t start, off_t len, pid_t pid, padding),
# for F_GETLK: who holds the lock, without taking it (taking it, even for a moment, could make
# a real owner starting at that moment fail)
_FLOCK = "hhqqi4x"

# this process's claims: directory -> (descriptor, depth). POSIX locks belong to the process, and
# closing any descriptor of the file drops them, so each file is opened once and claims nest.
_held: dict[Path, tuple[int, int]] = {}
_last: list[Path] = []  # the last run or sweep this process owned: what an interrupt names


class Claim:
    """The ownership of `directory`, released by `release` or the end of a `with` block."""

    def __init__(self, directory: Path):
        self.directory = directory

    def release(self) -> None:
        release(self.directory)

    def __enter__(self) -> "Claim":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def claim(directory: Path, what: str, fix: str) -> Claim:
    """Own `directory` (a run or sweep directory) or raise UsageError naming its owner; `what`
    names it ("run 2026...") and `fix` says what to do once the owner is gone."""
    key = Path(directory).resolve()
    if key in _held:
        fd, depth = _held[key]
        _held[key] = (fd, depth + 1)
        return Claim(key)
    fd = os.open(key / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        pid, host = _said(key)
        raise UsageError(f"{what} is being measured by mpiscope pid {pid} on host {host}: wait for it to "
                         f"finish or stop it, then {fix}") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
    _held[key] = (fd, 1)
    _last[:] = [key]
    return Claim(key)


def release(directory: Path) -> None:
    key = Path(directory).resolve()
    if key not in _held:
        return
    fd, depth = _held.pop(key)
    if depth > 1:
        _held[key] = (fd, depth - 1)
        return
    os.close(fd)  # the lock goes with it; the file stays (removing it would race a new owner)


def holder(directory: Path) -> tuple[int, str] | None:
    """(pid, host) of another live process that owns `directory`; None when nobody does (or this
    process does: its own claim does not make a run it is measuring look foreign)."""
    if Path(directory).resolve() in _held:  # opening and closing the file here would drop the claim
        return None
    try:
        fd = os.open(Path(directory) / LOCK_FILE, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        got = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
    except OSError:
        return None
    finally:
        os.close(fd)
    kind, _, _, _, pid = struct.unpack(_FLOCK, got)
    if kind == fcntl.F_UNLCK:
        return None
    said_pid, host = _said(Path(directory))
    return (pid or said_pid, host)  # a holder in another pid namespace reports pid 0


def last_owned() -> Path | None:
    """The run or sweep directory this process owned last (None: it owned none)."""
    return _last[0] if _last else None


def _said(directory: Path) -> tuple[int, str]:
    """What the owner wrote into the lock file: its pid and host (0, '?' when unreadable)."""
    try:
        with open(directory / LOCK_FILE, "rb") as f:
            pid, host = f.read(300).decode(errors="replace").split()[:2]
        return int(pid), host
    except (OSError, ValueError):
        return 0, "?"
