"""A package facade that imports a submodule only when one of its names is asked for (PEP 562),
so importing one small module of a package does not load every other one with it."""
from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def facade(package: str, homes: Mapping[str, tuple[str, ...]]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose names live in its submodules
    (`homes`: submodule -> the names it gives)."""
    where = {name: module for module, names in homes.items() for name in names}
    namespace = importlib.import_module(package).__dict__

    def getattr_(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module '{package}' has no attribute '{name}'")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value  # asked once: later look-ups find it without this function
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *where})

    return getattr_, dir_
