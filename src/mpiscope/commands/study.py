"""`mpiscope study NAME`: fixed experiments from the reference material.

Each study module in `mpiscope.studies` that defines `register(sub, runs_dir)`
adds its own `mpiscope study NAME` sub-command here.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil

import mpiscope.studies


def register(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    study = sub.add_parser("study", help="reproduce an experiment of the reference material")
    names = study.add_subparsers(dest="study", required=True, metavar="STUDY")
    for mod in sorted(m.name for m in pkgutil.iter_modules(mpiscope.studies.__path__)):
        module = importlib.import_module(f"mpiscope.studies.{mod}")
        if hasattr(module, "register"):
            module.register(names, runs_dir)
