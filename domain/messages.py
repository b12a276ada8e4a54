"""What people read about a stored proposal, in English or French: its operation's title,
headline and preview rows, and the app-authored message for its outcome. Every operation is
described by its contract; a proposal of an operation no longer registered still shows its
kind and every preview field."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from countersign.domain.contracts import REGISTRY, AnyContract
from countersign.domain.contracts.frozen_models import FROZEN_MODELS
from countersign.domain.contracts.model_calls import validated
from countersign.domain.contracts.presentation import (
    EFFECT_UNAVAILABLE,
    EFFECT_UNCERTAIN,
    LANGUAGES,
    Localized,
    PreviewRow,
    Shown,
    fallback_fields,
    preview_rows,
)
from countersign.domain.handback import (
    AWAITING_APPROVALS,
    OUTCOME_TITLES,
    SUPERSEDED,
    done_text,
    outcome_text,
    outcome_title_keys,
    revision_text_under_title,
)
from countersign.domain.outcomes import RevisionRequired, Succeeded, outcome_from_stored
from countersign.domain.visible_text import plain_name
from pydantic import BaseModel, ValidationError

APPROVED_WITH_PASSKEY = Localized(
    'Approved with a passkey ("{name}")', "Approuvée avec une clé d'accès (« {name} »)"
)
"""How an approval signed with a passkey reads, on cards and in the audit trail."""

POLICY_CHANGED = Localized(
    "The club's approval policy for this operation changed after this was proposed and now "
    "asks more of it. Approving it will not carry it out: it goes back to the requester, to "
    "be proposed again under the policy now in force.",
    "La politique d'approbation du club pour cette opération a changé depuis cette "
    "proposition et en demande désormais davantage. L'approuver ne l'exécutera pas : elle "
    "retournera au demandeur, pour être proposée de nouveau selon la politique en vigueur.",
)
"""What a pending proposal's card says when the policy in force asks more of it than the one
it was frozen under (its ``policy_changed``; application/policy_recheck.py)."""


def outcome_message(
    kind: str, preview: dict[str, Any], stored_outcome: dict[str, Any], language: str = "en"
) -> str:
    """What the browser, the conversation and the CLI say about an outcome. Never the model."""
    return outcome_messages(kind, preview, stored_outcome, (language,))[0]


def outcome_message_under_title(
    kind: str, preview: dict[str, Any], stored_outcome: dict[str, Any], language: str = "en"
) -> str:
    """``outcome_message`` as it reads under ``outcome_title``: a revision's (a decline's
    too) under the general headline, which already says nothing changed, does not say it
    again; under an operation's own headline it does."""
    outcome = outcome_from_stored(stored_outcome)
    if isinstance(outcome, RevisionRequired) and not outcome.already_so:
        contract = REGISTRY.get(kind)
        titles = contract.outcome_titles if contract is not None else {}
        if not any(key in titles for key in outcome_title_keys(outcome)):
            return revision_text_under_title(outcome.reason, language)
    return outcome_message(kind, preview, stored_outcome, language)


def outcome_messages(
    kind: str,
    preview: dict[str, Any],
    stored_outcome: dict[str, Any],
    languages: Sequence[str] = LANGUAGES,
) -> tuple[str, ...]:
    """``outcome_message`` in several languages, validating the stored values once (the
    projections store every language of every outcome)."""
    outcome = outcome_from_stored(stored_outcome)
    contract = REGISTRY.get(kind)
    if not isinstance(outcome, Succeeded):
        uncertain = contract.effect_uncertain if contract is not None else EFFECT_UNCERTAIN
        unavailable = contract.effect_unavailable if contract is not None else EFFECT_UNAVAILABLE
        return tuple(
            outcome_text(outcome, "", language, uncertain, unavailable) for language in languages
        )
    if contract is None:  # an operation no longer registered: its success, in general words
        return tuple(done_text(language) for language in languages)
    valid_preview = contract.Preview.model_validate(preview)
    result = contract.Result.model_validate(outcome.result)
    return tuple(
        outcome_text(outcome, contract.success_text(valid_preview, result, language), language)
        for language in languages
    )


