"""GEMM dataflows as data: :class:`Dataflow`, its text/JSON forms, the named library profiles,
the GEMM composed once around the chains (:mod:`.compose`) and its per-element reading
(docs/dataflow.md)."""

from .spec import Dataflow, DataflowError
from .profiles import DEFAULT, PROFILES, get_profile
from .text import parse_dataflow
from .element import element

__all__ = ["DEFAULT", "Dataflow", "DataflowError", "PROFILES", "element", "get_profile", "parse_dataflow"]
