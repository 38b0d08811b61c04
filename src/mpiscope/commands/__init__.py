"""The commands of `mpiscope`, one module each. Every module defines
`register(sub, runs_dir)`, which adds its sub-parser with `set_defaults(func=...)`;
cli.py lists them in its command table."""
