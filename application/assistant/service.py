"""One assistant turn: bounded context in, at most one proposal out.

The application writes everything the model reads (instructions, a scoped summary, the safe
revision context of this conversation) and decides what its tool calls mean. Validation
problems go back to the model as tool results, a bounded number of rounds. Once a proposal
exists the turn ends with an app-authored message and the proposal card: the model is not
called again for it.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID, uuid4

from countersign.application.assistant.closing_texts import (
    MESSAGE_BLANK,
    MESSAGE_TOO_LONG,
    WRITE_TO_THE_MANAGER,
    closing_text,
)
from countersign.application.assistant.conversations import (
    ConversationView,
    check_owned,
    club_records,
    conversation_view,
    last_outcome,
    may_add_turn,
    may_continue,
    may_open,
    open_scope,
    section_assistant,
)
from countersign.application.assistant.sections import ASSISTANTS, SectionAssistant
from countersign.application.assistant.tool_arguments import (
    assistant_message,
    parsed,
    why_unreadable,
)
from countersign.application.assistant.turn_limits import TurnLimiter, TurnSlots
from countersign.application.authorization import Caller, token_name
from countersign.application.errors import ForbiddenError, HeldForPeopleError, parse_id
from countersign.application.ports import (
    AggregateStore,
    ChatModel,
    ModelUnavailableError,
    ToolCall,
)
from countersign.application.proposal_limit import (
    ProposalLimiter,
    TooManyProposalsError,
    limited,
)
from countersign.application.proposals import ProposalService
from countersign.application.reports import ProposalCreated, Report
from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.problems import (
    MAX_PROBLEMS,
    InvalidRequestError,
    Problem,
    explain,
)
from countersign.domain.contracts.request_errors import problems_from
from countersign.domain.errors import NotFoundError
from countersign.domain.handback import reason_text
from countersign.domain.interaction import Interaction
from countersign.domain.scope import Scope, Section
from countersign.domain.visible_text import NOTHING_WRITTEN, blank
from pydantic import ValidationError

log = logging.getLogger("countersign.assistant")

MAX_ROUNDS = 4
#: Seconds after which a turn asks the model nothing more (a round already asked ends on its
#: own deadline): four slow rounds would otherwise keep a manager waiting minutes.
TURN_SECONDS = 60.0
CONTEXT_BUDGET = 6000  # characters of application-written context, history included
MAX_MESSAGE = 2000
"""The most characters of a manager's message an assistant reads: a longer one is refused on
every surface (``too_long``), never cut short and sent as if the manager had written that."""
MAX_TOOL_RESULT = 4000
HISTORY_ENTRIES = 6

EXPLAIN = (
    "If you cannot correct the call, tell the manager why with explain_to_manager, in their "
    "words: never show them field names, references or option codes."
)
"""What a refused call's tool result tells the model about the words meant for the manager."""
NOT_POSSIBLE = "this proposal is not possible here"
"""A propose call on something the caller may not see or propose on: one answer for both."""


@dataclass(frozen=True)
class TurnReport(Report):
    """What one turn produced, for the chat UI, the CLI and the API."""

    interaction_id: str
    #: "proposal" | "reply" | "round_limit" | "model_unavailable" | "rate_limited"
    #: | "held_for_people"
    ended: str
    messages: list[dict[str, str]]
    proposal: dict[str, Any] | None
    model_calls: int
    context_chars: int
    app_seconds: float


