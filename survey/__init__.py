"""The GPU survey: one command that characterises a lent GPU (``mmaprobe survey``).

Every instruction kernel of the GPU's architecture is run on seeded random, zero-aimed and
deciding cases and judged against every hypothesis of its formats; library GEMMs run through the
GPU's torch and CuPy (calls, batch sweeps, seed 003 §V); ``identify`` names the main units; a
numerics card sums it up. The plan, the budget and the journal: :mod:`survey.run`; dry runs on
twin GPUs: :mod:`survey.device`. This package sits between the command line and the harness and
query layers, and imports no SMT solver and no Dask (the GPU machine has neither).
"""

from .device import Target, open_target
from .errors import SurveyError
from .run import DEFAULT_BUDGET, PARTS, Settings, Survey, export, open_survey, recheck

__all__ = ["DEFAULT_BUDGET", "PARTS", "Settings", "Survey", "SurveyError", "Target", "export", "open_survey",
           "open_target", "recheck"]
