"""``python -m mmaprobe``: the same as the ``mmaprobe`` command."""

import sys

from .cli import main

sys.exit(main())
