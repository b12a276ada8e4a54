"""The assistant-turn figures of docs/deploy.md: a club's share of the turns waiting on the
model, and a member's turn limit, replayed as the outside review ran them, on fresh SQLite
files in a temporary directory, over a real server (the JSON API and the pages).

    .venv/bin/python scripts/measure_turns.py [share] [burst] [--model-seconds 20]

``share``: with a model that takes ``--model-seconds`` to answer, one granite agent token
sends 8 messages at once; a second later a maple agent's API turn and Mia's web chat message
(maple's manager, signed in) go out together. Prints how each ended and how long it took.
``burst``: one granite agent token sends 60 messages at once (12 at a time, the model answering
at once); prints the answers' statuses and how many events were written.

The model is scripted behind the real ``openai`` client, as in the tests; no real model is
called.
"""

# ruff: noqa: E402
import argparse
import atexit
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
WORK = Path(tempfile.mkdtemp(prefix="countersign-turns-"))
atexit.register(shutil.rmtree, WORK, ignore_errors=True)  # its databases, gone at the end
# The turns' own bounds are measured: one token's messages at once are not refused first by
# the bound on its requests under way (COUNTERSIGN_REQUESTS_IN_FLIGHT, 4 by default).
os.environ.setdefault("COUNTERSIGN_REQUESTS_IN_FLIGHT", "100")
import httpx2
import openai
from countersign.infrastructure.adapters.openai_model import OpenAIChatModel
from countersign.infrastructure.adapters.scripted_model import BASE_URL
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.demo.seed import seed
from countersign.infrastructure.entrypoints.http import create_app
from countersign.infrastructure.entrypoints.web import mount_pages
from countersign.infrastructure.identity.passwords import set_password
from countersign.infrastructure.identity.tokens import issue_token
from countersign.infrastructure.settings import Settings

from tests.servers import serving

AVA, MIA = "ava@granite.example", "mia@maple.example"
MIA_PASSWORD = "mia-measuring-password"
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
MESSAGES = "/api/v1/assistants/orders/resources/{}/messages"


