"""`python -m mpiscope` is the same as the `mpiscope` command."""
from mpiscope.cli import entry

entry()
