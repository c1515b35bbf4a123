"""The harness's one error type: every failure a user can cause or meet (no GPU, no CuPy, no
toolchain, a bad kernel id, a malformed file) is raised as :class:`HarnessError` with a one-line
message, which the CLI prints without a traceback (exit code 2)."""


class HarnessError(RuntimeError):
    """A harness failure with a one-line, user-facing message."""
