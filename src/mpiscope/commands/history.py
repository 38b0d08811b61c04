"""`mpiscope history [RUNS_DIR | RUN... | DIR_OF_OSU_OR_IMB_FILES]`: per point and platform, every
run's launch-level estimate in time order, the change points (since which run, by how much) and
what changed in the runs' contexts with them; `--fail-on 5%` for nightly jobs (docs/history.md)."""
from __future__ import annotations

import argparse
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from mpiscope.results.policy import POLICY
from mpiscope.util import paths

_SIZE = re.compile(r"(\d+)\s*([KMG]?)(?:i?B)?", re.IGNORECASE)


def sizes(text: str) -> set[int]:
    """'64K,1M' -> {65536, 1048576} (binary units)."""
    from mpiscope.util.errors import UsageError
    out = set()
    for part in filter(None, (t.strip() for t in text.split(","))):
        m = _SIZE.fullmatch(part)
        if not m:
            raise UsageError(f"--sizes expects sizes such as 8,64K,1M, got '{part}'")
        out.add(int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()])
    if not out:
        raise UsageError(f"--sizes expects sizes such as 8,64K,1M, got '{text}'")
    return out


def since(text: str) -> str:
    from mpiscope.util.errors import UsageError
    for form in ("%Y-%m-%d", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.strptime(text, form).strftime("%Y-%m-%dT%H:%M:%S")
        except ValueError:
            continue
    raise UsageError(f"--since expects a date such as 2026-11-30, got '{text}'")


def _runs(refs: list[str], runs_dir: Path, fmt: str | None) -> Iterator[Any]:
    """The runs named (none: every run of the runs directory), each a fresh view so that its
    records are let go once read; a directory of tool output files is a series of imported runs."""
    from mpiscope.importers.series import dated_runs
    from mpiscope.store.runs import RUN_FILE, Run, list_runs, runs_of
    from mpiscope.util.errors import UsageError
    if not refs:
        found = list_runs(runs_dir)
        if not found:
            raise UsageError(f"no runs in {runs_dir}: give a runs directory, runs, or a directory of OSU/IMB files")
        yield from (Run(r.path) for r in found)
        return
    for ref in refs:
        p = Path(ref)
        if p.is_dir() and not (p / RUN_FILE).is_file() and not any(p.glob(f"**/{RUN_FILE}")):
            yield from dated_runs(p, fmt)
        else:
            yield from (Run(r.path) for r in runs_of([ref], runs_dir))


class Cached:
    """A run's summary kept under MPISCOPE_HOME, valid while its run.json and records are the same
    files and the results layer's code is the same: a nightly history reads only the new runs.
    A cache that cannot be written is no cache."""

    def __init__(self) -> None:
        import hashlib
        from mpiscope import results
        code = hashlib.sha256()
        for f in sorted(Path(results.__file__).parent.glob("*.py")):
            code.update(f.read_bytes())
        self.code = code.hexdigest()[:16]
        self.where = paths.home() / "cache" / "history"

    def __call__(self, run: Any) -> Any:
        import hashlib
        import os
        import orjson
        from mpiscope.results.series import from_json, summarize, to_json
        from mpiscope.store.runs import RECORDS, RUN_FILE
        path = getattr(run, "path", None)
        if path is None or not (Path(path) / RUN_FILE).is_file():
            return summarize(run)  # an imported file: parsed again, it is small
        try:
            stamp = [self.code, *([st.st_mtime_ns, st.st_size] for st in
                                  ((Path(path) / n).stat() for n in (RUN_FILE, RECORDS)))]
        except OSError:
            return summarize(run)
        file = self.where / (hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:32] + ".json")
        try:
            kept = orjson.loads(file.read_bytes())
            if kept["stamp"] == stamp:
                return from_json(kept["summary"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        summary = summarize(run)
        # not synced: a summary lost or torn by a crash is read again from the run
        tmp = file.with_name(f"{file.name}.{os.getpid()}.tmp")
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(orjson.dumps({"stamp": stamp, "summary": to_json(summary)},
                                         option=orjson.OPT_SERIALIZE_NUMPY))
            os.replace(tmp, file)
        except (OSError, TypeError):
            tmp.unlink(missing_ok=True)
        return summary


def cmd_history(a: argparse.Namespace) -> int:
    from mpiscope.commands.compare import verdict_options
    from mpiscope.importers import ImportFailed
    from mpiscope.results.changes import history_of, newest_changes
    from mpiscope.util.console import err
    from mpiscope.util.errors import UsageError

    fail_on, margin = verdict_options(a)
    after = since(a.since) if a.since else ""
    benches = set(a.bench or ())
    wanted = sizes(a.sizes) if a.sizes else None

    def keep(key: tuple) -> bool:
        bench, size = key[1][0], key[1][1]
        return (not benches or bench in benches) and (wanted is None or size in wanted)
    try:
        runs = (r for r in _runs(a.runs, paths.runs_dir(a.runs_dir), a.format)  # one at a time: read, let go
                if str((meta := r.meta()).status) == "ok" and str(meta.started or "") >= after)
        histories, summaries = history_of(runs, margin, a.alpha, keep, Cached())
    except ImportFailed as e:
        raise UsageError(str(e)) from None
    histories = [h for h in histories if h.obs]
    if not histories:
        raise UsageError("no point measured in these runs" + (" matches -b/--sizes/--since" if
                                                               benches or wanted or after else ""))
    bad = [] if fail_on is None or not summaries else [
        (h, c) for h, c in newest_changes(histories, summaries[-1].id) if c.slower and c.verdict.ratio - 1 > fail_on]
    if a.json:
        import json
        from mpiscope.report.history_json import history_json
        failed = None if fail_on is None else bool(bad)
        print(json.dumps(history_json(histories, summaries, margin, a.alpha, failed), indent=1, allow_nan=False))
    else:
        _print(a, histories, summaries, margin)
    if bad:
        err.print(f"mpiscope: the newest run {summaries[-1].id} starts {len(bad)} change(s) slower by more than "
                  f"{a.fail_on}", highlight=False, soft_wrap=True)
        return 1
    return 0


def _print(a: argparse.Namespace, histories: list, summaries: list, margin: float) -> None:
    """The terminal's history: a line per series under its platform, a sentence per change."""
    from mpiscope.report.history import line, platform_of, runs_line, sentence
    from mpiscope.util.console import out
    out.print(f"history of {runs_line(summaries)} (margin ±{100 * margin:g}%)", highlight=False)
    platform = None
    for h in histories:
        if platform_of(h) != platform:
            platform = platform_of(h)
            out.print(f"\n{platform}", highlight=False, markup=False)
        if a.all or h.changes or len(histories) <= 40:
            out.print("  " + line(h), highlight=False, markup=False)
    hidden = sum(not (a.all or h.changes or len(histories) <= 40) for h in histories)
    if hidden:
        out.print(f"\n{hidden} series without a change point not shown (--all shows them)", highlight=False)
    changes = [(h, c) for h in histories for c in h.changes]
    out.print("")
    for h, c in changes:
        out.print(sentence(h, c), highlight=False, markup=False, soft_wrap=True)
    for h in histories:
        for note in h.state_notes:
            out.print(f"not a change: {note}", highlight=False, markup=False, soft_wrap=True)
    apart = sum(bool(f) for h in histories for f in h.flags)
    out.print(f"{len(histories)} series, {len(changes)} change point(s)"
              + (f"; {apart} run estimates kept apart (× disturbed, ~ another state of the machine)" if apart else ""),
              highlight=False)


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    from mpiscope.commands.options import names
    p = sub.add_parser("history", parents=[runs_dir],
                       help="per point, every run in time order: change points, since which run, and what "
                            "changed with them; --fail-on for nightly jobs")
    p.add_argument("runs", nargs="*", metavar="RUNS",
                   help="a runs directory, runs (ids, prefixes, paths), or a directory of dated OSU/IMB output "
                        "files (default: every run of --runs-dir)")
    p.add_argument("--fail-on", metavar="PCT", help="exit 1 when the newest run starts a change slower by more "
                                                    "than PCT, e.g. 5%%")
    p.add_argument("--min-change", metavar="PCT", help="the margin of a change (default the --fail-on value, "
                                                       f"else {POLICY.margin * 100:g}%%)")
    p.add_argument("--alpha", type=float, default=POLICY.alpha,
                   help=f"significance level after adjustment (default {POLICY.alpha:g})")
    p.add_argument("--since", metavar="DATE", help="only runs started on or after DATE (2026-11-30)")
    p.add_argument("-b", "--bench", type=names, help="only these benchmarks, comma-separated")
    p.add_argument("--sizes", help="only these sizes, e.g. 64K,1M")
    p.add_argument("--format", choices=("osu", "imb"), help="the tool of a directory of output files "
                                                            "(default: detected per file)")
    p.add_argument("--all", action="store_true", help="a line for every series, however many")
    p.add_argument("--json", action="store_true", help="change points and series summaries as JSON (the schema: "
                                                       "docs/history.md)")
    p.set_defaults(func=cmd_history)
