"""MPI libraries: finding them, their vendor and version, building the engine with each."""
from mpiscope.mpi.library import MpiLibrary
from mpiscope.mpi.registry import find, find_all

__all__ = ["MpiLibrary", "find", "find_all"]
