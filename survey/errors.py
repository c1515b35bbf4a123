"""The survey's user-facing error."""

from __future__ import annotations

from hw_runner.errors import HarnessError


class SurveyError(HarnessError):
    """Bad input to the survey (device, folder, options, budget): one line, exit status 2."""
