"""The one error type the CLI turns into `mpiscope: error: ...` and exit 2."""


class MpiscopeError(Exception):
    """A problem the user can fix; the message says what is wrong and how to fix it."""


class UsageError(MpiscopeError):
    """Bad command-line input (an option, a name, a size expression)."""
