"""The machine's history of its control: each run's launch levels of the control's pieces that
no configuration changes, kept per machine (`results.states.machine_key`) across every runs
directory, so that a run can tell a state of the machine it did not meet (results.states).

It lives in $MPISCOPE_HOME/machine-states.json, or where MPISCOPE_MACHINE_STATES points ("off":
none kept or read). Written whole (a temporary file and a rename) under a lock, so runs ending at
once add to it one after the other; a file mpiscope cannot read is left as it is and not used,
never overwritten; one it can read but not write is used and left as it is."""
from __future__ import annotations

import fcntl
import json
import math
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from mpiscope.records.run import RunView
from mpiscope.results.control import run_control
from mpiscope.results.policy import POLICY, Policy
from mpiscope.results.states import launch_levels, machine_key, unmet_state
from mpiscope.util import atomic
from mpiscope.util.paths import home

FILE = "machine-states.json"
SCHEMA = 1
MACHINES = 50  # the machines kept, the latest written (a container's host names come and go)


def history_path() -> Path | None:
    """Where the machine's history is kept; None when MPISCOPE_MACHINE_STATES is "off"."""
    env = os.environ.get("MPISCOPE_MACHINE_STATES")
    if env == "off":
        return None
    return Path(env).expanduser() if env else home() / FILE


class Unreadable(Exception):
    """The history file is there but is no history mpiscope wrote."""


def _read(path: Path) -> dict[str, list[dict[str, Any]]]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as e:
        raise Unreadable(str(e)) from e
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise Unreadable(f"not JSON ({type(e).__name__})") from e
    schema = data.get("schema") if isinstance(data, dict) else None
    machines = data.get("machines") if type(schema) is int and schema == SCHEMA else None
    if not isinstance(machines, dict) or not all(isinstance(v, list) for v in machines.values()):
        raise Unreadable(f"not a schema-{SCHEMA} machine history")
    return machines


def _level(x: Any) -> float | None:
    """A launch level as kept, or None: a positive finite number only."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    try:
        value = float(x)
    except OverflowError:  # an integer of 400 digits
        return None
    return value if math.isfinite(value) and value > 0 else None


def _pieces(entry: Any) -> dict[str, list[float]]:
    """One kept run's launch levels, what is well formed of them."""
    pieces = entry.get("pieces") if isinstance(entry, dict) else None
    if not isinstance(pieces, dict):
        return {}
    return {str(k): [x for x in map(_level, v) if x is not None] for k, v in pieces.items() if isinstance(v, list)}


def _session(run: RunView) -> str:
    """What one measuring session shares: a `run --vs` or sweep session's runs count as one run
    of the machine (they met its states together), any other run as itself."""
    meta = run.meta()
    interleave = meta.extra.get("interleave") if isinstance(meta.extra, dict) else None
    if isinstance(interleave, dict) and isinstance(interleave.get("session"), str):
        return f"session {interleave['session']}"
    return f"sweep {meta.sweep.dir or meta.sweep.name}" if meta.sweep is not None else run.id


def _latest_sessions(entries: list[dict[str, Any]], sessions: int) -> list[dict[str, Any]]:
    """The entries of the latest `sessions` sessions, in order."""
    seen: list[str] = []
    for e in reversed(entries):
        if e.get("session") not in seen:
            seen.append(e.get("session"))
    keep = set(seen[:sessions])
    return [e for e in entries if e.get("session") in keep]


@contextmanager
def _locked(path: Path) -> Iterator[bool]:
    """Holds the history's lock while it is read and written; yields False (no lock, the history
    only read) where no lock file can be made beside it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = open(path.with_name(path.name + ".lock"), "a")
    except OSError:
        yield False
        return
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield True
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def note_run(run: RunView, policy: Policy = POLICY) -> dict[str, Any] | None:
    """At the end of a run: the state of the machine it did not meet, judged against the
    machine's history before it, as run.json keeps it (`machine_states`: the history's runs and
    launches consulted, and `unmet`, or None when it met every state shown); then the run's own
    levels (its latest `policy.machine_launches`) join the history, which keeps a machine's
    latest `policy.machine_runs` sessions. None when the run has no control or no history is
    kept. A history mpiscope cannot read is said (`error`), not used or changed; one it cannot
    write is used and said."""
    path = history_path()
    records = run.records()
    key, rc = machine_key(records), run_control(records, run.id)
    if path is None or key is None or rc is None:
        return None
    mine = {piece: levels[-policy.machine_launches:] for piece, levels in launch_levels(rc).items()}
    with _locked(path) as locked:
        try:
            machines = _read(path)
        except Unreadable as e:
            return {"error": f"{path}: {e}; left as it is (move it away to start a new history)"}
        kept = [e for e in machines.get(key, []) if isinstance(e, dict) and e.get("run") != run.id]
        earlier = [_pieces(e) for e in kept]
        unmet = unmet_state(rc, earlier, policy, sessions=[str(e.get("session", e.get("run"))) for e in kept])
        found: dict[str, Any] = {"key": key, "runs": len(earlier),
                                 "launches": sum(max(map(len, p.values()), default=0) for p in earlier),
                                 "unmet": unmet.to_json() if unmet is not None else None}
        entry = {"run": run.id, "session": _session(run), "at": run.meta().started, "pieces": mine}
        machines.pop(key, None)  # the latest written last, so the oldest machine goes first
        machines[key] = _latest_sessions(kept + [entry], policy.machine_runs)
        try:
            if not locked:
                raise OSError("no lock file can be made beside it")
            atomic.write_atomic(path, json.dumps({"schema": SCHEMA,
                                                  "machines": dict(list(machines.items())[-MACHINES:])}) + "\n")
        except OSError as e:  # the run itself is whole, and what was read still judged it
            found["error"] = f"{path}: {e.strerror or e}; this run not kept in it"
    return found