def model(seconds: float) -> OpenAIChatModel:
    """A model that answers every request in words after ``seconds``."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        time.sleep(seconds)
        message = {"role": "assistant", "content": "Here is what I found."}
        choice = {"index": 0, "finish_reason": "stop", "message": message}
        return httpx2.Response(
            200,
            json={
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [choice],
            },
        )

    client = openai.OpenAI(
        api_key="offline",
        base_url=BASE_URL,
        http_client=httpx2.Client(transport=httpx2.MockTransport(answer)),
        max_retries=0,
    )
    return OpenAIChatModel(client, "measured", attempts=1, total_seconds=60.0)


def fresh(name: str, model_seconds: float) -> tuple[Countersign, dict[str, Any], Any]:
    cs = bootstrap(Settings(database_url=f"sqlite:///{WORK / name}"), model=model(model_seconds))
    seeded = seed(cs)
    app = create_app(cs)
    mount_pages(app, cs, secure_cookies=False)
    return cs, seeded, app


def agent(cs: Countersign, club: str, member: str) -> dict[str, str]:
    token = issue_token(cs, club, "agent", ["orders.refund"], issued_by=member, kind="agent")
    return {"Authorization": f"Bearer {token.token}"}


def timed(call: Any) -> tuple[Any, float]:
    started = time.monotonic()
    answer = call()
    return answer, round(time.monotonic() - started, 2)


def ended(answer: httpx2.Response) -> str:
    if answer.status_code != 200:
        return str(answer.status_code)
    said = [m["text"] for m in answer.json()["messages"]]
    return f"{answer.json()['ended']}: {said[-1]}"


def web_chat(base: str, order: str) -> str:
    """Mia signs in and sends one message from the chat page; what the page then shows."""
    with httpx2.Client(base_url=base, timeout=120) as browser:
        token = CSRF.search(browser.get("/sign-in").text)
        assert token is not None
        signed_in = browser.post(
            "/sign-in", data={"email": MIA, "password": MIA_PASSWORD, "csrf_token": token[1]}
        )
        assert signed_in.status_code == 303, signed_in.text[:300]
        page = browser.get(f"/chat/orders/{order}").text
        token = CSRF.search(page)
        assert token is not None
        sent = browser.post(
            f"/chat/orders/{order}", data={"message": "Is this settled?", "csrf_token": token[1]}
        )
        shown = browser.get(sent.headers["location"].split("#")[0]).text
    for words in ("Here is what I found.", "unavailable", "busy", "indisponible"):
        if words in shown:
            return f"{sent.status_code}, the page shows {words!r}"
    return f"{sent.status_code}, the page shows neither answer"


def share(results: dict[str, Any], model_seconds: float) -> None:
    cs, seeded, app = fresh("share.db", model_seconds)
    set_password(cs, MIA, MIA_PASSWORD)
    granite, maple = agent(cs, "granite", AVA), agent(cs, "maple", MIA)
    granite_order, maple_order = seeded["orders"]["refund-ok"], seeded["orders"]["maple-refund"]
    with serving(app) as server, httpx2.Client(base_url=server.base, timeout=120) as client:
        client.get("/api/v1/inbox", headers=maple)  # the first request builds the routes

        def say(headers: dict[str, str], order: str) -> httpx2.Response:
            return client.post(MESSAGES.format(order), headers=headers, json={"message": "Hi"})

        with ThreadPoolExecutor(10) as pool:
            flood = [pool.submit(timed, lambda: say(granite, granite_order)) for _ in range(8)]
            time.sleep(1.0)
            other = pool.submit(timed, lambda: say(maple, maple_order))
            chat = pool.submit(timed, lambda: web_chat(server.base, maple_order))
            granite_answers = [f.result() for f in flood]
            maple_answer, chat_answer = other.result(), chat.result()
    results["share"] = {
        "model_seconds": model_seconds,
        "granite_8_at_once": dict(Counter(f"{ended(a)} ({s:.0f} s)" for a, s in granite_answers)),
        "maple_api_turn": f"{ended(maple_answer[0])} ({maple_answer[1]} s)",
        "mia_web_chat": f"{chat_answer[0]} ({chat_answer[1]} s)",
    }
    cs.close()


def burst(results: dict[str, Any]) -> None:
    cs, seeded, app = fresh("burst.db", 0.0)
    granite = agent(cs, "granite", AVA)
    order = seeded["orders"]["refund-ok"]
    before = cs.app.recorder.max_notification_id() or 0
    with serving(app) as server, httpx2.Client(base_url=server.base, timeout=60) as client:
        client.get("/api/v1/inbox", headers=granite)

        def say(i: int) -> httpx2.Response:
            body = {"message": f"turn {i}"}
            return client.post(MESSAGES.format(order), headers=granite, json=body)

        started = time.monotonic()
        with ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(say, range(60)))
        took = time.monotonic() - started
    retry_after = sorted({int(a.headers["retry-after"]) for a in answers if a.status_code == 429})
    results["burst"] = {
        "turns_sent": 60,
        "seconds": round(took, 2),
        "answers": dict(Counter(a.status_code for a in answers)),
        "retry_after": [retry_after[0], retry_after[-1]] if retry_after else None,
        "events_written": (cs.app.recorder.max_notification_id() or 0) - before,
    }
    cs.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("steps", nargs="*", help="share, burst (default: both)")
    parser.add_argument("--model-seconds", type=float, default=20.0)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for step in args.steps or ["share", "burst"]:
        if step not in ("share", "burst"):
            parser.error(f"no step {step!r}: share or burst")
        if step == "share":
            share(results, args.model_seconds)
        else:
            burst(results)
        print(json.dumps(results, ensure_ascii=False, indent=1), flush=True)
