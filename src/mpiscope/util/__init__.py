"""Utilities every stage uses: errors, the terminal, paths, typed JSON, units."""
