"""``countersign demo --serve``: the story, then the pages over the data it left, with the
address and the sign-ins printed; Ctrl-C stops it cleanly. A real process on a free port."""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from countersign.infrastructure.entrypoints.cli.demo import (
    SUGGESTED_ORDERS,
    browse_text,
    orders_still_owed,
)

from tests.conftest import AVA
from tests.http_load import free_port
from tests.support.proposing import propose

COUNTERSIGN = Path(sys.executable).with_name("countersign")
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
START_TIMEOUT = 90.0


def _read_until(process: subprocess.Popen[str], pattern: str) -> tuple[re.Match[str], str]:
    """Lines of the process's stdout up to the first that matches; the match and them all."""
    seen = []
    assert process.stdout is not None
    for line in process.stdout:
        seen.append(line)
        found = re.search(pattern, line)
        if found:
            return found, "".join(seen)
    raise AssertionError(f"the process ended ({process.wait()}) without {pattern!r}:\n{seen}")


def _wait_for(url: str, process: subprocess.Popen[str]) -> httpx.Response:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the server exited {process.returncode}"
        with contextlib.suppress(httpx.TransportError):
            return httpx.get(url, timeout=5)
        time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {START_TIMEOUT:.0f} s")


@pytest.mark.slow  # a process that tells the story, then serves
def test_demo_serve_tells_the_story_then_serves_its_data_and_stops_cleanly(tmp_path):
    port = free_port()
    database = f"sqlite:///{tmp_path / 'demo.db'}"
    process = subprocess.Popen(
        [str(COUNTERSIGN), "demo", "--serve", "--port", str(port), "--database", database],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        address, story = _read_until(process, r"See it in the browser: (http://\S+)")
        _, sign_ins = _read_until(process, r"maple-refund")
        # localhost, not 127.0.0.1: the passkeys belong to localhost, and the browser
        # refuses them at 127.0.0.1.
        assert address.group(1) == f"http://localhost:{port}"
        assert "Ava approves by id alone" in story  # the story came first
        assert f"The demo's data stays in {database}." in sign_ins
        ava = re.search(r"ava@granite\.example +(\S+) +manager of granite", sign_ins)
        assert ava is not None

        sign_in_page = _wait_for(f"{address.group(1)}/sign-in", process)
        assert sign_in_page.status_code == 200
        with httpx.Client(base_url=address.group(1)) as browser:
            token = CSRF.search(browser.get("/sign-in").text)
            assert token is not None
            signed = browser.post(
                "/sign-in",
                data={"email": "ava@granite.example", "password": ava.group(1)}
                | {"csrf_token": token.group(1)},
            )
            assert signed.status_code == 303
            inbox = browser.get("/").text
        assert "Emma Singh" in inbox  # the refund the demo left awaiting approval
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            _, err = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, err
    assert "Traceback" not in err


def test_the_orders_offered_to_the_assistant_are_those_still_owed(cs, seeded):
    """The demo offered orders its story had already refunded ("Nothing is owed on this
    order"): it now offers those still owed, and says which the story settled."""
    assert orders_still_owed(cs) == list(SUGGESTED_ORDERS)  # a fresh seed owes on each
    refund = propose(cs, seeded)  # refund-ok's missed discount
    assert cs.proposals.approve(refund, AVA).status == "succeeded"
    left = orders_still_owed(cs)
    assert ("refund-ok", "granite") not in left
    assert ("maple-refund", "maple") in left
    text = browse_text("http://127.0.0.1:8000", "sqlite:///x.db", _PASSWORDS, left)
    said = " ".join(text.split())
    assert "Start a conversation: refund-two-approvers, refund-lost-response" in said
    assert "The story settled refund-ok: serve a fresh `countersign seed` database" in said


_PASSWORDS = {
    "ava@granite.example": "a",
    "ben@granite.example": "b",
    "noah@granite.example": "n",
    "mia@maple.example": "m",
}
