"""The one error type the CLI turns into `mpiscope: error: ...` and exit 2."""


class MpiscopeError(Exception):
    """A problem the user can fix; the message says what is wrong and how to fix it."""


class UsageError(MpiscopeError):
    """Bad command-line input (an option, a name, a size expression)."""


class MeasurementError(MpiscopeError):
    """A measurement that ended in an error (a launch failed, the engine reported a failure);
    the run is kept at `run_path`."""

    def __init__(self, message: str, run_path: "object | None" = None):
        super().__init__(message)
        self.run_path = run_path
