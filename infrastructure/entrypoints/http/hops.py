"""The JSON API's blocking work, off the event loop: one executor of its own, one submission
per hop.

A request's blocking work (the token's lookup, the route's handler, the record of what it
did) runs in a worker thread while the event loop serves other requests. Each trip to a
thread and back is a *hop*, and each costs the server CPU of its own (the hand-over, the
wake-ups, the loop's bookkeeping): the gate and the routes go through ``in_thread`` here, a
``ThreadPoolExecutor`` of the API's own, rather than anyio's ``to_thread`` (a capacity
limiter, a cancel scope and a worker queue on every call). It behaves as anyio's does where
it matters: the request's context variables go with the work (the correlation id of its log
lines, the request's reads), at most ``MAX_THREADS`` run at once (anyio's default too), the
rest queue, and a cancelled request waits for its work to end before the cancellation goes
on, so nothing the request opened is closed under a thread still using it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from contextvars import copy_context
from functools import partial
from typing import ParamSpec, TypeVar

#: As many threads as anyio's default limiter lets run at once.
MAX_THREADS = 40

P = ParamSpec("P")
T = TypeVar("T")

_executor: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def executor() -> ThreadPoolExecutor:
    """The API's worker threads in this process (made on the first hop)."""
    global _executor
    if _executor is None:
        with _lock:
            if _executor is None:
                _executor = ThreadPoolExecutor(MAX_THREADS, thread_name_prefix="countersign-api")
    return _executor


async def in_thread(function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``function(*args, **kwargs)`` in one of the API's threads, with this context's
    variables; its result, or what it raised."""
    work = partial(function, *args, **kwargs)
    done: Future[T] = executor().submit(copy_context().run, work)
    try:
        return await asyncio.wrap_future(done)
    except asyncio.CancelledError:
        await _outlast(done)
        raise


async def _outlast(done: Future[T]) -> None:
    """Wait, through further cancellations, until ``done``'s work has ended (at once if it
    never started: cancelling the request cancelled it)."""
    while not done.done():
        with suppress(asyncio.CancelledError):
            await asyncio.wait((asyncio.wrap_future(done),))
