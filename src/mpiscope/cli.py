"""The `mpiscope` command: the table of commands, argument parsing, and errors as one line
with exit status 2. Each command is a module of mpiscope.commands that registers its own
arguments; nothing imports this module."""
from __future__ import annotations

import argparse
import errno
import signal
import sys
import threading
from typing import NoReturn

from mpiscope import __version__
from mpiscope.util import paths
from mpiscope.commands import (batch_run, bench, calibrate, compare, doctor, export, history, import_, model, mpi,
                               pairs, plot, predict, report, run, runs, show, study, sweep, table, tune)
from mpiscope.util.errors import MpiscopeError

# In the order `mpiscope --help` lists them.
COMMANDS = (run, runs, show, export, table, plot, report, model, predict, calibrate, compare, history, pairs, sweep,
            study, mpi, bench, batch_run, import_, doctor, tune)


class Parser(argparse.ArgumentParser):
    """argparse's errors as every other: one line, exit 2 (subcommands' parsers are of this class too)."""

    def error(self, message: str) -> "NoReturn":
        message = message.removeprefix("argument ")  # "--top: expects ...", the option first
        self.exit(2, f"mpiscope: error: {message} (`{self.prog} --help` lists the options)\n")


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="mpiscope", description="Measure how an MPI library moves data.")
    p.add_argument("--version", action="version", version=f"mpiscope {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    runs_dir = argparse.ArgumentParser(add_help=False)
    runs_dir.add_argument("--runs-dir", help="where runs are kept (default $MPISCOPE_RUNS or ./mpiscope-runs)")
    for command in COMMANDS:
        command.register(sub, runs_dir)
    return p


def _terminate_as_interrupt() -> dict:
    """SIGTERM and SIGHUP (a batch system's time limit, a closed terminal) end every phase as
    Ctrl-C does: a message, exit 130, and nothing half-written (the model, the report)."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}


def _what_is_kept() -> str:
    """After an interrupt: the run or sweep this mpiscope measured and how to finish it, or that
    nothing was measured (an interrupted engine build or `mpi add` leaves nothing behind)."""
    from mpiscope.store.owner import last_owned
    from mpiscope.store.runs import SWEEP_FILE
    owned = last_owned()
    if owned is None:
        return "nothing was measured and nothing half-made is kept"
    if (owned / SWEEP_FILE).is_file():
        return f"finished configurations are kept in {owned}: `mpiscope sweep SPEC --resume` continues"
    return f"what was measured is kept in {owned}, marked interrupted: `mpiscope run --resume {owned.name}` " \
           f"finishes it"


def main(argv: list[str] | None = None) -> int:
    from mpiscope.util.console import err
    args = parser().parse_args(argv)
    previous = _terminate_as_interrupt()
    try:
        return args.func(args)
    except MpiscopeError as e:
        err.print(f"mpiscope: error: {e}", markup=False, highlight=False, soft_wrap=True)
        return 2
    except OSError as e:  # a full disk, a read-only runs directory: one line, not a traceback
        where = f" ({e.filename})" if e.filename else ""
        fix = {errno.ENOSPC: "free some space", errno.EDQUOT: "free some space"}.get(
            e.errno, paths.home_fix(e.filename) or "check the path, or use another --runs-dir")
        err.print(f"mpiscope: error: {e.strerror or e}{where}: {fix}",
                  markup=False, highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        err.print(f"mpiscope: interrupted; {_what_is_kept()}", markup=False)
        return 130
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def entry() -> None:
    """The `mpiscope` command: main's exit status; an interrupt that lands outside main's own
    handling (between restoring the signal handlers and the exit) is still exit 130, never a
    process killed by SIGINT."""
    from mpiscope.util import gcpause
    gcpause.one_process()
    try:
        status = main()
    except KeyboardInterrupt:
        status = 130
    while True:  # the work is done: a late signal changes no exit status
        try:     # (signal.signal runs a pending handler, which may raise one more interrupt)
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_IGN)
            break
        except KeyboardInterrupt:
            status = 130
    sys.exit(status)


if __name__ == "__main__":
    entry()
