"""vramfit.Error and one subclass per exit status of the command (README)."""


class Error(Exception):
    """A vramfit failure: .exit_code is the command's exit status, str() its one-line message."""

    exit_code = 0

    def __init__(self, message, exit_code=None):
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(Error):
    exit_code = 2


class InputError(Error):
    """Bad or unsupported model input, unknown model (exit 3)."""
    exit_code = 3


class IOFailure(Error):
    """An I/O error, out of memory, interrupted (exit 4)."""
    exit_code = 4


class DeviceError(Error):
    """A device or driver error (exit 5)."""
    exit_code = 5


_BY_CODE = {2: UsageError, 3: InputError, 4: IOFailure, 5: DeviceError}


def error_for(rc, stderr):
    """The exception for exit status rc, its message the last 'vramfit: ' line of stderr."""
    lines = [l for l in stderr.splitlines() if l.startswith("vramfit: ")]
    msg = lines[-1][len("vramfit: "):] if lines else (stderr.strip() or "exit status %d" % rc)
    return _BY_CODE.get(rc, Error)(msg, rc)
