"""Utilities every stage uses: errors, the terminal, paths, typed JSON, units, bounded reads,
files written whole, lazy package facades."""