class AssistantService:
    """Runs section assistants over a ChatModel; only the application executes anything."""

    def __init__(
        self,
        store: AggregateStore,
        proposals: ProposalService,
        model: ChatModel,
        *,
        assistants: dict[Section, SectionAssistant] = ASSISTANTS,
        max_rounds: int = MAX_ROUNDS,
        limiter: ProposalLimiter | None = None,
        slots: TurnSlots | None = None,
        turn_limiter: TurnLimiter | None = None,
    ) -> None:
        self.store = store
        self.proposals = proposals
        self.model = model
        self.assistants = assistants
        #: Each club's records of its club-wide sections, once read: none is ever removed.
        self._club_records: dict[UUID, frozenset[str]] = {}
        self.max_rounds = max_rounds
        #: How many proposals a member may make in a while (None: no limit).
        self.limiter = limiter
        #: The turns waiting on the model: at most MAX_CONCURRENT_TURNS, a club's share, and
        #: the last free ones only for clubs holding none (``TurnSlots``).
        self.slots = slots or TurnSlots()
        #: How many turns a member may start in a while (None: no limit).
        self.turn_limiter = turn_limiter

    def tools_for(self, section: str) -> list[dict[str, Any]]:
        return self._assistant(section).tools()

    def turn(
        self,
        *,
        organization: str,
        actor: str | Caller,
        section: str,
        resource_id: str,
        message: str,
        interaction_id: str | None = None,
        language: str = "en",
    ) -> TurnReport:
        """One manager message and what the application made of it; the application's own
        words, and what a refusal tells the manager, are in ``language`` ("en" or "fr").

        Raises NotFoundError (unknown or foreign organization, resource or conversation, or a
        non-member), ForbiddenError (a member, or a token, without the section's
        permissions), TooManyTurnsError (the member's turn limit leaves no room now) and
        InvalidRequestError (``message``: a message that shows nothing, only spaces or
        invisible characters, or one longer than ``MAX_MESSAGE`` characters, before the model
        is asked or the turn counted); nothing is recorded then.
        """
        if blank(message):
            raise InvalidRequestError.one("message", NOTHING_WRITTEN, MESSAGE_BLANK)
        if len(message) > MAX_MESSAGE:
            most = Localized(f"{MAX_MESSAGE:,}", f"{MAX_MESSAGE:,}".replace(",", " "))
            said = MESSAGE_TOO_LONG.filled(limit=most)
            raise InvalidRequestError.one("message", too_long(len(message)), said)
        started = time.perf_counter()
        model_seconds = 0.0
        caller = Caller.of(actor)
        opened = open_scope(self.store, self.assistants, organization, caller, section, resource_id)
        assistant, scope = opened.assistant, opened.scope
        org, member = opened.organization, opened.member
        interaction = self._interaction(interaction_id, scope, member.email, caller)
        club = str(scope.organization_id)
        if self.turn_limiter is not None:
            # Counted: the turn begins. A token's turns apart from its person's own.
            self.turn_limiter.admit(club, member.email, token_name(caller))
        messages = self._context(assistant, interaction, message, scope, language)
        context_chars = sum(len(str(m.get("content") or "")) for m in messages)
        interaction.hear(message)
        self.store.save(interaction)

        shown: list[dict[str, str]] = []
        refused: list[Problem] = []
        proposal: dict[str, Any] | None = None
        calls, model_seconds = 0, 0.0
        # The model proposes for the member as an assistant: within their token's scopes, and
        # never deciding (it cannot replace a proposal another member made or someone approved).
        proposer = Caller(
            member.email, org.slug, caller.scopes, caller.credential, caller.service
        ).as_assistant()
        turn = _Turn(scope, org.slug, member.email, proposer, interaction, language, refused)
        busy = self.slots.take(club)
        if busy is not None:
            # As an unavailable model: recorded, the model not asked, nothing changed.
            log.warning("assistant busy (%s): turns waiting by club %s", busy, self.slots.held())
            ended = "model_unavailable"
        else:
            try:
                ended, proposal, calls, model_seconds = self._rounds(
                    assistant, messages, turn, shown, started
                )
            finally:
                self.slots.give_back(club)
        closing = closing_text(
            ended, refused, language, turn.limited, proposal, turn.held, busy=busy
        )
        if closing is not None:
            interaction.say(closing, author="application")
            shown.append({"author": "application", "text": closing})
        interaction.end_turn(ended)
        self.store.save(interaction)
        return TurnReport(
            interaction_id=str(interaction.id),
            ended=ended,
            messages=shown,
            proposal=proposal,
            model_calls=calls,
            context_chars=context_chars,
            app_seconds=round(time.perf_counter() - started - model_seconds, 6),
        )

    def _rounds(
        self,
        assistant: SectionAssistant,
        messages: list[dict[str, Any]],
        turn: _Turn,
        shown: list[dict[str, str]],
        started: float,
    ) -> tuple[str, dict[str, Any] | None, int, float]:
        """Ask the model and run its tools, round after round, until it answers, proposes or
        is refused, runs out of rounds or of ``TURN_SECONDS``: how the turn ended, its
        proposal, the model calls made and the seconds they took."""
        interaction = turn.interaction
        ended, proposal, calls, model_seconds = "round_limit", None, 0, 0.0
        for _ in range(self.max_rounds):
            if time.perf_counter() - started > TURN_SECONDS:
                log.warning("turn of interaction %s out of time", interaction.id)
                ended = "model_unavailable"
                break
            calls += 1
            began = time.perf_counter()
            try:
                reply = self.model.complete(messages, assistant.tools())
            except ModelUnavailableError:
                log.warning("model unavailable for interaction %s", interaction.id)
                ended = "model_unavailable"
                break
            finally:
                model_seconds += time.perf_counter() - began
            if not reply.tool_calls:
                text = (reply.text or "").strip()[:MAX_MESSAGE] or "(no answer)"
                interaction.say(text, author="model")
                shown.append({"author": "model", "text": text})
                ended = "reply"
                break
            messages.append(assistant_message(reply))
            proposal = self._run_tools(assistant, reply.tool_calls, turn, messages)
            if proposal is not None:
                ended = "proposal"
                break
            if turn.limited:
                ended = "rate_limited"
                break
            if turn.held:
                ended = "held_for_people"  # what the model would ask next is people's to decide
                break
        return ended, proposal, calls, model_seconds

    # -- tools ----------------------------------------------------------------------------------

    def _run_tools(
        self,
        assistant: SectionAssistant,
        calls: list[ToolCall],
        turn: _Turn,
        messages: list[dict[str, Any]],
    ) -> dict[str, Any] | None:
        scope, interaction = turn.scope, turn.interaction
        for call in calls:
            arguments = parsed(call.arguments)
            read = assistant.read_tool(call.name)
            contract = assistant.contract_for(call.name)
            if arguments is None:
                result: dict[str, Any] = {"error": why_unreadable(call.arguments)}
                outcome = "malformed"
            elif read is not None:
                try:
                    request = read.request.model_validate(arguments)
                except ValidationError as error:
                    problems = problems_from(error, MAX_PROBLEMS)
                    more = error.error_count() - len(problems)
                    result = turn.refusal(problems, more)
                    outcome = "rejected"
                else:
                    result = read.run(request, scope, self.store)
                    outcome = "read"
            elif contract is not None:
                created, result, outcome = self._propose(turn, contract.kind, arguments)
                if created is not None:
                    interaction.record_tool_call(call.name, arguments, "proposed")
                    interaction.link(UUID(created.proposal_id))
                    return created.to_json()
            else:
                result = {
                    "error": f"there is no tool named {call.name[:60]!r} in this conversation"
                }
                outcome = "refused"
            interaction.record_tool_call(call.name, arguments or {}, outcome)
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": json.dumps(result, ensure_ascii=False)[:MAX_TOOL_RESULT],
                }
            )
        return None

    def _propose(
        self, turn: _Turn, operation: str, arguments: dict[str, Any]
    ) -> tuple[ProposalCreated | None, dict[str, Any], str]:
        """The proposal a propose call made, or the tool result and outcome of its refusal."""
        club = str(turn.scope.organization_id)
        try:
            with limited(self.limiter, club, turn.actor, token_name(turn.proposer)):
                created = self.proposals.propose(
                    organization=turn.organization,
                    actor=turn.proposer,
                    operation=operation,
                    # A resource known by a company's key is proposed on by that key (the
                    # contract maps it to the id again); any other by its id.
                    resource_id=turn.scope.key or str(turn.scope.resource_id),
                    request=arguments,
                    interaction_id=str(turn.interaction.id),
                )
        except TooManyProposalsError as too_many:
            turn.limited.append(too_many.retry_after)
            return None, {"error": str(too_many)}, "refused"  # plain words to pass on
        except InvalidRequestError as invalid:
            return None, turn.refusal(invalid.problems, invalid.more_problems), "rejected"
        except HeldForPeopleError as held:
            turn.held.append(held.reason)  # the turn ends there
            return None, {"error": str(held)}, "refused"
        except (NotFoundError, ForbiddenError):
            return None, {"error": NOT_POSSIBLE}, "refused"
        return created, {}, "proposed"

    # -- context --------------------------------------------------------------------------------

    def _context(
        self,
        assistant: SectionAssistant,
        interaction: Interaction,
        message: str,
        scope: Scope,
        language: str = "en",
    ) -> list[dict[str, Any]]:
        """The bounded, application-written context for this turn, in which the model is
        told the language the manager reads."""
        said = WRITE_TO_THE_MANAGER.get(language, WRITE_TO_THE_MANAGER["en"])
        written = f"{assistant.instructions}\n{said}\n\n{assistant.summary(scope, self.store)}"
        revision = self._revision_context(interaction)
        if revision:
            written += "\n\n" + revision
        messages: list[dict[str, Any]] = [{"role": "system", "content": written}]
        budget = CONTEXT_BUDGET - len(written) - min(len(message), MAX_MESSAGE)
        history: list[dict[str, Any]] = []
        for entry in reversed(interaction.transcript[-HISTORY_ENTRIES:]):
            text = entry["text"][:MAX_MESSAGE]
            if len(text) > budget:
                break
            budget -= len(text)
            role = "user" if entry["role"] == "manager" else "assistant"
            history.insert(0, {"role": role, "content": text})
        return [*messages, *history, {"role": "user", "content": message[:MAX_MESSAGE]}]

    def _revision_context(self, interaction: Interaction) -> str:
        """Safe, app-authored context left by this conversation's last proposal."""
        last = last_outcome(self.store, interaction)
        if last is None:
            return ""
        if last.expired:
            return (
                "Context from the application: the last proposal in this conversation expired "
                "before anyone approved it; nothing was executed. Prepare a new proposal only if "
                "the manager asks for one, from freshly read facts."
            )
        assert last.reason is not None
        so = " That is already what it asked for: nothing is left to do." if last.already_so else ""
        return (
            "Context from the application: the last proposal in this conversation was not "
            f"executed. {reason_text(last.reason)}{so} Prepare a new proposal only if the manager "
            "asks for one, from freshly read facts."
        )[:600]

    def _interaction(
        self, interaction_id: str | None, scope: Scope, actor: str, caller: Caller
    ) -> Interaction:
        if interaction_id is None:
            return Interaction(
                id=uuid4(),
                organization_id=scope.organization_id,
                section=str(scope.section),
                resource_id=scope.resource_id,
                manager=actor,
                started_through=caller.recorded_credential,
            )
        interaction = self.store.get(parse_id(interaction_id, "conversation"), Interaction)
        return may_add_turn(may_continue(check_owned(interaction, scope, actor), caller))

    def _assistant(self, section: str) -> SectionAssistant:
        return section_assistant(self.assistants, section)

    # -- reading a conversation -----------------------------------------------------------------

    def may_open(self, *, organization: str, actor: str | Caller, section: str) -> bool:
        """Whether ``actor`` may talk to ``section``'s assistant in ``organization``: asked
        before a resource is looked up for them, so who may not learns nothing of it."""
        return may_open(self.store, self.assistants, organization, Caller.of(actor), section)

    def club_records(self, organization_id: UUID) -> frozenset[str]:
        """The sections with one record per club (its roster, its broadcast form) whose
        record the club holds: only theirs have anything to open. A held one is read once."""
        known = self._club_records.get(organization_id, frozenset())
        held = known | club_records(self.store, self.assistants, organization_id, known)
        self._club_records[organization_id] = held
        return held

    def conversation(
        self,
        *,
        organization: str,
        actor: str | Caller,
        section: str,
        resource_id: str,
        interaction_id: str | None = None,
        language: str = "en",
    ) -> ConversationView:
        """A conversation about a resource as its manager may see it (none yet without
        ``interaction_id``). Raises exactly what ``turn`` raises for the same arguments."""
        opened = open_scope(
            self.store, self.assistants, organization, Caller.of(actor), section, resource_id
        )
        interaction = None
        if interaction_id is not None:
            found = self.store.read(parse_id(interaction_id, "conversation"), Interaction)
            interaction = check_owned(found, opened.scope, opened.member.email)
        return conversation_view(self.store, opened.scope, interaction, language)


