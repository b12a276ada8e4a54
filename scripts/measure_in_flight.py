"""How much one API token's concurrent slow reads hold back another club's request, on a live
``countersign serve`` and ``countersign mcp --http`` (separate processes, one worker each).

    .venv/bin/python scripts/measure_in_flight.py [--database URL] [--flood N] [--proposals P]

Seeds the demo clubs and ``P`` pending proposals in granite (so granite's inbox pages are
large), issues an agent token in granite and one in maple, then, for each server:

1. times maple's request alone (the median of 15); for the pages, Mia's inbox page, signed
   in, while Ava, signed in, loads her inbox page ``N`` at once;
2. starts ``N`` concurrent requests with granite's agent token, each a slow read (the API's
   ``/api/v1/inbox?page_size=100``; over MCP a read tool), repeated for as long as maple is
   timed, and times maple's same request meanwhile (the median and the worst of 15);
3. counts granite's answers by status (200, or 429 once requests in flight are bounded).
   A flood's request refused 429 waits its Retry-After (1 s) before it is sent again, as a
   client should; ``--no-wait`` sends it again at once (a flood of requests, not of requests
   under way: the server then spends its loop answering 429s).

Without a database URL it uses a SQLite file in a temporary directory.
"""

# ruff: noqa: E402
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx
from countersign.infrastructure.bootstrap import bootstrap
from countersign.infrastructure.identity.tokens import issue_token
from countersign.infrastructure.settings import Settings

from tests.http_load import CLI, _env, free_port, load

HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "measure", "version": "1"},
    },
}
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}
#: --no-wait: the flood's requests are sent again at once after a 429, Retry-After unheeded.
honour_retry_after = True


def tokens(database_url: str) -> tuple[str, str]:
    cs = bootstrap(Settings(database_url=database_url))
    try:
        granite = issue_token(
            cs, "granite", "flood", ["orders.refund"], issued_by="ava@granite.example", kind="agent"
        ).token
        maple = issue_token(
            cs, "maple", "victim", ["orders.refund"], issued_by="mia@maple.example", kind="agent"
        ).token
        return granite, maple
    finally:
        cs.close()


def passwords(database_url: str) -> None:
    """The demo people's passwords (``demo_password``), so that Ava and Mia can sign in."""
    from countersign.infrastructure.demo.passwords import demo_password
    from countersign.infrastructure.identity.passwords import set_password

    cs = bootstrap(Settings(database_url=database_url))
    try:
        for email in ("ava@granite.example", "mia@maple.example"):
            set_password(cs, email, demo_password(email))
    finally:
        cs.close()


async def signed_in(client: httpx.AsyncClient, email: str) -> None:
    from countersign.infrastructure.demo.passwords import demo_password

    page = await client.get("/sign-in")
    csrf = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    form = {"email": email, "password": demo_password(email), "csrf_token": csrf}
    answer = await client.post("/sign-in", data=form)
    assert answer.status_code == 303, answer.status_code


async def pages(base: str, _granite: str, _maple: str, n: int) -> tuple[Any, ...]:
    """A signed-in person's inbox page: Ava's, ``n`` at once, and Mia's (maple) meanwhile."""
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    async with (
        httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as ava,
        httpx.AsyncClient(base_url=base, timeout=120) as mia,
    ):
        await signed_in(ava, "ava@granite.example")
        await signed_in(mia, "mia@maple.example")

        async def victim() -> float:
            t = time.perf_counter()
            answer = await mia.get("/")
            assert answer.status_code == 200, answer.status_code
            return (time.perf_counter() - t) * 1000

        async def flooder() -> int:
            return (await ava.get("/", params={"page_size": 100})).status_code

        return await measure(victim, flooder, n)


