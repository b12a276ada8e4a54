"""A model endpoint that misbehaves ends the turn in the application's words, recorded.

A review drove the section assistants against a fake OpenAI-compatible endpoint: an answer
that is not a chat completion (a body that is no JSON, an HTML page, a choice that is text, a
null message or name, content that is a number) crashed the turn with a 500 and left the
conversation without its end; arguments nested 100,000 deep did too; two thousand tool calls
in one answer were each recorded and sent back to the model, and arguments of 8 MB were sent
back with every later request. Each now ends as an unavailable model does, or is refused to the
model in words it can act on, through the real ``openai`` client.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID

import httpx2
import openai
import pytest
from countersign.application.assistant.tool_arguments import TOO_LARGE
from countersign.application.assistant.turn_limits import MAX_CONCURRENT_TURNS
from countersign.infrastructure.adapters.openai_model import MAX_TOOL_CALLS, OpenAIChatModel
from countersign.infrastructure.adapters.scripted_model import BASE_URL
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.settings import Settings
from countersign.infrastructure.testing.fixtures import SeededDatabase

from tests.conftest import AVA
from tests.support.slow_model import chat_completion

READ = "get_order_investigation"
Body = Callable[[dict[str, Any]], httpx2.Response]


class RawEndpoint:
    """Answers each request with the next of ``bodies`` (the last one again once they end)."""

    def __init__(self, bodies: list[Body]) -> None:
        self.bodies = bodies
        self.requests: list[bytes] = []
        #: The waits the model's client made between its requests, in seconds (``wait``).
        self.waits: list[float] = []

    def wait(self, seconds: float) -> None:
        """The model's wait before asking again: counted, then waited."""
        self.waits.append(seconds)
        time.sleep(seconds)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request.content)
        body = self.bodies.pop(0) if len(self.bodies) > 1 else self.bodies[0]
        return body(json.loads(request.content))


def completion(message: dict[str, Any]) -> Body:
    return lambda request: httpx2.Response(200, json=chat_completion(message))


def calls(*arguments: str, name: str = READ) -> Body:
    return completion(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": a}}
                for i, a in enumerate(arguments)
            ],
        }
    )


SAY_DONE = completion({"role": "assistant", "content": "Done."})


@pytest.fixture
def assistant_with(seeded_database: SeededDatabase, clock: Any) -> Iterator[Callable[..., Any]]:
    """``assistant_with(*bodies)``: a countersign whose model's endpoint answers with those
    bodies, on the test's copy of the seeded template, and the turn to take on it."""
    opened: list[tuple[Countersign, OpenAIChatModel]] = []

    def make(*bodies: Body) -> tuple[Countersign, RawEndpoint, Any]:
        endpoint = RawEndpoint(list(bodies))
        client = openai.OpenAI(
            api_key="offline",
            base_url=BASE_URL,
            http_client=httpx2.Client(transport=httpx2.MockTransport(endpoint.handle)),
            max_retries=0,
        )
        model = OpenAIChatModel(
            client, "fake", attempts=2, total_seconds=5.0, initial_wait=0.01, sleep=endpoint.wait
        )
        assert not opened, "one wiring a test: a second would share the first's database"
        cs = bootstrap(Settings(database_url=seeded_database.url), clock=clock, model=model)
        opened.append((cs, model))
        order = str(seeded_database.seeded["orders"]["refund-ok"])

        def turn() -> Any:
            return cs.assistant.turn(
                organization="granite",
                actor=AVA,
                section="orders",
                resource_id=order,
                message="Refund the missed discount",
            )

        return cs, endpoint, turn

    yield make
    for cs, model in opened:
        model.client.close()
        cs.close()


def _events(cs: Countersign, interaction_id: str) -> list[str]:
    return [e.type for e in cs.store.history(UUID(interaction_id))]


MALFORMED: dict[str, Body] = {
    "a body that is no JSON": lambda r: httpx2.Response(
        200, headers={"content-type": "application/json"}, content=b"{not json"
    ),
    "an HTML page": lambda r: httpx2.Response(
        200, headers={"content-type": "text/html"}, content=b"<html>Bad gateway</html>"
    ),
    "a choice that is text": lambda r: httpx2.Response(200, json={"choices": "none"}),
    "no message": completion(None),  # type: ignore[arg-type]
    "content that is a number": completion({"role": "assistant", "content": 42}),
    "content that is a list": completion({"role": "assistant", "content": ["a", "b"]}),
    "a tool call without a name": completion(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": None, "arguments": "{}"}}
            ],
        }
    ),
}


@pytest.mark.parametrize("body", MALFORMED.values(), ids=MALFORMED.keys())
def test_an_answer_that_is_not_a_chat_completion_ends_the_turn_as_unavailable(assistant_with, body):
    cs, _, turn = assistant_with(body)
    report = turn()
    assert report.ended == "model_unavailable"
    assert report.proposal is None
    [closing] = report.messages
    assert closing["author"] == "application"
    assert "Nothing was changed" in closing["text"]
    assert _events(cs, report.interaction_id)[-1] == "TurnEnded"


