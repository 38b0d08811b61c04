"""The machine's history of its control: each run's launch levels of the control's pieces that
no configuration changes, kept per machine (`results.states.machine_key`) across every runs
directory, so that a run can tell a state of the machine it did not meet (results.states).

It lives in $MPISCOPE_HOME/machine-states.json, or where MPISCOPE_MACHINE_STATES points ("off":
none kept or read). Written whole (a temporary file and a rename) under a lock, so runs ending at
once (a `run --vs` session) add to it one after the other; a file mpiscope cannot read is left
as it is and not used, never overwritten."""
from __future__ import annotations

import fcntl
import json
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
MAX_LAUNCHES = 100  # of one run, kept


def ledger_path() -> Path | None:
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
    except ValueError as e:
        raise Unreadable(f"not JSON ({e})") from e
    machines = data.get("machines") if isinstance(data, dict) and data.get("schema") == SCHEMA else None
    if not isinstance(machines, dict) or not all(isinstance(v, list) for v in machines.values()):
        raise Unreadable(f"not a schema-{SCHEMA} machine history")
    return machines


def _pieces(entry: Any) -> dict[str, list[float]]:
    """One kept run's launch levels, what is well formed of them."""
    pieces = entry.get("pieces") if isinstance(entry, dict) else None
    if not isinstance(pieces, dict):
        return {}
    return {str(k): [float(x) for x in v if isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0]
            for k, v in pieces.items() if isinstance(v, list)}


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def note_run(run: RunView, policy: Policy = POLICY) -> dict[str, Any] | None:
    """At the end of a run: the state of the machine it did not meet, judged against the
    machine's history before it, as run.json keeps it (`machine_states`: the runs and launches
    consulted, and `unmet`, or None when it met every state shown); then the run's own levels
    join the history (its latest `policy.machine_runs` runs a machine). None when the run has no
    control or no history is kept; a history mpiscope cannot read is said, not used or changed."""
    path = ledger_path()
    records = run.records()
    key, rc = machine_key(records), run_control(records, run.id)
    if path is None or key is None or rc is None:
        return None
    # a run of thousands of launches keeps its latest: the share of a state is one of launches
    mine = {piece: levels[-MAX_LAUNCHES:] for piece, levels in launch_levels(rc).items()}
    try:
        with _locked(path):
            try:
                machines = _read(path)
            except Unreadable as e:
                return {"error": f"{path}: {e}; left as it is (move it away to start a new history)"}
            kept = [e for e in machines.get(key, []) if isinstance(e, dict) and e.get("run") != run.id]
            earlier = [_pieces(e) for e in kept]
            unmet = unmet_state(rc, earlier, policy)
            machines[key] = (kept + [{"run": run.id, "at": run.meta().started, "pieces": mine}])[-policy.machine_runs:]
            atomic.write_atomic(path, json.dumps({"schema": SCHEMA, "machines": machines}) + "\n")
    except OSError as e:  # a history that cannot be locked or written: the run itself is whole
        return {"error": f"{path}: {e.strerror or e}; not kept"}
    return {"key": key, "runs": len(earlier), "launches": sum(max(map(len, p.values()), default=0) for p in earlier),
            "unmet": unmet.to_json() if unmet is not None else None}
