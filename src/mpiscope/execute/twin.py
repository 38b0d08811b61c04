"""Calibration's pipeline (`mpiscope calibrate`): the twin fitted to measured runs from their
launch-level frame (analysis/calibrate), and its validation: what the runs measured, simulated on
the twin through the measurement session (execute/simulate.py) and compared point by point."""
from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from mpiscope.util.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

    from mpiscope.analysis.calibrate.platform import Twin
    from mpiscope.store.runs import Run

# Benchmarks a simulation does not price: the pair map's N^2 routes take hours of host time at scale
# and say nothing the pingpong's fit does not already hold.
NOT_SIMULATED = {"pairs"}


def _library(run: "Run") -> str:
    """The run's MPI vendor: its library's, else its context's version string (an imported run's
    label, "MPICH 4.2": the words before the version)."""
    from mpiscope.mpi.vendor import parse_library_version
    meta = run.meta()
    if meta.mpi is not None and meta.mpi.vendor not in ("", "unknown"):
        return meta.mpi.vendor
    ctx = run.records().context
    text = ctx.mpi_library_version.strip() if ctx is not None else ""
    vendor = parse_library_version(text)[0]
    return vendor if vendor != "unknown" else re.sub(r"\s+v?\d.*$", "", text) or "unknown"


def _one_library(runs: Sequence["Run"]) -> str:
    libs = {r.id: _library(r) for r in runs}
    known = {v for v in libs.values() if v != "unknown"}
    if len(known) > 1:
        raise UsageError("the runs were measured with different libraries ("
                         + ", ".join(f"{v}: {k}" for k, v in libs.items())
                         + "): calibrate one library at a time")
    return next(iter(known), "unknown")


def inferred_topology(runs: Sequence["Run"]) -> str | None:
    """A fat tree whose leaves are the groups of hosts the runs' pair map puts together
    (analysis/topology.py): the first level whose groups span more than one host, when its groups
    are equal and more than one; None without a pair map or such a level."""
    import numpy as np

    from mpiscope.analysis.topology import infer_topology
    for run in runs:
        recs = run.records()
        pts = [p for p in recs.points if p.benchmark == "pairs" and isinstance(p.details.get("pair_map"), dict)]
        if not pts or recs.context is None:
            continue
        host = {r.rank: r.host for r in recs.context.ranks}
        try:
            rows = min(pts, key=lambda p: p.size).details["pair_map"]["one_pair"]["matrix_us"]
            topo = infer_topology(np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float))
        except ValueError:
            continue
        for level in topo.levels:
            spans = [{host.get(r, str(r)) for r in g} for g in level.groups]
            if any(len(h) > 1 for h in spans):
                sizes = {len(h) for h in spans}
                if len(sizes) == 1 and len(spans) > 1:
                    return f"fattree:per-switch={sizes.pop()}"
                break
    return None


def _warn_disturbed(points: list) -> None:
    """A twin fitted to a busy machine reproduces the business: say how many pingpong points the
    results layer found disturbed, and the commonest cause."""
    from collections import Counter

    from mpiscope.util.console import warn
    causes = [getattr(p, "busy", "") or next(iter(getattr(p, "disturbed", ()) or ()), "") for p in points]
    said = [c for c in causes if c]
    if said:
        common = Counter(re.sub(r"\s*\d.*$", "", c) or c for c in said).most_common(1)[0][0]
        warn(f"{len(said)} of {len(points)} pingpong points were measured while the machine was disturbed "
             f"({common}, ...): the twin reproduces those figures; measure again on a quiet machine")