def test_arguments_too_large_or_too_deep_are_refused_to_the_model_and_not_sent_back(
    assistant_with,
):
    huge = json.dumps({"note": "x" * 20_000})
    deep = "[" * 100_000 + "]" * 100_000
    nested = json.dumps({"a": json.loads("[" * 900 + "]" * 900)})
    cs, endpoint, turn = assistant_with(calls(huge), calls(deep), calls(nested), SAY_DONE)
    report = turn()
    assert report.ended == "round_limit" or report.ended == "reply"
    results = []
    for raw in endpoint.requests[1:]:
        request = json.loads(raw)
        assert len(raw) < 200_000  # the arguments were not sent back
        results.append(json.loads(request["messages"][-1]["content"]))
    assert results[:3] == [{"error": TOO_LARGE}] * 3
    assert _events(cs, report.interaction_id)[-1] == "TurnEnded"


def test_thousands_of_tool_calls_in_one_answer_are_acted_on_up_to_the_bound(assistant_with):
    cs, endpoint, turn = assistant_with(calls(*["{}"] * 2000), SAY_DONE)
    report = turn()
    assert report.ended == "reply"
    recorded = _events(cs, report.interaction_id).count("ToolCalled")
    assert recorded == MAX_TOOL_CALLS
    second = json.loads(endpoint.requests[1])
    assert len(second["messages"][-MAX_TOOL_CALLS - 1]["tool_calls"]) == MAX_TOOL_CALLS


def test_a_turn_past_the_bound_of_turns_waiting_asks_nothing(assistant_with):
    """A slow endpoint holds each turn a long time: past MAX_CONCURRENT_TURNS waiting at
    once, a turn ends at once instead of holding one more thread of the server (here other
    clubs' turns hold them all, one each: a club holding a turn never takes the reserve)."""
    cs, endpoint, turn = assistant_with(SAY_DONE)
    slots = cs.assistant.slots
    held = [f"club-{i}" for i in range(MAX_CONCURRENT_TURNS)]
    try:
        assert [slots.take(club) for club in held] == [None] * MAX_CONCURRENT_TURNS
        report = turn()
    finally:
        for club in held:
            slots.give_back(club)
    assert report.ended == "model_unavailable"
    assert report.messages[-1]["text"].startswith("The assistant is unavailable right now.")
    assert report.model_calls == 0
    assert endpoint.requests == []
    assert _events(cs, report.interaction_id)[-1] == "TurnEnded"
    assert turn().ended == "reply"  # the slot is back once a turn ends


def test_a_turn_out_of_time_asks_the_model_nothing_more(assistant_with, monkeypatch):
    from countersign.application.assistant import service

    monkeypatch.setattr(service, "TURN_SECONDS", 0.2)

    def slow_read(request: dict[str, Any]) -> httpx2.Response:
        time.sleep(0.3)
        return calls("{}")(request)

    cs, endpoint, turn = assistant_with(slow_read, SAY_DONE)
    report = turn()
    assert report.ended == "model_unavailable"
    assert len(endpoint.requests) == 1
    assert _events(cs, report.interaction_id)[-1] == "TurnEnded"


def _limited(retry_after: str) -> Body:
    return lambda request: httpx2.Response(
        429, headers={"retry-after": retry_after}, json={"error": {"message": "slow down"}}
    )


@pytest.mark.parametrize(
    "retry_after",
    ["120", "Sun, 06 Dec 2099 08:00:00 GMT", "inf"],
    ids=["seconds", "an HTTP date", "infinite"],
)
def test_a_rate_limit_longer_than_the_turn_may_wait_ends_it_without_asking_early(
    assistant_with, retry_after
):
    """The endpoint says when it will answer again; asking before then only meets the limit
    again. A wait past the call's time (5 s here) ends the turn at once, unavailable, with
    nothing changed, and one request sent (it used to wait 20 s, then ask again)."""
    _, endpoint, turn = assistant_with(_limited(retry_after), SAY_DONE)
    report = turn()
    # Counted, not timed: the turn waited for nothing (it used to wait 20 s), whatever the
    # machine's load.
    assert endpoint.waits == []
    assert report.ended == "model_unavailable"
    assert len(endpoint.requests) == 1
    assert "Nothing was changed" in report.messages[-1]["text"]


@pytest.mark.parametrize(
    "retry_after", ["0.05", "Thu, 01 Jan 1970 00:00:00 GMT", "-3", "nan", "soon"]
)
def test_a_short_or_unreadable_rate_limit_wait_is_waited_out_once(assistant_with, retry_after):
    """A wait within the call's time is waited, an HTTP date already past or a negative number
    is no wait, and a value that is neither a number nor a date falls back to the backoff:
    the second request gets the answer."""
    _, endpoint, turn = assistant_with(_limited(retry_after), SAY_DONE)
    report = turn()
    assert report.ended == "reply"
    assert len(endpoint.requests) == 2
    assert len(endpoint.waits) == 1


def test_the_wait_asked_for_is_read_whole_in_both_forms():
    """What the adapter waits is what the endpoint asked, not a cut-down version of it: a
    production call has 30 s, and a wait of 25 s asked for was once shortened to 20 and the
    endpoint asked again early."""
    from countersign.infrastructure.adapters.openai_model import _retry_after

    def limited(value: str) -> openai.RateLimitError:
        request = httpx2.Request("POST", BASE_URL)
        response = httpx2.Response(429, headers={"retry-after": value}, request=request)
        return openai.RateLimitError("slow down", response=response, body=None)

    assert _retry_after(limited("25")) == 25.0
    in_a_minute = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 60))
    assert 58 <= (_retry_after(limited(in_a_minute)) or 0) <= 60
    assert _retry_after(limited("soon")) is None
