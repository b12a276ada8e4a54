"""The conversations' pages: a section assistant's chat about one resource (an order, the
broadcast form), sending a message, and opening an order's conversation by its number."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from countersign.application.assistant.sections import ASSISTANTS, SectionAssistant
from countersign.application.assistant.service import MAX_MESSAGE
from countersign.application.club import investigation
from countersign.application.errors import UnknownOperationError
from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.club.orders import Order
from countersign.domain.errors import NotFoundError
from countersign.domain.handback import reason_text
from countersign.domain.interaction import Interaction
from countersign.domain.outcomes import RevisionReason
from countersign.domain.proposal import ProposalStatus
from countersign.domain.scope import Scope, Section
from countersign.infrastructure.entrypoints.web.proposals import proposal_of
from countersign.infrastructure.entrypoints.web.site import (
    PageError,
    Site,
    User,
    Visit,
    redirect,
)
from countersign.infrastructure.entrypoints.web.views import (
    order_view,
    proposal_record,
    proposal_view,
)
from starlette.responses import Response


class ConversationPages:
    """The handlers of the assistants' conversations."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.cs = site.cs

    def open_order(self, visit: Visit) -> Response:
        """The order assistant for an order number (its reference) or id, in this club."""
        user = visit.signed_in
        reference = visit.query("ref").strip()
        order_id: UUID | None = None
        if reference:
            try:
                order_id = UUID(reference)
            except ValueError:
                order_id = Order.create_id(user.organization.id, reference)
            try:
                order = self.cs.store.read(order_id, Order)
            except NotFoundError:
                order_id = None
            else:
                if order.organization_id != user.organization.id:
                    order_id = None
        if order_id is None:
            self.site.flash(visit, "order_missing")
            return redirect("/")
        return redirect(f"/chat/{Section.ORDERS}/{order_id}")

    def chat(self, visit: Visit, error: str | None = None, draft: str = "") -> Response:
        user = visit.signed_in
        assistant, scope = self._scope(visit)
        interaction: Interaction | None = None
        wanted = visit.form.get("interaction_id") if error else visit.query("interaction")
        if wanted:
            interaction = self._interaction(wanted, scope, user)
        timeline = self._timeline(visit, interaction) if interaction is not None else []
        section = str(scope.section)
        context: dict[str, Any] = {
            "section": section,
            "resource_id": str(scope.resource_id),
            "interaction_id": str(interaction.id) if interaction is not None else "",
            "timeline": timeline,
            "order": None,
            "club": None,
            "note": self._revision_note(visit, interaction),
            "error": error,
            "draft": draft,
            "max_message": MAX_MESSAGE,
            "action": f"/chat/{section}/{scope.resource_id}",
            "nav": "email" if assistant.section == Section.EMAIL_BROADCASTS else None,
        }
        if assistant.section == Section.ORDERS:
            order = self.cs.club.order(user.organization.slug, str(scope.resource_id))
            context["order"] = order_view(investigation(order), visit.t)
        else:
            form = self.cs.store.read(scope.resource_id, BroadcastForm)
            context["club"] = {
                "leagues": self.cs.club.leagues(user.organization.slug),
                "subject": form.subject,
                "body": form.body,
            }
        return self.site.render(visit, "chat.html", 422 if error else 200, **context)

    def send_message(self, visit: Visit) -> Response:
        user = visit.signed_in
        _, scope = self._scope(visit)
        message = visit.form.get("message", "").replace("\r\n", "\n").strip()
        wanted = visit.form.get("interaction_id", "").strip() or None
        if wanted:
            self._interaction(wanted, scope, user)  # a foreign conversation is a 404
        if not message:
            return self.chat(visit, error=visit.t("chat.message_required"))
        if len(message) > MAX_MESSAGE:
            error = visit.t("chat.message_too_long", limit=MAX_MESSAGE)
            return self.chat(visit, error=error, draft=message)
        try:
            report = self.cs.assistant.turn(
                organization=user.organization.slug,
                actor=user.email,
                section=str(scope.section),
                resource_id=str(scope.resource_id),
                message=message,
                interaction_id=wanted,
            )
        except UnknownOperationError:
            raise PageError("not_found", 404) from None
        query = urlencode({"interaction": report.interaction_id})
        return redirect(f"/chat/{scope.section}/{scope.resource_id}?{query}#latest")

    def _scope(self, visit: Visit) -> tuple[SectionAssistant, Scope]:
        """The section's assistant and a resource of the person's club; else the 404 page."""
        user = visit.signed_in
        try:
            assistant = ASSISTANTS[Section(visit.params.get("section", ""))]
            resource_id = UUID(visit.params.get("resource_id", ""))
        except (ValueError, KeyError):
            raise PageError("not_found", 404) from None
        scope = Scope(user.organization.id, assistant.section, resource_id)
        for contract in assistant.contracts:
            contract.load(scope, self.cs.store)  # NotFoundError unless it is this club's
        if not all(user.may(contract.permission) for contract in assistant.contracts):
            raise PageError("forbidden", 403)
        return assistant, scope

    def _interaction(self, wanted: str, scope: Scope, user: User) -> Interaction:
        try:
            interaction = self.cs.store.read(UUID(wanted.strip()), Interaction)
        except ValueError:
            raise PageError("not_found", 404) from None
        same = (
            interaction.organization_id == scope.organization_id
            and interaction.section == str(scope.section)
            and interaction.resource_id == scope.resource_id
            and interaction.manager == user.email
        )
        if not same:
            raise PageError("not_found", 404)
        return interaction

    def _timeline(self, visit: Visit, interaction: Interaction) -> list[dict[str, Any]]:
        """The conversation in order, each proposal card after the message that presents it."""
        now = self.cs.proposals.clock.now()
        entries: list[dict[str, Any]] = []
        cards: list[dict[str, Any]] = []
        for event in self.cs.store.history(interaction.id):
            fields = event.fields
            if event.type == "ManagerMessaged":
                entries.append({"kind": "manager", "text": str(fields.get("text", ""))})
            elif event.type == "AssistantReplied":
                author = "application" if fields.get("author") == "application" else "model"
                entries.append({"kind": author, "text": str(fields.get("text", ""))})
                if author == "application":
                    entries += cards
                    cards = []
            elif event.type == "ToolCalled" and fields.get("outcome") == "read":
                key = f"chat.read.{fields.get('name', '')}"
                label = visit.t(key)
                if label != key:
                    entries.append({"kind": "tool", "text": label})
            elif event.type == "ProposalCreated":
                proposal = proposal_of(self.cs, visit.signed_in, str(fields.get("proposal_id", "")))
                if proposal is not None:
                    view = proposal_view(proposal_record(proposal), visit.t, visit.language, now)
                    cards.append({"kind": "card", "proposal": view})
            elif event.type == "TurnEnded":
                entries += cards
                cards = []
        return entries + cards

    def _revision_note(self, visit: Visit, interaction: Interaction | None) -> str | None:
        """The application's word on the conversation's last proposal, if it was not executed."""
        if interaction is None or interaction.last_proposal_id is None:
            return None
        proposal = proposal_of(self.cs, visit.signed_in, interaction.last_proposal_id)
        if proposal is None:
            return None
        if proposal.status == ProposalStatus.EXPIRED:
            return visit.t("chat.expired_note")
        outcome = proposal.outcome or {}
        if outcome.get("kind") != "revision_required":
            return None
        reason = RevisionReason.model_validate(outcome["reason"])
        return visit.t("chat.revision_note", reason=reason_text(reason, visit.language))
