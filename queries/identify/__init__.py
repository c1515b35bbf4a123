"""``mmaprobe identify``: name an unknown matrix unit's arithmetic in few device launches.

Pieces, one idea a file: ``cases`` (batches of raw inputs), ``hypotheses`` (points of a space
read by the twin), ``batched`` (groups of points read by one evaluation, parameters as lane data), ``pool`` (candidate probes: the seeds' structured kinds and random cases),
``design`` (the batch that splits the live set best in the worst case), ``devices`` (twin and
file devices; the GPU device is the harness's), ``journal`` (append-only, resumable), ``loop``
(the closed loop and the final verification), ``report`` (the identified model as a catalog
entry and its evidence).
"""

from .cases import Cases
from .devices import FileDevice, TwinDevice, open_device
from .errors import DeviceError, IdentifyError, NeedAnswers
from .journal import Journal, NoJournal
from .loop import Identify, Outcome, Settings, catalog_points, identify, stderr_progress

__all__ = ["Cases", "FileDevice", "TwinDevice", "open_device", "DeviceError", "IdentifyError", "NeedAnswers",
           "Journal", "NoJournal", "Identify", "Outcome", "Settings", "catalog_points", "identify",
           "stderr_progress"]
