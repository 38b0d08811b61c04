"""`mpiscope model RUN...`: the fitted models (Hockney regimes and switches,
LogGP, hardware limit) of stored runs, for the terminal or as JSON."""
from __future__ import annotations

import argparse
import json

from mpiscope.util import paths


def positive_mhz(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expects the core clock in MHz, e.g. 2600, got '{text}'")
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expects a positive clock in MHz, got '{text}'")
    return v


def cmd_model(a: argparse.Namespace) -> int:
    from mpiscope.api import fit
    from mpiscope.util.console import out, records_of
    from mpiscope.store.runs import distinct, resolve
    runs = distinct([resolve(r, paths.runs_dir(a.runs_dir)) for r in a.run])  # a copied run counts once
    records_of(runs)  # warns about damaged lines before the fit leaves them out
    m = fit(runs, a.benchmark, a.clock_mhz, variant=a.variant)
    if a.json:
        print(json.dumps(m.to_dict(), indent=1))
    else:
        out.print(m.text, markup=False, highlight=False, soft_wrap=True)
        if m.imported_note:  # mpiscope import: the tool's figures, not mpiscope's medians
            out.print(m.imported_note, markup=False, highlight=False, soft_wrap=True)
    return 0


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    m = sub.add_parser("model", parents=[runs_dir],
                       help="fitted models of runs: latency, bandwidth, switches, LogGP")
    m.add_argument("run", nargs="+", help="run id, unique prefix, 'latest', or a path; several "
                   "runs are fitted together (repeats, refinement launches)")
    m.add_argument("--benchmark", default="pingpong", help="benchmark to fit (default pingpong)")
    m.add_argument("--variant", help="the benchmark's variant to fit when it has several, e.g. an RMA "
                   "synchronisation mode (put_latency: --variant flush)")
    m.add_argument("--clock-mhz", type=positive_mhz, help="core clock for the cycle figures "
                   "(default: detected)")
    m.add_argument("--json", action="store_true", help="the models as JSON on stdout")
    m.set_defaults(func=cmd_model)
