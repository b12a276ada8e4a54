"""What every framework's propose tool does, written once and importing no framework.

A ``Proposer`` is bound, when the adapter is built, to one member of one club (the caller)
and to where its requests come from (the origin each proposal records). The model only fills
the contract's small request: it never names the club, the member, the resource or an
amount. Each ``ProposeTool`` is one operation on one resource, also bound when it is built,
with the contract's strict request schema as its input schema: the very schema the section
assistants' models receive. Calling it validates the request strictly (an unknown field such
as ``amount_cents`` is refused), freezes the proposal through ``ProposalAccess.propose`` and
answers with the app-authored card; a refusal answers with the same safe problems the
assistants' models get, for the model to correct its call.

The proposer's ``language`` (``en`` or ``fr``, a setting of the adapter: a framework's tool
call carries no conversation to read one from) is the card's and that of every refusal's
``explain_to_manager``, what the model tells the person it works for, in the words the
section assistants end their turns with (``closing_texts``); the ``error`` the model corrects
its call from is English, as the section assistants' models read it.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from countersign.application.assistant.closing_texts import (
    HELD_FOR_PEOPLE,
    HELD_WHY,
    RATE_LIMITED,
)
from countersign.application.assistant.schemas import function_tool
from countersign.application.assistant.service import NOT_POSSIBLE, refusal
from countersign.application.assistant.tool_arguments import (
    NOT_AN_OBJECT,
    parsed,
    why_unreadable,
)
from countersign.application.authorization import Caller, Credential
from countersign.application.errors import (
    ForbiddenError,
    HeldForPeopleError,
    UnknownOperationError,
    new_correlation_id,
)
from countersign.application.proposal_access import ProposalAccess
from countersign.application.proposal_limit import TooManyProposalsError
from countersign.domain.contracts import REGISTRY
from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.problems import InvalidRequestError
from countersign.domain.errors import NotFoundError
from countersign.domain.times import seconds_wait
from countersign.infrastructure.adapters.agent_frameworks.card_text import card_text

log = logging.getLogger("countersign.agent_frameworks")

#: The languages a proposer's cards and refusals are written in.
LANGUAGES = ("en", "fr")

UNAVAILABLE = "countersign could not take this proposal now; nothing was changed (reference {ref})"
#: ``UNAVAILABLE`` as the manager reads it (``explain_to_manager``), in the proposer's language.
UNAVAILABLE_TO_MANAGER = Localized(
    "countersign could not take this proposal now. Nothing was changed; try again shortly "
    "(reference {ref}).",
    "countersign n'a pas pu prendre cette proposition maintenant. Rien n'a été modifié ; "
    "réessayez bientôt (référence {ref}).",
)
#: The answer to a second propose call of one model response: a proposal ends the turn.
NOT_RUN = "not run: this turn already ended with proposal {proposal_id}"
#: The error of a refusal by COUNTERSIGN_PROPOSAL_LIMIT (``retry_after`` says when to try).
TOO_MANY = "too_many_proposals"
#: How many runs a proposer remembers the last proposing turn of (``Proposer.propose``).
TURNS_KEPT = 256


class ApproverTokenRefusedError(ValueError):
    """Raised when an adapter is given an approver token's caller: an agent must never hold a
    credential that can approve."""

    def __init__(self) -> None:
        super().__init__(
            "this is an approver token, which can approve: an agent may not hold it; issue an"
            " agent token instead (countersign tokens issue without --approver)"
        )


def framework_origin(channel: str, distribution: str) -> dict[str, str]:
    """The origin a framework's proposals record: the channel, the framework's package and
    the version installed here."""
    try:
        version = metadata.version(distribution)
    except metadata.PackageNotFoundError:
        version = "unknown"
    return {"channel": channel, "client": distribution, "client_version": version}


@dataclass(frozen=True)
class ProposeTool:
    """One operation on one resource, as a framework offers it to its model."""

    name: str
    """``propose_`` + the operation's name, as the section assistants call it."""
    description: str
    """The contract request's docstring."""
    parameters: dict[str, Any]
    """The strict JSON schema of the contract's request (closed, every field required)."""
    operation: str
    resource_id: str


@dataclass(frozen=True)
class Proposed:
    """A frozen proposal and its app-authored card."""

    proposal_id: str
    text: str


@dataclass(frozen=True)
class Refused:
    """No proposal: what the model reads to correct its call (JSON), or why it cannot."""

    text: str


@dataclass(frozen=True)
class NotRun(Refused):
    """Not run: another call of the same model response already proposed (``NOT_RUN``)."""


@dataclass(frozen=True)
class TooMany(Refused):
    """Refused by the proposal limit: a retry now cannot help (``retry_after`` says when)."""


