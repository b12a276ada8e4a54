"""A model endpoint that answers slowly when told to, behind the real ``openai`` client.

The attack tests on assistant turns (``tests/attacks/test_assistant_*.py``) need a model that
keeps some turns waiting, as a model taking 20 s would, while it answers others at once: a
manager message holding ``FLOOD`` waits until the test sets ``release``; any other is answered
at once with ``REPLY``. Nothing here calls a real model.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import openai
from countersign.infrastructure.adapters.openai_model import OpenAIChatModel
from countersign.infrastructure.adapters.scripted_model import BASE_URL

FLOOD = "FLOOD"
#: The API route a manager message to the order assistant goes to (``.format(order_id)``).
MESSAGES = "/api/v1/assistants/orders/resources/{}/messages"
REPLY = "Here is what I found."


def chat_completion(message: Any) -> dict[str, Any]:
    """An OpenAI chat completion's body whose one choice is ``message`` (as the endpoint sends
    it: a test's malformed message goes as it is)."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
    }


class SlowModel:
    """An OpenAI-compatible endpoint: a manager message holding FLOOD waits (a slow model)
    until ``release`` is set; any other is answered at once with REPLY."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.asked: list[str] = []  # the manager's message of each request, in order
        self.waiting = 0  # requests that waited (or wait) for ``release``
        self.release = threading.Event()

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        said = str(json.loads(request.content)["messages"][-1]["content"])
        with self.lock:
            self.asked.append(said)
            if FLOOD in said:
                self.waiting += 1
        if FLOOD in said:
            self.release.wait(timeout=60)
        return httpx2.Response(200, json=chat_completion({"role": "assistant", "content": REPLY}))

    def chat_model(self) -> OpenAIChatModel:
        """The production adapter over this endpoint (one attempt: nothing is retried)."""
        client = openai.OpenAI(
            api_key="offline",
            base_url=BASE_URL,
            http_client=httpx2.Client(transport=httpx2.MockTransport(self.handle)),
            max_retries=0,
        )
        return OpenAIChatModel(client, "fake", attempts=1, total_seconds=60.0)


@contextmanager
def answering(assistant: Any) -> Iterator[SlowModel]:
    """A SlowModel answering every turn of ``assistant`` (a wiring's ``cs.assistant``, and
    so the API's and the pages' over it) for the block; waiting turns are let go at its end."""
    endpoint = SlowModel()
    chat_model = endpoint.chat_model()
    before = assistant.model
    assistant.model = chat_model
    try:
        yield endpoint
    finally:
        endpoint.release.set()
        assistant.model = before
        chat_model.client.close()


def until(condition: Callable[[], bool], seconds: float = 30) -> bool:
    """Whether ``condition`` held within ``seconds`` (asked every 10 ms)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