def fit_twin(runs: Sequence["Run"], frame: "pd.DataFrame", topology: str | None, nodes: int | None) -> "Twin":
    """The twin of `runs` from their launch-level frame."""
    from mpiscope import __version__
    from mpiscope.analysis.calibrate.fit import fit_class
    from mpiscope.analysis.calibrate.platform import Twin, selector_of
    from mpiscope.records.model import INTER, INTRA
    library = _one_library(runs)
    ping = frame[frame["benchmark"] == "pingpong"] if "benchmark" in frame else frame.iloc[0:0]
    if ping.empty:
        raise UsageError(f"{', '.join(r.id for r in runs)}: no pingpong to calibrate from: measure one, e.g. "
                         f"`mpiscope run -n 2 -b pingpong,bw --sizes 0:4M` (across nodes: --ranks-per-node 1)")
    _warn_disturbed(list(ping["point"]))
    classes = {}
    for placement, rows in ping.groupby(ping["placement"].fillna(INTER) if "placement" in ping else INTER):
        try:
            classes[placement] = fit_class(str(placement), list(rows["point"]))
        except ValueError as e:
            raise UsageError(f"cannot calibrate from {', '.join(r.id for r in runs)}: {e}") from None
    link = classes.get(INTER) or classes.get(INTRA) or next(iter(classes.values()))
    loopback = classes.get(INTRA) if link is not classes.get(INTRA) else None
    most = int(frame["ranks"].max()) if "ranks" in frame else 2
    topology = topology or inferred_topology(runs) or "cluster"
    given = dict(item.split("=", 1) for item in topology.partition(":")[2].split(",") if "=" in item)
    if nodes is None and given.get("nodes", "").isdigit():
        nodes = int(given["nodes"])
    if nodes is not None and nodes < most:
        raise UsageError(f"--nodes {nodes}: the runs measured {most} ranks; the twin needs a node for each")
    per_text = given.get("per-switch", "8")
    per = int(per_text) if topology.startswith("fattree") and per_text.isdigit() else 0
    if per and nodes is None:  # whole leaves
        nodes = -(-max(most, 2) // per) * per
    twin = Twin(link, loopback, topology, nodes or max(most, 2), selector_of(library), library,
                tuple(r.id for r in runs), __version__)
    twin.platform()  # a topology that does not hold the nodes is a usage error now, not at the first launch
    return twin


def _jobs(frame: "pd.DataFrame", runs: Sequence["Run"], colocate: bool) -> dict[tuple[int, bool], "pd.DataFrame"]:
    """The measured rows a simulated run covers, by (ranks, all ranks on one node): rows measured
    within one node go to one simulated node when the twin has its loopback."""
    from mpiscope.records.model import INTRA
    one_host = {r.id: len(set((r.records().context.hosts if r.records().context else ()))) == 1 for r in runs}
    rows = frame[~frame["benchmark"].isin(NOT_SIMULATED) & frame["size"].notna() & frame["ranks"].notna()]
    together = [colocate and (pl == INTRA or (pl is None or pl != pl) and one_host.get(str(rid), False))
                for pl, rid in zip(rows.get("placement", [None] * len(rows)), rows["run_id"])]
    out = {}
    for (ranks, same), g in rows.groupby([rows["ranks"].astype(int), together]):
        out[(int(ranks), bool(same))] = g
    return out


def simulate(xml: Path, twin_nodes: int, jobs: dict[tuple[int, bool], "pd.DataFrame"],
             work: Path) -> dict[tuple[int, bool], "pd.DataFrame"]:
    """Each job's measured points simulated on the twin (execute/simulate.py, with the twin's own
    SimGrid options): their launch-level frames, one run per set of sizes. The alltoall points
    SimGrid's mpich selector aborts on are left out with a warning (execute/simcheck.py); a
    simulation that stops part-way keeps the points it measured (with a warning naming SimGrid's
    complaint); one that measures nothing is an error."""
    import pandas as pd

    from mpiscope.execute.simcheck import alltoall_aborts
    from mpiscope.execute.simulate import simulate as simulated
    from mpiscope.execute.simulate import twin_cfg
    from mpiscope.util.console import warn
    cfg = twin_cfg(str(xml))
    out = {}
    for (ranks, together), rows in sorted(jobs.items()):
        if ranks > twin_nodes and not together:
            continue
        aborts = [b == "alltoall" and alltoall_aborts(ranks, int(n), cfg) for b, n in zip(rows["benchmark"], rows["size"])]
        if any(aborts):
            warn(f"alltoall at {ranks} ranks from 32 KiB blocks is not simulated: SimGrid 3.32's mpich selector "
                 f"aborts there (its pair algorithm at an odd rank count; docs/simulation.md)")
        kept = rows[[not a for a in aborts]]
        by_sizes: dict[str, list[str]] = {}
        for bench, g in kept.groupby("benchmark"):
            by_sizes.setdefault(",".join(str(n) for n in sorted({int(n) for n in g["size"]})), []).append(str(bench))
        frames = []
        for sizes, benchmarks in by_sizes.items():
            sim = simulated(str(xml), ranks, benchmarks, sizes, work / "runs", per_node=ranks if together else 1)
            if sim.stopped:
                warn(f"the simulation at {ranks} ranks stopped part-way ({sim.stopped}): its "
                     f"{len(sim.frame)} points are compared")
            frames.append(sim.frame)
        if frames:
            out[(ranks, together)] = pd.concat(frames, ignore_index=True)
    return out


def validate_twin(xml: Path, record: dict, runs: Sequence["Run"], frame: "pd.DataFrame",
                  switches: tuple[tuple[int, int], ...] = ()) -> "pd.DataFrame":
    """The validation table of the platform against the runs' frame (analysis/calibrate/validation)."""
    import pandas as pd

    from mpiscope.analysis.calibrate.validation import compare, factor_breakpoints
    cfg = [str(c) for c in record.get("cfg", [])]
    colocate = any(c.startswith("network/loopback-lat:") for c in cfg)
    fitted = {int(s) for v in record.get("fitted", {}).values() for s in v}
    held = {int(s) for v in record.get("held_out", {}).values() for s in v}
    selector = next((c.split(":", 1)[1] for c in cfg if c.startswith("smpi/coll-selector:")), "mpich")
    jobs = _jobs(frame, runs, colocate)
    with tempfile.TemporaryDirectory(prefix="mpiscope-twin-") as tmp:
        sims = simulate(xml, int(record.get("nodes", 0)) or 1 << 30, jobs, Path(tmp))
    breakpoints = factor_breakpoints(cfg)
    tables = [compare(jobs[k], sims[k], fitted, held, switches, selector, breakpoints) for k in sims]
    tables = [t for t in tables if not t.empty]
    if not tables:
        raise UsageError("nothing to validate: the runs have no points the twin could simulate")
    return pd.concat(tables, ignore_index=True).sort_values(["benchmark", "ranks", "size"], ignore_index=True)


def validate_draft(twin: "Twin", runs: Sequence["Run"], frame: "pd.DataFrame") -> "pd.DataFrame":
    """The validation of a twin not yet written (its file drafted in a directory of its own)."""
    from mpiscope.report.twin import twin_xml
    with tempfile.TemporaryDirectory(prefix="mpiscope-twin-") as tmp:
        draft = Path(tmp) / "twin.xml"
        draft.write_text(twin_xml(twin))
        return validate_twin(draft, twin.record(), runs, frame, twin.link.switches)
