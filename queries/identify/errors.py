"""The identify loop's errors: user-facing (a ``QueryError``, so the command line prints one line
and exits 2) and the file device's request for answers."""

from __future__ import annotations

from ..distinguish.errors import QueryError


class IdentifyError(QueryError):
    """A bad space, device, journal or file; a device that failed (its answers so far are kept)."""


class DeviceError(IdentifyError):
    """The device failed or timed out during a launch; the journal keeps every earlier answer."""


class NeedAnswers(IdentifyError):
    """A file device lacks the answers to probes identify designed; they were written to ``path``."""

    def __init__(self, message: str, path: str, count: int):
        super().__init__(message)
        self.path, self.count = path, count
