"""Progress of a campaign on stderr: done/total, rate and ETA.

On a terminal, a tqdm bar that appears only once the run has taken ~2 s (short runs stay
silent). When stderr is not a terminal (a log file, CI), one plain line per ~10 % of the tasks,
also only after ~2 s. ``quiet`` prints nothing.
"""

from __future__ import annotations

import sys
import time

DELAY = 2.0


class Progress:
    def __init__(self, total: int, desc: str, *, quiet: bool = False, stream=None, done: int = 0):
        self.total, self.desc, self.quiet = total, desc, quiet
        self.stream = stream or sys.stderr
        self.n = done
        self._start_n = done
        self._t0 = time.monotonic()
        self._bar = None
        self._next_tenth = self._tenth(done) + 1
        if quiet or total == 0:
            return
        if _isatty(self.stream):
            from tqdm import tqdm
            self._bar = tqdm(total=total, initial=done, desc=desc, unit="task", file=self.stream,
                             delay=DELAY, dynamic_ncols=True, smoothing=0.1)

    def _tenth(self, n: int) -> int:
        return (10 * n) // self.total if self.total else 10

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.quiet or self.total == 0:
            return
        if self._bar is not None:
            self._bar.update(n)
            return
        tenth = self._tenth(self.n)
        if tenth >= self._next_tenth:
            self._next_tenth = tenth + 1
            if time.monotonic() - self._t0 >= DELAY:
                print(self.line(), file=self.stream, flush=True)

    def line(self) -> str:
        dt = time.monotonic() - self._t0
        ran = self.n - self._start_n
        rate = ran / dt if dt > 0 else 0.0
        eta = (self.total - self.n) / rate if rate > 0 else float("nan")
        return (f"{self.desc}: {self.n}/{self.total} ({100 * self.n // self.total}%) "
                f"{rate:.2f} tasks/s, {dt:.0f} s elapsed, ETA {eta:.0f} s")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