def success_message(
    contract: AnyContract,
    preview: dict[str, Any],
    result: BaseModel,
    language: str = "en",
    *,
    digest: str | None = None,
) -> str | None:
    """``outcome_message`` of the outcome ``Succeeded(result=result)`` just stored, from the
    typed result in hand: the stored outcome and result are not validated again (two of the
    three validations, about two thirds of the text's cost). None when ``contract`` is not
    the one registered for its kind, which ``outcome_message`` would use. ``digest``: the
    contract digest just computed from the stored arguments and ``preview`` and found equal
    to the proposal's; the preview this process froze under it, if remembered, is not
    validated again either (``frozen_models``)."""
    if REGISTRY.get(contract.kind) is not contract:
        return None
    model = None if digest is None else FROZEN_MODELS.preview(digest, contract.Preview)
    if model is None:
        model = validated(contract.Preview, preview)
    return contract.success_text(model, result, language)


def superseded_messages(
    how: str,
    replacing_kind: str,
    replacing_preview: dict[str, Any],
    replacing_id: str,
    languages: Sequence[str] = LANGUAGES,
) -> tuple[str, ...]:
    """What the conversation of a superseded proposal is told: how it was replaced (a key of
    ``domain.handback.SUPERSEDED``) and by which proposal, named by its headline and id."""
    text = SUPERSEDED[how]
    return tuple(
        text.text(
            language,
            headline=proposal_headline(replacing_kind, replacing_preview, language),
            proposal_id=replacing_id,
        )
        for language in languages
    )


def awaiting_approvals_messages(
    approvals: int, required: int, languages: Sequence[str] = LANGUAGES
) -> tuple[str, ...]:
    """ "Approved by 1 of 2": a proposal that has some of the approvals its policy asks for."""
    return tuple(
        AWAITING_APPROVALS.text(language, approvals=approvals, required=required)
        for language in languages
    )


def outcome_title(
    kind: str, preview: dict[str, Any], stored_outcome: dict[str, Any], language: str = "en"
) -> str:
    """The outcome's headline ("Refund sent", "Account credited", "Not executed: the card was
    declined", "Not executed: nothing changed"), in the operation's own words where it has
    them; a success's by what the proposal did (``success_title_key`` of its preview)."""
    outcome = outcome_from_stored(stored_outcome)
    keys = outcome_title_keys(outcome)
    contract = REGISTRY.get(kind)
    titles = contract.outcome_titles if contract is not None else {}
    if contract is not None and isinstance(outcome, Succeeded):
        # A preview that does not read: the operation's plain success headline.
        with suppress(ValidationError):
            keys = (contract.success_title_key(contract.Preview.model_validate(preview)), *keys)
    for key in keys:
        if key in titles:
            return titles[key].text(language)
    return OUTCOME_TITLES[keys[-1]].text(language)


def outcome_title_says_why(kind: str, stored_outcome: dict[str, Any]) -> bool:
    """Whether the outcome's headline already names its reason ("Not executed: the card was
    declined"), so a list need not repeat the reason's sentence beside it."""
    keys = outcome_title_keys(outcome_from_stored(stored_outcome))
    contract = REGISTRY.get(kind)
    return len(keys) > 1 and contract is not None and keys[0] in contract.outcome_titles


def shows_amounts(kind: str, preview: dict[str, Any]) -> bool:
    """Whether the proposal's card shows an amount the application computed (a refund's,
    never a draft's or a move's): only then do its texts say it computed every amount."""
    contract = REGISTRY.get(kind)
    if contract is None:
        return False
    return any(
        field.shown is Shown.MONEY and key in preview
        for key, field in contract.preview_fields.items()
    )


def approve_label(kind: str, preview: dict[str, Any], language: str = "en") -> str | None:
    """What the approve button says; None if the operation is unknown or the preview does not
    read (nobody can approve such a proposal anyway)."""
    contract = REGISTRY.get(kind)
    if contract is None:
        return None
    try:
        return contract.approve_label(contract.Preview.model_validate(preview), language)
    except ValidationError:
        return None


def irreversible_note(kind: str, preview: dict[str, Any], language: str = "en") -> str | None:
    """What approving cannot undo, when the operation asks for a confirmation step."""
    contract = REGISTRY.get(kind)
    if contract is None:
        return None
    try:
        return contract.irreversible_note(contract.Preview.model_validate(preview), language)
    except ValidationError:
        return None


