"""Held: what a caller sends cannot write a log line of its own.

A review of this session sent ``GET /x%0AWARNING%20countersign.worker:%20...``: the server
percent-decodes the path, and the access line (``countersign.access``, at ``INFO``) wrote it
with its newline, so the text log showed a second, forged line. In text, a log call is now one
line whatever its message holds: control characters are written escaped. A traceback, which
the formatter adds after the message, keeps its lines. (JSON lines were never affected: the
message is a JSON string.)
"""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator

import pytest
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.http.app import create_app
from countersign.infrastructure.observability import logs
from fastapi.testclient import TestClient

FORGED = "WARNING countersign.worker: pass 9: reconcile settled 0"


def _record(message: str, *args: object, exc_info: object = None) -> logging.LogRecord:
    return logging.LogRecord(
        "countersign.access", logging.INFO, __file__, 1, message, args, exc_info
    )  # type: ignore[arg-type]


def test_a_message_with_control_characters_is_one_line_with_them_escaped() -> None:
    formatter = logs.TextFormatter(logs.TEXT_FORMAT)
    hostile = f"/x\n{FORGED}\r\x1b[31mred\u2028next\x00"
    line = formatter.format(_record("%s %s", "GET", hostile))
    assert "\n" not in line
    assert "\r" not in line
    assert "\x1b" not in line
    assert line == (
        "INFO countersign.access: GET /x\\nWARNING countersign.worker: pass 9: reconcile "
        "settled 0\\r\\x1b[31mred\\u2028next\\x00"
    )
    # Printable text, accents and tabs' neighbours alike, is written as it is.
    assert formatter.format(_record("Déjà vu — 48,00 $")) == (
        "INFO countersign.access: Déjà vu — 48,00 $"
    )


def test_a_traceback_keeps_its_lines_after_the_escaped_message() -> None:
    try:
        raise RuntimeError("the disk is on fire")
    except RuntimeError:
        record = _record("failed on %s", "/x\ny", exc_info=sys.exc_info())
    text = logs.TextFormatter(logs.TEXT_FORMAT).format(record)
    first, *rest = text.splitlines()
    assert first == "INFO countersign.access: failed on /x\\ny"
    assert rest[0] == "Traceback (most recent call last):"
    assert rest[-1] == "RuntimeError: the disk is on fire"


@pytest.fixture
def access_lines() -> Iterator[io.StringIO]:
    """The access logger's lines, as the text format writes them."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logs.TextFormatter(logs.TEXT_FORMAT))
    access = logging.getLogger("countersign.access")
    level = access.level
    access.addHandler(handler)
    access.setLevel(logging.INFO)
    yield buffer
    access.removeHandler(handler)
    access.setLevel(level)


def test_a_forged_line_in_a_request_path_stays_in_its_access_line(
    cs: Countersign, access_lines: io.StringIO
) -> None:
    with TestClient(create_app(cs), raise_server_exceptions=False) as client:
        answer = client.get("/x%0A" + FORGED.replace(" ", "%20"))
    assert answer.status_code == 404
    lines = access_lines.getvalue().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("INFO countersign.access: GET /x\\nWARNING countersign.worker:")
    assert not any(line.startswith("WARNING") for line in lines)


def test_the_text_format_is_set_up_with_lines_of_their_own(monkeypatch) -> None:
    monkeypatch.setenv(logs.LOG_FORMAT_ENV, "text")
    monkeypatch.setenv(logs.LOG_LEVEL_ENV, "INFO")
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()  # as in a process that has configured nothing yet
    buffer = io.StringIO()
    try:
        logs.configure_logging(buffer)
        logging.getLogger("countersign.access").info("GET %s", f"/x\n{FORGED}")
        installed = root.handlers[:]
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    assert [type(h.formatter) for h in installed] == [logs.TextFormatter]
    assert buffer.getvalue() == f"INFO countersign.access: GET /x\\n{FORGED}\n"