def start(database_url: str, work: Path, *args: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    log = (work / f"{args[0]}-{port}.log").open("wb")
    env = _env({"COUNTERSIGN_DATABASE_URL": database_url, "COUNTERSIGN_SECURE_COOKIES": "0"})
    process = subprocess.Popen(
        [*CLI, *args, "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(base + "/", timeout=2)
            return process, base
        except httpx.HTTPError:
            time.sleep(0.2)
    process.terminate()
    raise SystemExit(f"{args[0]} did not start")


async def measure(
    victim: Any, flooder: Any, n: int, samples: int = 15
) -> tuple[float, float, float, Counter[int]]:
    """maple's median alone, its median and worst under the flood, granite's answers."""
    alone = [await victim() for _ in range(samples)]
    statuses: Counter[int] = Counter()
    done = asyncio.Event()

    async def flood() -> None:
        while not done.is_set():
            status = await flooder()
            statuses[status] += 1
            if status == 429 and honour_retry_after:
                await asyncio.sleep(1.0)  # Retry-After: 1

    tasks = [asyncio.create_task(flood()) for _ in range(n)]
    await asyncio.sleep(1.0)  # the flood under way
    loaded = [await victim() for _ in range(samples)]
    done.set()
    await asyncio.gather(*tasks)
    return statistics.median(alone), statistics.median(loaded), max(loaded), statuses


async def api(base: str, granite: str, maple: str, n: int) -> tuple[Any, ...]:
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        slow = {"Authorization": f"Bearer {granite}"}
        mine = {"Authorization": f"Bearer {maple}"}

        async def victim() -> float:
            t = time.perf_counter()
            answer = await client.get("/api/v1/inbox", params={"page_size": 5}, headers=mine)
            assert answer.status_code == 200, answer.text
            return (time.perf_counter() - t) * 1000

        async def flooder() -> int:
            answer = await client.get("/api/v1/inbox", params={"page_size": 100}, headers=slow)
            return answer.status_code

        return await measure(victim, flooder, n)


async def mcp_session(client: httpx.AsyncClient, token: str) -> dict[str, str]:
    headers = {**MCP_ACCEPT, "Authorization": f"Bearer {token}"}
    answer = await client.post("/mcp", json=HELLO, headers=headers)
    assert answer.status_code == 200, answer.text
    headers["Mcp-Session-Id"] = answer.headers["mcp-session-id"]
    headers["Mcp-Protocol-Version"] = "2025-06-18"
    await client.post(
        "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    return headers


async def mcp(base: str, granite: str, maple: str, n: int) -> tuple[Any, ...]:
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        mine = await mcp_session(client, maple)
        # Sessions for the flood (a token may hold 16), its calls spread over them.
        theirs = [await mcp_session(client, granite) for _ in range(8)]
        listed = await client.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=mine
        )
        names = listed.text.split('"name":"')[1:]
        tool = next(
            (name.split('"')[0] for name in names if "_list" in name.split('"')[0]),
            names[0].split('"')[0],
        )
        call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call"}
        params = {"name": tool, "arguments": {}}
        turn = 0

        async def victim() -> float:
            nonlocal turn
            turn += 1  # (a request id used once per session: the SDK answers by id)
            t = time.perf_counter()
            answer = await client.post(
                "/mcp", json={**call, "id": turn, "params": params}, headers=mine
            )
            assert answer.status_code == 200, answer.text
            return (time.perf_counter() - t) * 1000

        async def flooder() -> int:
            nonlocal turn
            turn += 1
            headers = theirs[turn % len(theirs)]
            try:
                answer = await client.post(
                    "/mcp", json={**call, "id": turn, "params": params}, headers=headers, timeout=30
                )
            except httpx.TimeoutException:
                return 0  # no answer within 30 s
            return answer.status_code

        print(f"mcp: the tool called: {tool}")
        return await measure(victim, flooder, n)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", default="")
    parser.add_argument("--flood", type=int, default=60)
    parser.add_argument("--proposals", type=int, default=300)
    parser.add_argument("--no-wait", action="store_true")
    args = parser.parse_args()
    global honour_retry_after
    honour_retry_after = not args.no_wait
    work = Path(tempfile.mkdtemp(prefix="countersign-in-flight-"))
    database_url = args.database or f"sqlite:///{work / 'measure.db'}"
    try:
        load(database_url, args.proposals, 1)
        granite, maple = tokens(database_url)
        passwords(database_url)
        for name, command, run in (
            ("api", ("serve", "--workers", "1"), api),
            ("mcp", ("mcp", "--http"), mcp),
            ("pages", ("serve", "--workers", "1"), pages),
        ):
            process, base = start(database_url, work, *command)
            try:
                alone, loaded, worst, statuses = asyncio.run(run(base, granite, maple, args.flood))
            finally:
                process.terminate()
                process.wait(timeout=30)
            caller = "signed-in person (Ava)" if name == "pages" else "token"
            print(
                f"{name}: maple alone {alone:.1f} ms (median); with {args.flood} concurrent slow "
                f"reads from one granite {caller}: {loaded:.1f} ms median, {worst:.1f} ms "
                f"worst; granite's answers {dict(sorted(statuses.items()))}"
            )
    finally:
        if os.environ.get("KEEP") is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