def inbox_reason(kind: str, preview: dict[str, Any], language: str = "en") -> str | None:
    """Why it was proposed, in a few words, if the operation says more than its headline."""
    contract = REGISTRY.get(kind)
    if contract is None:
        return None
    try:
        return contract.inbox_reason(contract.Preview.model_validate(preview), language)
    except ValidationError:
        return None


def operation_title(kind: str, language: str = "en") -> str:
    contract = REGISTRY.get(kind)
    return kind if contract is None else contract.title.text(language)


def proposal_headline(kind: str, preview: dict[str, Any], language: str = "en") -> str:
    """One line that says what the proposal does; its kind if the preview cannot say."""
    contract = REGISTRY.get(kind)
    if contract is None:
        return kind
    try:
        return contract.headline(contract.Preview.model_validate(preview), language)
    except ValidationError:
        return kind


WITHDRAWN = Localized(
    "Withdrawn: {why} Propose it again if it is still wanted.",
    "Retirée\u00a0: {why} Proposez-la de nouveau si elle est toujours souhaitée.",
)
"""What a proposal reads once another proposal's success withdrew it (``Superseded`` with
reason ``withdrawn``); ``{why}`` is the withdrawing operation's own sentence."""

WITHDRAWN_UNKNOWN = Localized(
    "another proposal was carried out and changed what this one relied on.",
    "une autre proposition a été exécutée et a changé ce sur quoi celle-ci reposait.",
)
"""``{why}`` when the withdrawing proposal cannot be described (its operation is unknown)."""


def withdrawn_message(
    by_kind: str, by_preview: dict[str, Any], when: str, language: str = "en"
) -> str:
    """ "Withdrawn: the $48.00 refund approved at 15:03 changed this order's balance. Propose
    it again if it is still wanted.": why a pending proposal can no longer run, in the words
    of the operation whose success withdrew it (``when``: its approval, ``at_time``)."""
    contract = REGISTRY.get(by_kind)
    why = WITHDRAWN_UNKNOWN.text(language)
    if contract is not None:
        try:
            preview = contract.Preview.model_validate(by_preview)
        except ValidationError:
            pass
        else:
            why = contract.withdrawal_text(preview, when, language)
    return WITHDRAWN.text(language, why=why)


WITHDRAWS = Localized(
    "Approving this also withdraws {count} pending proposal on {record}:",
    "Approuver celle-ci retire aussi {count} proposition en attente sur {record}\u00a0:",
)
WITHDRAWS_MANY = Localized(
    "Approving this also withdraws {count} pending proposals on {record}:",
    "Approuver celle-ci retire aussi {count} propositions en attente sur {record}\u00a0:",
)
_THIS_RECORD = Localized("this record", "cet élément")


def withdraws_line(kind: str, count: int, language: str = "en") -> str:
    """The review's warning before approval ("Approving this also withdraws 1 pending
    proposal on this order:"), followed by the list of what it withdraws."""
    contract = REGISTRY.get(kind)
    record = (contract.this_resource if contract is not None else _THIS_RECORD).text(language)
    return (WITHDRAWS if count == 1 else WITHDRAWS_MANY).text(language, count=count, record=record)


def preview_rows_of(kind: str, preview: dict[str, Any], language: str = "en") -> list[PreviewRow]:
    """The preview's labelled rows, in the order its contract declares."""
    contract = REGISTRY.get(kind)
    fields = contract.preview_fields if contract is not None else fallback_fields(preview)
    return preview_rows(fields, preview, language)


_CHANNELS = {"mcp": "MCP"}
_CLIENT_KEYS = ("client", "client_version")
_PROPOSED_THROUGH = Localized("Proposed through {source}", "Proposée via {source}")


def origin_source(origin: dict[str, Any] | None) -> str | None:
    """Where a request came from, in a few words ("MCP (Claude Desktop 1.2)"); None for one
    made in countersign itself (no recorded origin). Each value is shown as ``plain_name``
    keeps it, for an origin an earlier release recorded with more of a client's words."""
    if not origin or not origin.get("channel"):
        return None
    channel = plain_name(str(origin["channel"]))
    if not channel:
        return None
    named = (
        plain_name(str(origin[key])) for key in ("client", "client_version") if origin.get(key)
    )
    client = " ".join(name for name in named if name)
    return _CHANNELS.get(channel, channel) + (f" ({client})" if client else "")


