"""Commands beyond the core ones in cli.py, one module each.

Each module defines `register(sub, runs_dir_parent)`, which adds its sub-parser
(with `set_defaults(func=...)`) to the `mpiscope` command; cli.py finds the
modules here by themselves, so adding a command is adding a file.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil


def register_all(sub: "argparse._SubParsersAction", runs_dir: argparse.ArgumentParser) -> None:
    for mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        importlib.import_module(f"{__name__}.{mod}").register(sub, runs_dir)
