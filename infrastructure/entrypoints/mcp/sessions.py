"""The MCP sessions open over streamable HTTP: who opened each, and how many each may hold.

A session is bound to the API token that opened it, for as long as it lives: another token
naming its id is answered as for an unknown session, and a binding is never evicted to make
room (that let one club's token, after enough open-and-close cycles, use another club's
session). A binding goes when its session ends: closed by the client (DELETE), unknown to the
SDK (404), or idle past the SDK's own idle timeout plus a margin, so the SDK has always ended
the session first.

Each token may hold ``per_token`` open sessions and each club ``per_club``, far below the SDK's
own limit for the whole process: one tenant's flood is refused (429) while every other
tenant's ``initialize`` answers normally.
"""

from __future__ import annotations

import os
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from countersign.infrastructure.settings import SettingsError

#: After the SDK's idle timeout, how long the binding is kept before it is forgotten.
IDLE_MARGIN = 1.0


@dataclass(frozen=True)
class SessionLimits:
    """COUNTERSIGN_MCP_SESSIONS_PER_TOKEN, _PER_CLUB and COUNTERSIGN_MCP_SESSION_IDLE."""

    per_token: int = 16
    per_club: int = 64
    idle_seconds: float = 900.0
    """A session with no request under way for this long ends."""

    @classmethod
    def from_env(cls) -> SessionLimits:
        return cls(
            per_token=_positive("COUNTERSIGN_MCP_SESSIONS_PER_TOKEN", cls.per_token),
            per_club=_positive("COUNTERSIGN_MCP_SESSIONS_PER_CLUB", cls.per_club),
            idle_seconds=_positive("COUNTERSIGN_MCP_SESSION_IDLE", int(cls.idle_seconds)),
        )


def _positive(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip() or str(default)
    if not (value.isascii() and value.isdigit()) or int(value) <= 0:
        raise SettingsError(
            f"{name} must be a positive whole number, not {value!r}",
            f"{name} doit être un nombre entier positif, pas {value!r}",
        )
    return int(value)


@dataclass
class _Binding:
    token_id: str
    club: str
    under_way: int = 0
    last_seen: float = 0.0


class SessionBook:
    """Live sessions by id, with their token and club; counts per token and per club (the
    sessions open and those being opened). Used from the event loop's thread only."""

    def __init__(self, limits: SessionLimits, clock: Callable[[], float] = time.monotonic):
        self.limits = limits
        self.clock = clock
        self._sessions: OrderedDict[str, _Binding] = OrderedDict()
        self._tokens: Counter[str] = Counter()
        self._clubs: Counter[str] = Counter()

    def owner(self, session: str) -> str | None:
        """The token id that opened the live session ``session``; None for an unknown id."""
        self._expire()
        binding = self._sessions.get(session)
        return binding.token_id if binding is not None else None

    def reserve(self, token_id: str, club: str) -> bool:
        """Count a session being opened by ``token_id``, if the token and its club may open
        one more; False (nothing counted) if not."""
        self._expire()
        if self._tokens[token_id] >= self.limits.per_token:
            return False
        if self._clubs[club] >= self.limits.per_club:
            return False
        self._tokens[token_id] += 1
        self._clubs[club] += 1
        return True

    def opened(self, session: str, token_id: str, club: str) -> None:
        """The reserved session was opened as ``session`` (the SDK named it)."""
        if session in self._sessions:
            return
        self._sessions[session] = _Binding(token_id, club, last_seen=self.clock())
        self._tokens[token_id] += 1
        self._clubs[club] += 1

    def unreserve(self, token_id: str, club: str) -> None:
        """The opening request is over (opened or not): its reservation goes."""
        self._drop(token_id, club)

    def begin(self, session: str) -> None:
        binding = self._sessions.get(session)
        if binding is not None:
            binding.under_way += 1

    def end(self, session: str, method: str, status: int | None) -> None:
        """A request on ``session`` ended with ``status``: a DELETE the SDK accepted, or an
        id the SDK no longer knows, ends the binding; anything else keeps it alive."""
        binding = self._sessions.get(session)
        if binding is None:
            return
        binding.under_way = max(binding.under_way - 1, 0)
        binding.last_seen = self.clock()
        self._sessions.move_to_end(session)
        if status == 404 or (method == "DELETE" and status is not None and status < 300):
            self.forget(session)

    def forget(self, session: str) -> None:
        binding = self._sessions.pop(session, None)
        if binding is not None:
            self._drop(binding.token_id, binding.club)

    def counts(self) -> dict[str, int]:
        """Open sessions by token id (what an operator, or a test, may look at)."""
        self._expire()
        found: Counter[str] = Counter(b.token_id for b in self._sessions.values())
        return dict(found)

    def __len__(self) -> int:
        self._expire()
        return len(self._sessions)

    def _drop(self, token_id: str, club: str) -> None:
        self._tokens[token_id] -= 1
        self._clubs[club] -= 1
        if self._tokens[token_id] <= 0:
            del self._tokens[token_id]
        if self._clubs[club] <= 0:
            del self._clubs[club]

    def _expire(self) -> None:
        """Forget the sessions the SDK has ended for idleness (oldest activity first)."""
        limit = self.clock() - self.limits.idle_seconds - IDLE_MARGIN
        for session in list(self._sessions):
            binding = self._sessions[session]
            if binding.last_seen > limit:
                return  # ordered by last activity: the rest are younger
            if binding.under_way:
                binding.last_seen = self.clock()  # a request (or a GET stream) is open
                self._sessions.move_to_end(session)
                continue
            self.forget(session)
