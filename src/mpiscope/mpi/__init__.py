"""MPI libraries: finding them, their vendor and version, building the engine with each. Names are
loaded from their module on first use."""
from mpiscope.util.lazy import facade

__all__ = ["MpiLibrary", "find", "find_all"]
__getattr__, __dir__ = facade(__name__, {"library": ("MpiLibrary",), "registry": ("find", "find_all")})
