"""Issue 23's figures: the trickle timing, the cross-club delay, the session flood and the
proposal flood, on fresh SQLite files in a temporary directory.

    .venv/bin/python scripts/measure_hardening.py [trickle] [cross] [sessions] [proposals]

``trickle`` times one attempt against a receiver that answers one byte a second, with the
original sender's channel (git show 417270c:infrastructure/notifications/channels.py, when git
can read it) and with today's, both at a 3 s timeout. ``cross`` measures how late a maple
delivery arrives while granite's receiver trickles. ``sessions`` opens 2,000 MCP sessions with
one maple token, then times granite's initialize. ``proposals`` posts 200 proposals through
the API with one token, then runs a sender pass.
"""

# ruff: noqa: E402
import importlib.util
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["COUNTERSIGN_WEBHOOK_ALLOWED_NETWORKS"] = "127.0.0.0/8"
WORK = Path(tempfile.mkdtemp(prefix="countersign-hardening-"))
import httpx2
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.mcp import http_app
from countersign.infrastructure.identity.tokens import issue_token
from countersign.infrastructure.notifications import channels
from countersign.infrastructure.notifications.settings import NotifySettings
from countersign.infrastructure.notifications.webhooks import Webhooks, notification_sender
from countersign.infrastructure.settings import Settings
from fastapi.testclient import TestClient

from tests.receivers import receiving
from tests.servers import serving

AVA, MIA = "ava@granite.example", "mia@maple.example"
REFUND = "order.refund_missing_discount"
TO_CARD = {
    "payment": "P1",
    "line_item": "L1",
    "discount": "D1",
    "destination": "original_payment_method",
}


def trickler(seconds: float) -> tuple[str, threading.Event, socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                for i, byte in enumerate(b"HTTP/1.1 200 OK\r\nx-t: " + b"a" * 100):
                    if stop.is_set() or i >= seconds:
                        return
                    conn.sendall(bytes([byte]))
                    time.sleep(1.0)
            except OSError:
                return

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                c, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=answer, args=(c,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{server.getsockname()[1]}/hook", stop, server


def trickle_timing(results: dict[str, Any]) -> None:
    url, stop, server = trickler(25)
    now = datetime.now(UTC)
    original = WORK / "original_channels.py"
    shown = subprocess.run(
        ["git", "-C", str(ROOT), "show", "417270c:infrastructure/notifications/channels.py"],
        capture_output=True,
        check=False,
    )
    before, a = -1.0, None
    if shown.returncode == 0:
        original.write_bytes(shown.stdout)
        spec = importlib.util.spec_from_file_location("original_channels", original)
        assert spec is not None
        assert spec.loader is not None
        old = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(old)
        t = time.monotonic()
        a = old.post_webhook(url, b"{}", {}, 3, now)
        before = time.monotonic() - t
    t = time.monotonic()
    b = channels.post_webhook(url, b"{}", {}, 3, now, channels_allowed())
    after = time.monotonic() - t
    stop.set()
    server.close()
    results["trickle"] = {
        "timeout_s": 3,
        "trickle_bytes_per_s": 1,
        "before_ms": round(before * 1000),
        "before_result": (a.error_class or a.status_code) if a else None,
        "after_ms": round(after * 1000),
        "after_result": b.error_class or b.status_code,
    }


def channels_allowed() -> Any:
    from countersign.infrastructure.notifications.destinations import parse_networks

    return parse_networks("127.0.0.0/8")


def fresh(path: str) -> tuple[Any, dict[str, Any]]:
    if os.path.exists(path):
        os.remove(path)
    cs = bootstrap(Settings(database_url=f"sqlite:///{path}"))
    return cs, seed(cs)


def cross_club(results: dict[str, Any]) -> None:
    cs, seeded = fresh(str(WORK / "cross.db"))
    url, stop_t, server = trickler(25)
    with receiving() as healthy:
        Webhooks(cs).add(None, "granite", url)
        Webhooks(cs).add(None, "maple", healthy.url)
        sender = notification_sender(cs, NotifySettings(timeout_seconds=3))
        stop = threading.Event()
        th = threading.Thread(target=sender.run, args=(stop, 1.0), daemon=True)
        th.start()
        cs.proposals.propose(
            organization="granite",
            actor=AVA,
            operation=REFUND,
            resource_id=seeded["orders"]["refund-ok"],
            request=TO_CARD,
        )
        time.sleep(1.5)
        made = time.monotonic()
        cs.proposals.propose(
            organization="maple",
            actor=MIA,
            operation=REFUND,
            resource_id=seeded["orders"]["maple-refund"],
            request=TO_CARD,
        )
        healthy.arrived.wait(60)
        delay = time.monotonic() - made
        stop.set()
        th.join(30)
    stop_t.set()
    server.close()
    results["cross_club"] = {"notify_interval_s": 1.0, "maple_delay_ms": round(delay * 1000)}
    cs.close()


HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "flood", "version": "1"},
    },
}


