"""Log lines as text for a person, or as one JSON object per line for a log pipeline.

``COUNTERSIGN_LOG_FORMAT``: ``text`` (the default) or ``json``. ``COUNTERSIGN_LOG_LEVEL``:
``WARNING`` by default; ``INFO`` adds one access line per HTTP request and the worker's
passes. A JSON line holds ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``,
``process`` and, for a line written while a request was being answered, its
``correlation_id``: the id the person was shown (``X-Correlation-ID``, a problem's
``correlation_id``, an error page's reference) finds every line about their request.
``exception`` holds a traceback when there is one: logs are the operator's, never a
browser's or a model's. In text, a message's control characters are written escaped
(``TextFormatter``): what a caller sent (a request's path, which the server has
percent-decoded) cannot start a line of its own that reads like another log line.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from countersign.domain.visible_text import shown_json
from countersign.infrastructure.correlation import current_correlation_id
from countersign.infrastructure.settings import SettingsError

LOG_FORMAT_ENV = "COUNTERSIGN_LOG_FORMAT"
LOG_LEVEL_ENV = "COUNTERSIGN_LOG_LEVEL"
TEXT_FORMAT = "%(levelname)s %(name)s: %(message)s"
#: Fields a log call may add with ``extra=`` that a JSON line carries as they are.
EXTRA_FIELDS = ("method", "path", "status", "duration_ms")
#: The loggers uvicorn configures for itself; in JSON mode their lines go through ours.
_UVICORN = ("uvicorn", "uvicorn.error", "uvicorn.access")
#: The HTTP clients' loggers (the model's client, the webhooks'): at INFO each says every
#: request's whole URL, and a URL can carry credentials (``https://user:secret@host``, a key
#: in its query). Their warnings and errors still show; our own lines say what was called.
_HTTP_CLIENTS = ("httpx", "httpx2")


#: Control characters (C0, DEL, C1), the Unicode line and paragraph separators and the
#: bidirectional formatting characters, each to its escape: ``\n`` for a newline, ``\x1b``
#: for an escape, ``\u202e`` for a right-to-left override (which reorders the rest of the line
#: in a terminal).
_ESCAPES = {
    code: repr(chr(code))[1:-1]
    for code in (
        *range(0x20),
        *range(0x7F, 0xA0),
        0x061C,
        0x200E,
        0x200F,
        *range(0x2028, 0x202F),
        *range(0x2066, 0x206A),
    )
}


class TextFormatter(logging.Formatter):
    """``TEXT_FORMAT``, each log call one line: control characters in its message escaped
    (a traceback, which the formatter adds after the message, keeps its own lines)."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return super().formatMessage(record).translate(_ESCAPES)


class JsonFormatter(logging.Formatter):
    """One JSON object per line, with the request's correlation id when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "process": record.process,
        }
        correlation_id = getattr(record, "correlation_id", None) or current_correlation_id()
        if correlation_id:
            line["correlation_id"] = correlation_id
        for name in EXTRA_FIELDS:
            if hasattr(record, name):
                line[name] = getattr(record, name)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        # JSON escapes C0 itself; C1, the separators and the formatting characters too, so a
        # line read in a terminal (``tail -f``) or split by a tool stays one line, in order.
        return shown_json(json.dumps(line, ensure_ascii=False, default=str))


class _OurHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler ``configure_logging`` installs (so a second call replaces it)."""


def log_format() -> str:
    value = os.environ.get(LOG_FORMAT_ENV, "").strip().lower() or "text"
    if value not in ("text", "json"):
        raise SettingsError(
            f"{LOG_FORMAT_ENV} is text or json, not {value!r}",
            f"{LOG_FORMAT_ENV} vaut text ou json, pas {value!r}",
        )
    return value


def log_level() -> int:
    value = os.environ.get(LOG_LEVEL_ENV, "").strip().upper() or "WARNING"
    level = logging.getLevelName(value)
    if not isinstance(level, int):
        raise SettingsError(
            f"{LOG_LEVEL_ENV} is DEBUG, INFO, WARNING or ERROR, not {value.lower()!r}",
            f"{LOG_LEVEL_ENV} vaut DEBUG, INFO, WARNING ou ERROR, pas {value.lower()!r}",
        )
    return level


def configure_logging(stream: TextIO | None = None) -> None:
    """Set up the root logger from the environment; call it once per process.

    Text keeps ``logging.basicConfig``'s manners (nothing changes where the root logger
    already has handlers, as under a test runner). JSON replaces them with one handler, and
    routes uvicorn's own loggers through it too, so every line of a server is JSON. The HTTP
    clients' request lines, which name whole URLs, are never logged (``_HTTP_CLIENTS``).
    """
    fmt, level = log_format(), log_level()
    for name in _HTTP_CLIENTS:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
    root = logging.getLogger()
    if fmt == "text":
        if not root.handlers:  # as ``logging.basicConfig``, with lines of their own
            handler = logging.StreamHandler(stream)
            handler.setFormatter(TextFormatter(TEXT_FORMAT))
            root.addHandler(handler)
            root.setLevel(level)
        return
    for handler in [h for h in root.handlers if isinstance(h, _OurHandler)]:
        root.removeHandler(handler)
    handler = _OurHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root.addHandler(handler)
    root.setLevel(level)
    for name in _UVICORN:
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True


def json_logs() -> bool:
    """Whether COUNTERSIGN_LOG_FORMAT is json (False for a wrong value: its own error says
    so, as text)."""
    try:
        return log_format() == "json"
    except SettingsError:
        return False


def say(text: str, level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """A command's own line for its operator, on stderr: as it is, or with
    COUNTERSIGN_LOG_FORMAT=json one JSON object as every log line is (``JsonFormatter``; a
    JSON shipper dropped or misread "serving on", the runners' progress and every "error:"
    line). Said whatever COUNTERSIGN_LOG_LEVEL is: it is the command's output, not a log."""
    out = stream or sys.stderr
    if json_logs():
        record = logging.LogRecord("countersign.cli", level, "", 0, text, None, None)
        out.write(JsonFormatter().format(record) + "\n")
    else:
        out.write(text + "\n")
    out.flush()
