"""Progress for long work: a bar on a terminal, a periodic line otherwise (logs, CI)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from countersign.infrastructure.entrypoints.cli.service_words import COLON, UNITS, number
from countersign.infrastructure.observability.logs import json_logs, say


class Progress:
    """Counts work done against a total (0: not known beforehand) and shows the rate.

    ``quiet_for``: seconds during which nothing is shown, and nothing at the end either if the
    work finished within them (a short check stays silent for the cron job that reads it)."""

    def __init__(
        self,
        label: str,
        total: int,
        stream: TextIO | None = None,
        every: float = 1.0,
        *,
        unit: str = "events",
        quiet_for: float = 0.0,
        language: str = "en",
    ):
        self.label = label
        self.unit = unit
        self.language = language
        self.quiet_for = quiet_for
        self.total = max(total, 0)
        self.done = 0
        self.stream = stream or sys.stderr
        self.every = every
        self.started = time.perf_counter()
        self._last = 0.0
        self._shown = -1
        # Lines for a log shipper with COUNTERSIGN_LOG_FORMAT=json (each a JSON object), never a
        # bar redrawn in place.
        self._json = json_logs()
        self._tty = self.stream.isatty() and not self._json

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    @property
    def rate(self) -> float:
        return self.done / self.elapsed if self.elapsed > 0 else 0.0

    def advance(self, count: int) -> None:
        self.done += count
        now = time.perf_counter()
        if now - self.started < self.quiet_for:
            return
        if now - self._last >= (0.1 if self._tty else self.every):
            self._last = now
            self._show()

    def finish(self) -> None:
        if self.quiet_for and self._shown < 0:
            return  # over before anything was said
        if self._shown != self.done:
            self._show()
        if self._tty:
            self.stream.write("\n")
        self.stream.flush()

    def _units(self) -> tuple[str, str]:
        """The unit counted, (plural, singular), in the reader's language."""
        known = UNITS.get(self.unit)
        if known is None:
            return self.unit, self.unit[:-1]
        many, one = known
        return many.text(self.language), one.text(self.language)

    def _show(self) -> None:
        self._shown = self.done
        share = self.done / self.total if self.total else 1.0
        language = self.language
        of = f"/{number(self.total, language)}" if self.total else ""
        many, one = self._units()
        unit = one if self.done == 1 and not self.total else many  # 1 proposal
        colon = COLON.text(language)
        done, rate = number(self.done, language), number(round(self.rate), language)
        text = f"{self.label}{colon}{done}{of} {unit}, {rate} {many}/s"
        if self._tty and not self.total:
            self.stream.write(f"\r{text}")
        elif self._tty:
            width = 30
            filled = int(width * min(share, 1.0))
            self.stream.write(
                f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] "
                f"{share:6.1%} {done}{of} {rate}/s"
            )
        elif self._json:
            say(text, stream=self.stream)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