def session_flood(results: dict[str, Any], attempts: int = 2000) -> None:
    cs, _seeded = fresh(str(WORK / "mcp.db"))
    maple = issue_token(cs, "maple", "flood", ["orders.refund"], issued_by=MIA, kind="agent").token
    granite = issue_token(
        cs, "granite", "agent", ["orders.refund"], issued_by=AVA, kind="agent"
    ).token
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with serving(http_app(cs), lifespan="on") as running, httpx2.Client(timeout=10) as client:
        h = {"Accept": "application/json, text/event-stream"}
        codes: dict[int, int] = {}
        t = time.monotonic()
        for _ in range(attempts):
            r = client.post(
                f"{running.base}/mcp", json=HELLO, headers={**h, "Authorization": f"Bearer {maple}"}
            )
            codes[r.status_code] = codes.get(r.status_code, 0) + 1
        took = time.monotonic() - t
        t = time.monotonic()
        g = client.post(
            f"{running.base}/mcp", json=HELLO, headers={**h, "Authorization": f"Bearer {granite}"}
        )
        g_ms = (time.monotonic() - t) * 1000
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    results["session_flood"] = {
        "maple_initialize_attempts": attempts,
        "answers": codes,
        "seconds": round(took, 2),
        "granite_initialize": g.status_code,
        "granite_ms": round(g_ms, 1),
        "max_rss_growth_mb": round((rss1 - rss0) / 1024, 1),
    }
    cs.close()


def proposal_flood(results: dict[str, Any], n: int = 200) -> None:
    cs, seeded = fresh(str(WORK / "flood.db"))
    token = issue_token(
        cs, "granite", "flood", ["orders.refund"], issued_by=AVA, kind="agent"
    ).token
    with receiving() as receiver:
        Webhooks(cs).add(None, "granite", receiver.url)
        with TestClient(create_app(cs), raise_server_exceptions=False) as client:
            codes: dict[int, int] = {}
            t = time.monotonic()
            for _ in range(n):
                r = client.post(
                    "/api/v1/proposals",
                    headers={"Authorization": f"Bearer {token}"},
                    json={
                        "operation": REFUND,
                        "resource_id": seeded["orders"]["refund-ok"],
                        "request": TO_CARD,
                    },
                )
                codes[r.status_code] = codes.get(r.status_code, 0) + 1
            took = time.monotonic() - t
            retry = r.headers.get("retry-after")
        report = notification_sender(cs, NotifySettings()).run_once()
        posts = len(receiver.received)
    results["proposal_flood"] = {
        "proposals_sent": n,
        "answers": codes,
        "seconds": round(took, 2),
        "last_retry_after": retry,
        "webhook_posts": posts,
        "skipped_stale": report.skipped,
    }
    cs.close()


if __name__ == "__main__":
    results: dict[str, Any] = {}
    for step in sys.argv[1:] or ["trickle", "cross", "sessions", "proposals"]:
        {
            "trickle": trickle_timing,
            "cross": cross_club,
            "sessions": session_flood,
            "proposals": proposal_flood,
        }[step](results)
        print(json.dumps(results), flush=True)
    shutil.rmtree(WORK, ignore_errors=True)
