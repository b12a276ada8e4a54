"""The ChatModel port over the ``openai`` client: any OpenAI-compatible endpoint.

Retries are tenacity's, and only for transient failures: connection errors and timeouts,
rate limits (honouring ``Retry-After``) and 5xx answers, with jittered exponential backoff and
a bounded total time. The client's own retries are off, so there is one retry policy.
Anything else (a 4xx, a malformed answer) is not retried.
"""

from __future__ import annotations

import email.utils
import logging
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import openai
from countersign.application.ports import ModelReply, ModelUnavailableError, ToolCall
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_before_delay,
    wait_exponential_jitter,
)

log = logging.getLogger("countersign.model")


def _transient(error: BaseException) -> bool:
    if isinstance(error, openai.APIConnectionError | openai.RateLimitError):
        return True  # APITimeoutError is an APIConnectionError
    return isinstance(error, openai.APIStatusError) and error.status_code >= 500


def _retry_after(error: BaseException | None) -> float | None:
    """The wait the server asked for, in seconds: ``Retry-After`` as a number of seconds or
    as an HTTP date (RFC 9110); None when it sent none, or nothing that reads as either.

    Not shortened: a wait longer than what is left of the call's time makes tenacity's
    ``stop_before_delay`` give up at once (the turn ends "unavailable, nothing was changed")
    rather than ask again before the server said it would answer."""
    if not isinstance(error, openai.APIStatusError):
        return None
    header = error.response.headers.get("retry-after")
    if header is None:
        return None
    try:
        seconds = float(header)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(header)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:  # "-0000": a time in UTC, said without saying so
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(tz=UTC)).total_seconds()
    if math.isnan(seconds):
        return None
    return max(seconds, 0.0)  # a date past, or a negative number: now


class _Wait:
    """Jittered exponential backoff, or the server's Retry-After when it sent one."""

    def __init__(self, initial: float, maximum: float) -> None:
        self.backoff = wait_exponential_jitter(multiplier=initial, max=maximum, jitter=initial)

    def __call__(self, state: RetryCallState) -> float:
        outcome = state.outcome
        error = outcome.exception() if outcome is not None else None
        told = _retry_after(error)
        return told if told is not None else float(self.backoff(state))


class OpenAIChatModel:
    """Chat completions with tools, strict schemas, bounded retries."""

    def __init__(
        self,
        client: openai.OpenAI,
        model: str,
        *,
        attempts: int = 4,
        total_seconds: float = 30.0,
        initial_wait: float = 0.5,
        max_wait: float = 8.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """``sleep`` waits between attempts (a test counts the waits it is asked for)."""
        self.client = client
        self.model = model
        self.retrying = Retrying(
            retry=retry_if_exception(_transient),
            # stop_before_delay also counts the wait before the next attempt (Retry-After).
            stop=stop_after_attempt(attempts) | stop_before_delay(total_seconds),
            wait=_Wait(initial_wait, max_wait),
            sleep=sleep,
            reraise=True,
            before_sleep=lambda state: log.warning(
                "model call failed (%s); retrying",
                type(state.outcome.exception()).__name__ if state.outcome else "?",
            ),
        )

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply:
        try:
            response = self.retrying(
                self.client.chat.completions.create,
                model=self.model,
                messages=messages,
                tools=tools,
                parallel_tool_calls=False,
            )
        except (openai.OpenAIError, ValueError) as error:  # ValueError: a body that is no JSON
            log.error("model unavailable: %s", type(error).__name__)
            raise ModelUnavailableError(type(error).__name__) from None
        try:
            return _reply(response)
        except _MALFORMED as error:
            # The client builds its objects without checking them: an HTML page, a choice that
            # is text, a name that is null or content that is a number arrive as they are.
            log.error("model answer malformed: %s", type(error).__name__)
            raise ModelUnavailableError("the model's answer is not a chat completion") from None


#: What reading an answer of the wrong shape raises (``_reply``).
_MALFORMED = (AttributeError, TypeError, IndexError, KeyError, ValueError)
#: Tool calls acted on in one answer; ``parallel_tool_calls=False`` asks for one, and a model
#: that sends thousands would have each recorded, shown and sent back to it.
MAX_TOOL_CALLS = 8


def _reply(response: Any) -> ModelReply:
    """The answer's text and function calls, each of the type the port says; ``_MALFORMED``
    for anything else."""
    if not response.choices:
        raise ValueError("the model returned no choice")
    message = response.choices[0].message
    text = message.content
    if text is not None and type(text) is not str:
        raise TypeError("the answer's content is not text")
    if text is not None:
        _unicode(text)
        text = _without_nul(text)
    calls = []
    for call in message.tool_calls or []:
        function: Any = getattr(call, "function", None)
        if function is None:  # custom (non-function) tool calls are not ours
            continue
        fields = (call.id, function.name, function.arguments)
        if not all(type(field) is str for field in fields):
            raise TypeError("a tool call's id, name or arguments is not text")
        for field in fields:
            _unicode(field)
        if "\x00" in call.id or "\x00" in function.name:
            # No tool's name or call's id holds one, and no database stores it (its arguments
            # holding one are refused by ``untrusted_json``, and the model told).
            raise ValueError("a tool call's id or name holds a NUL")
        calls.append(ToolCall(id=call.id, name=function.name, arguments=function.arguments))
    if len(calls) > MAX_TOOL_CALLS:
        log.warning(
            "model sent %d tool calls in one answer; acting on %d", len(calls), MAX_TOOL_CALLS
        )
        del calls[MAX_TOOL_CALLS:]
    return ModelReply(text=text, tool_calls=calls)


def _unicode(text: str) -> None:
    """UnicodeEncodeError (a ValueError: ``_MALFORMED``) for text no UTF-8 can hold: a lone
    surrogate, which the client reads from a ``\\ud800`` escape in the endpoint's JSON. Kept,
    it failed the conversation's save, and the turn answered an internal error."""
    text.encode("utf-8")


def _without_nul(text: str) -> str:
    """The answer's prose without its NUL characters, which no database stores
    (``storable_text``): kept, they were recorded in the conversation's events as they came.
    Removed rather than refused as a lone surrogate is: a NUL has no glyph and no meaning in
    prose, and refusing the answer ended the turn "the assistant is unavailable" over a
    character nobody sees, while a lone surrogate is half a character whose meaning is lost.
    Tool-call arguments holding one are still refused (``untrusted_json``: the model is told)."""
    return text.replace("\x00", "") if "\x00" in text else text
