"""`python -m mpiscope` is the same as the `mpiscope` command."""
from mpiscope.cli import main

raise SystemExit(main())