class Proposer:
    """Proposes for one caller, from one origin; it cannot approve, decline or execute."""

    def __init__(
        self,
        access: ProposalAccess,
        caller: Caller,
        origin: Mapping[str, str],
        *,
        language: str = "en",
    ) -> None:
        if caller.organization is None:
            raise ValueError("bind the caller's organization: Caller(email, organization)")
        if caller.credential == Credential.APPROVER_TOKEN:
            raise ApproverTokenRefusedError()
        if language not in LANGUAGES:
            # Refused when built: taken, an unknown one read as English, cards and all.
            raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")
        self.access = access
        #: Its proposals are a model's: they never decide (``Caller.as_assistant``).
        self.caller = caller.as_assistant()
        self.origin = dict(origin)
        self.language = language
        #: The most recent runs' last proposing response (``propose``).
        self._turns: OrderedDict[Hashable, _Turn] = OrderedDict()
        self._turns_lock = threading.Lock()

    def tools(self, resources: Mapping[str, str]) -> list[ProposeTool]:
        """One tool per operation kind in ``resources``, each bound to its resource id."""
        tools = []
        for kind, resource_id in resources.items():
            contract = REGISTRY.get(kind)
            if contract is None:
                raise ValueError(f"unknown operation {kind!r}; known: {', '.join(REGISTRY)}")
            spec = function_tool(contract.tool_name, contract.Request)["function"]
            tools.append(
                ProposeTool(
                    name=spec["name"],
                    description=spec["description"],
                    parameters=spec["parameters"],
                    operation=kind,
                    resource_id=str(resource_id),
                )
            )
        return tools

    def propose(
        self, tool: ProposeTool, arguments: Any, turn: tuple[Any, Hashable] | None = None
    ) -> Proposed | Refused:
        """Freeze the model's request (a JSON object, or its text) as a proposal.

        ``turn``: the run (its id, or an object naming it, kept while it is remembered) and
        the model response the call belongs to within it. A proposal ends the turn: of the
        calls of one response, the first that proposes does, and the others answer
        ``NOT_RUN`` naming it (a framework that runs a response's calls side by side froze
        one proposal a call, the later superseding the earlier whose card the run showed)."""
        if turn is None:
            return self._propose(tool, arguments)
        run, step = turn
        key = _run_key(run)
        entry = self._turn_entry(key, run)
        with entry.lock:
            if entry.proposed is not None and entry.step == step:
                return NotRun(json.dumps({"error": NOT_RUN.format(proposal_id=entry.proposed)}))
            answer = self._propose(tool, arguments)
            if isinstance(answer, Proposed):
                entry.step, entry.proposed = step, answer.proposal_id
            return answer

    def _turn_entry(self, key: Hashable, run: Any) -> _Turn:
        """The run's entry (calls of one response wait for each other on its lock, other
        runs do not), remembered among the ``TURNS_KEPT`` most recent; an entry whose lock a
        call holds is never forgotten (its response's other calls must find it)."""
        with self._turns_lock:
            entry = self._turns.get(key)
            if entry is None:
                entry = self._turns[key] = _Turn(run)
            self._turns.move_to_end(key)
            for old in list(self._turns)[: max(0, len(self._turns) - TURNS_KEPT)]:
                if not self._turns[old].lock.locked():
                    del self._turns[old]
            return entry

    def _propose(self, tool: ProposeTool, arguments: Any) -> Proposed | Refused:
        request = _object(arguments)
        if isinstance(request, str):
            return _refused({"error": request})
        try:
            created = self.access.propose(
                self.caller,
                operation=tool.operation,
                resource_id=tool.resource_id,
                request=request,
                origin=self.origin,
            )
            card = self.access.card(created.proposal_id, self.caller, self.language)
        except InvalidRequestError as invalid:
            return _refused(refusal(invalid.problems, invalid.more_problems, self.language))
        except HeldForPeopleError as held:
            why = HELD_WHY[held.reason].text(self.language)
            told = HELD_FOR_PEOPLE.text(self.language, why=why)
            return _refused({"error": str(held), "explain_to_manager": told})
        except (NotFoundError, ForbiddenError, UnknownOperationError):
            return _refused({"error": NOT_POSSIBLE})
        except TooManyProposalsError as limited:
            # COUNTERSIGN_PROPOSAL_LIMIT, as MCP says it: when to try again, in words and
            # seconds (it was "could not take this proposal now", logged as an error).
            log.info("proposing through %s: %s", tool.name, limited)
            return TooMany(
                json.dumps(
                    {
                        "error": TOO_MANY,
                        "message": str(limited),
                        "retry_after": limited.retry_after,
                        "explain_to_manager": RATE_LIMITED.text(
                            self.language, wait=seconds_wait(limited.retry_after, self.language)
                        ),
                    },
                    ensure_ascii=False,
                )
            )
        except Exception:
            # The framework would hand an exception's text to its model or its logs' readers:
            # the model gets a reference, the log the whole story.
            reference = new_correlation_id()
            log.exception("proposing through %s failed, reference %s", tool.name, reference)
            told = UNAVAILABLE_TO_MANAGER.text(self.language, ref=reference)
            return _refused(
                {"error": UNAVAILABLE.format(ref=reference), "explain_to_manager": told}
            )
        text = card_text(card, self.language, tuple(created.supersedes))
        return Proposed(created.proposal_id, text)


class _Turn:
    """One run's last proposing model response (``step``), its proposal, and the lock its
    response's calls take in turn; ``run`` holds the object naming the run while it is
    remembered, so that its ``id`` names no other."""

    __slots__ = ("lock", "proposed", "run", "step")

    def __init__(self, run: Any) -> None:
        self.run = run
        self.step: Hashable = None
        self.proposed: str | None = None
        self.lock = threading.Lock()


def _run_key(run: Any) -> Hashable:
    """A run named by a string (an id) is itself; an object, by its identity."""
    return run if isinstance(run, str) else ("object", id(run))


def _object(arguments: Any) -> dict[str, Any] | str:
    """The request a model's call carries, or why it carries none. Its JSON text is read as the
    section assistants read their models' (``tool_arguments``: bounded in length and depth);
    read with ``json.loads`` alone, text nested thousands deep or a number of thousands of
    digits raised RecursionError or ValueError out of the tool, into the framework's run."""
    if isinstance(arguments, str):
        request = parsed(arguments)
        return request if request is not None else why_unreadable(arguments)
    return arguments if isinstance(arguments, dict) else NOT_AN_OBJECT


def _refused(result: dict[str, Any]) -> Refused:
    return Refused(json.dumps(result, ensure_ascii=False))
