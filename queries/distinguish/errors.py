"""The two errors of the query layer."""


class QueryError(ValueError):
    """A malformed query: unknown solver, models of different formats, bad constraint."""


class TwinDisagreement(RuntimeError):
    """The twin does not confirm a solver's answer: a bug in a backend or in this package."""