@dataclass(frozen=True)
class _Turn:
    """Who a turn's tool calls act for, and what they tell the manager, in which language."""

    scope: Scope
    organization: str
    actor: str
    #: Who the model's propose calls act as: the member, as an assistant (``as_assistant``).
    proposer: Caller
    interaction: Interaction
    language: str
    refused: list[Problem]  # the last refusal's problems, for the closing text
    #: Seconds to wait, when the proposal limit refused a propose call: the turn ends there.
    limited: list[int] = field(default_factory=list)
    #: Why a propose call would have replaced a proposal held for people: the turn ends there.
    held: list[str] = field(default_factory=list)

    def refusal(self, problems: list[Problem], more: int = 0) -> dict[str, Any]:
        """A refused call's tool result (``refusal``), remembered for the closing text."""
        self.refused[:] = problems
        return refusal(problems, more, self.language)


def too_long(length: int) -> str:
    """Why a message of ``length`` characters is refused, and what to do about it."""
    return (
        f"at most {MAX_MESSAGE:,} characters: this message has {length:,}; nothing was sent. "
        "Shorten it, or send it in parts"
    )


def refusal(problems: list[Problem], more: int = 0, language: str = "en") -> dict[str, Any]:
    """A refused call's tool result: the precise problems the model corrects its call from,
    and the same in the manager's words (in ``language``), which it tells them if it cannot.
    The section assistants, the agent-framework adapters and the MCP server's outside agents
    all get exactly this for a refused call."""
    result: dict[str, Any] = {"problems": [p.model_dump() for p in problems]}
    if more > 0:
        result["more_problems"] = more
    result["explain_to_manager"] = explain(problems, language)
    result["note"] = EXPLAIN
    return result
