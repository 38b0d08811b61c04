"""Launcher adapters: each turns a Job into argv for one launcher dialect (base: the job, the
launch and the vocabulary; one module per dialect; choose: which adapter a library's launcher
needs). Names are loaded from their module on first use."""
from mpiscope.util.lazy import facade

__all__ = ["BINDINGS", "Job", "LAUNCHERS", "Launch", "Launcher", "MAPPINGS", "default_launcher",
           "launcher_for", "local_cores"]
__getattr__, __dir__ = facade(__name__, {
    "base": ("BINDINGS", "Job", "LAUNCHERS", "Launch", "Launcher", "MAPPINGS", "local_cores", "launcher_family"),
    "choose": ("ADAPTERS", "default_launcher", "launcher_for"),
})