_PROPOSED_BY = Localized("Proposed {how}", "Proposée {how}")
_PROPOSED_BY_THROUGH = Localized("Proposed {how}, through {source}", "Proposée {how}, via {source}")
_BY_ASSISTANT = Localized("by an assistant", "par un assistant")
_BY_TOKEN = {
    "agent_token": Localized(
        "by the agent “{service}” (agent token)", "par l'agent « {service} » (jeton d'agent)"
    ),
    "approver_token": Localized(
        "by the service “{service}” (approver token)",
        "par le service « {service} » (jeton d'approbateur)",
    ),
}


def requester_note(requested_through: str | None, language: str = "en") -> str:
    """What proposed it for the requester, when not they themselves: "by an assistant", "by
    the agent “ops-bot” (agent token)"; "" for the person's own sign-in, and for a proposal
    recorded before this was (None)."""
    if not requested_through or requested_through == "person":  # most: no note, no call
        return ""
    kind, _, service = requested_through.partition(":")
    if kind == "assistant":
        return _BY_ASSISTANT.text(language)
    token = _BY_TOKEN.get(kind)
    return "" if token is None else token.text(language, service=service or "?")


def origin_line(
    origin: dict[str, Any] | None, language: str = "en", requested_through: str | None = None
) -> str | None:
    """The card's line about how it was proposed, beneath who requested it: "Proposed by an
    assistant, through MCP (Claude Desktop 1.2)"; None for a person's own request made in
    countersign itself."""
    source = origin_source(origin)
    how = requester_note(requested_through, language)
    if not how:
        return None if source is None else _PROPOSED_THROUGH.text(language, source=source)
    if source is None:
        return _PROPOSED_BY.text(language, how=how)
    return _PROPOSED_BY_THROUGH.text(language, how=how, source=source)


_LAPSED = {
    "removed": Localized(
        "no longer counts: {who} is no longer a member of the club",
        "ne compte plus : {who} n'est plus membre du club",
    ),
    "lost_permission": Localized(
        "no longer counts: {who} lost the permission to approve {title} ({permission})",
        "ne compte plus : {who} a perdu la permission d'approuver {title} ({permission})",
    ),
    "rejoined": Localized(
        "no longer counts: {who} left the club and joined again since approving",
        "ne compte plus : {who} a quitté le club et l'a rejoint depuis son approbation",
    ),
    "requester_barred": Localized(
        "no longer counts: {who} requested it, and the club's policy no longer lets the "
        "requester approve it",
        "ne compte plus : {who} l'a demandée, et la règle du club ne permet plus à la "
        "personne qui la demande de l'approuver",
    ),
}


def lapsed_approval_message(kind: str, who: str, reason: str, language: str = "en") -> str:
    """Why an earlier approval no longer counts towards the quorum: "no longer counts: Noah
    lost the permission to approve “Refund a missed discount” (orders.refund)"."""
    contract = REGISTRY.get(kind)
    title = f"“{operation_title(kind, language)}”"
    permission = contract.permission if contract is not None else kind
    text = _LAPSED.get(reason, _LAPSED["removed"])
    return text.text(language, who=who, title=title, permission=permission)


_REQUESTER_BARRED = Localized(
    "You requested this proposal, and the club's policy asks another manager to approve it. "
    "You may still decline it.",
    "Vous avez demandé cette proposition, et la règle du club demande qu'un autre "
    "gestionnaire l'approuve. Vous pouvez encore la refuser.",
)


def requester_barred_message(language: str = "en") -> str:
    """What a pending proposal's requester is told when its policy, frozen or in force, does
    not let them approve it (the card's and status's ``requester_barred``, as the review
    page says it)."""
    return _REQUESTER_BARRED.text(language)


_THROUGH_APPROVER_TOKEN = Localized(
    "through the service “{service}” (approver token)",
    "via le service « {service} » (jeton d'approbateur)",
)


def credential_note(credential: str | None, language: str = "en") -> str:
    """How an approval was given, when not by the person themselves: "through the service
    “billing” (approver token)"; "" for a person (or before this was recorded: unknown)."""
    if not credential or credential == "person":  # most approvals: they need no note
        return ""
    kind, _, service = credential.partition(":")
    if kind in ("person", "unknown"):
        return ""
    if kind == "approver_token":
        return _THROUGH_APPROVER_TOKEN.text(language, service=service or "?")
    return f"({kind})"
