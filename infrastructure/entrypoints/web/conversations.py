"""The conversations' pages: a section assistant's chat about one resource (an order, the
broadcast form), sending a message, and opening an order's conversation by its number."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from countersign.application.assistant import sections
from countersign.application.assistant.conversations import MAX_TURNS, ConversationFullError
from countersign.application.assistant.sections.orders import ORDERS
from countersign.application.assistant.service import MAX_MESSAGE
from countersign.application.assistant.turn_limits import TooManyTurnsError
from countersign.application.authorization import Credential
from countersign.domain.club.broadcasts import BroadcastForm
from countersign.domain.errors import NotFoundError
from countersign.domain.times import seconds_wait
from countersign.domain.visible_text import blank
from countersign.infrastructure.entrypoints.web.order_field import back_to_the_field
from countersign.infrastructure.entrypoints.web.site import Site, redirect
from countersign.infrastructure.entrypoints.web.views import (
    chat_address,
    order_view,
    proposal_view,
)
from countersign.infrastructure.entrypoints.web.visits import Visit
from starlette.responses import Response


def token_name(started_through: str | None) -> str | None:
    """The name of the token that started a conversation (``agent_token:ops-bot``), or None
    for the person's own (or one started before that was recorded)."""
    if started_through is None or started_through == Credential.PERSON:
        return None
    return started_through.partition(":")[2] or started_through


#: countersign's own club-wide sections, whose pages show the club (its leagues and form).
_CLUB_WIDE = frozenset(
    str(assistant.section) for assistant in sections.BUILT_IN if assistant.club_resource
)


class ConversationPages:
    """The handlers of the assistants' conversations. Who may talk to which assistant about
    what, and whose conversation is whose, is the application's (``cs.assistant``)."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.cs = site.cs

    def open_order(self, visit: Visit) -> Response:
        """The order assistant for an order number (its reference) or id, in this club. A
        member who may not use the order assistant is told so, whatever the number, before
        any order is looked up: the answer is the same for every number, so no way to learn
        which orders exist (and it points to nothing the member's pages do not show)."""
        user = visit.signed_in
        reference = visit.query("ref").strip()
        order_id: str | None = None
        may_open = self.cs.assistant.may_open(
            organization=user.organization, actor=user.caller, section=ORDERS.section
        )
        if reference and may_open:
            try:
                order_id = self.cs.club.order_id(user.organization, reference)
            except NotFoundError:
                order_id = None
        if order_id is None:
            self.site.flash(visit, "order_missing" if may_open else "order_assistant_not_yours")
            return redirect(back_to_the_field(reference))
        return redirect(f"/chat/{ORDERS.section}/{order_id}")

    def chat(
        self,
        visit: Visit,
        error: str | None = None,
        draft: str = "",
        status: int = 422,
        *,
        send_to_new: bool = False,
    ) -> Response:
        """The conversation's page; with ``error``, said above the message box (which holds
        ``draft``), answered with ``status``. With ``send_to_new`` (the conversation is full)
        the box sends its message to a new conversation."""
        user = visit.signed_in
        wanted = visit.form.get("interaction_id", "") if error else visit.query("interaction")
        conversation = self.cs.assistant.conversation(
            organization=user.organization,
            actor=user.caller,
            section=visit.params.get("section", ""),
            resource_id=visit.params.get("resource_id", ""),
            interaction_id=wanted.strip() or None,
            language=visit.language,
        )
        section, resource_id = conversation.section, conversation.resource_id
        token = token_name(conversation.started_through)
        note = None
        if token is not None:
            # A token's conversation: its words are the token's, never shown as the person's,
            # and the person's message starts a conversation of their own.
            note = visit.t("chat.token_note", name=token)
            send_to_new = True
        elif conversation.expired:
            note = visit.t("chat.expired_note")
        elif conversation.revision is not None:
            said = "chat.already_so_note" if conversation.already_so else "chat.revision_note"
            note = visit.t(said, reason=conversation.revision)
        context: dict[str, Any] = {
            "section": section,
            "resource_id": resource_id,
            "interaction_id": "" if send_to_new else conversation.interaction_id or "",
            "timeline": self._timeline(visit, conversation.timeline),
            "manager_label": (
                visit.t("chat.you") if token is None else visit.t("chat.from_token", name=token)
            ),
            # What the side panel shows: the order, or the club (the leagues, the form). A
            # plug-in's section shows neither: its records are the company's, and the panel
            # is left out rather than show the club's leagues beside an invoice.
            "order": None,
            "club": None,
            "note": note,
            "error": error,
            "draft": draft,
            "max_message": MAX_MESSAGE,
            "action": chat_address(section, conversation.resource_key or resource_id),
            "nav": section,
        }
        if section == ORDERS.section:
            order = self.cs.club.investigate(user.organization, resource_id)
            context["order"] = order_view(
                order,
                visit.t,
                visit.language,
                self.cs.club.refund_days(user.organization, resource_id),
                user.membership.time_zone,
            )
        elif section in _CLUB_WIDE:
            # A club-wide assistant: the leagues, and the broadcast form when it is the subject.
            context["club"] = {"leagues": self.cs.club.leagues(user.organization), "form": None}
            if UUID(resource_id) == BroadcastForm.create_id(user.membership.organization_id):
                context["club"]["form"] = self.cs.club.broadcast_form(
                    user.organization, resource_id
                )
        return self.site.render(
            visit, "chat.html", status if error else 200, script="chat.js", **context
        )

    def send_message(self, visit: Visit) -> Response:
        user = visit.signed_in
        message = visit.form.get("message", "").replace("\r\n", "\n").strip()
        if blank(message):  # nothing written, or only spaces and invisible characters
            return self.chat(visit, error=visit.t("chat.message_required"))
        if len(message) > MAX_MESSAGE:
            error = visit.t("chat.message_too_long", limit=MAX_MESSAGE)
            return self.chat(visit, error=error, draft=message)
        section = visit.params.get("section", "")
        resource_id = visit.params.get("resource_id", "")
        try:
            report = self.cs.assistant.turn(
                organization=user.organization,
                actor=user.caller,
                section=section,
                resource_id=resource_id,
                message=message,
                interaction_id=visit.form.get("interaction_id", "").strip() or None,
                language=visit.language,
            )
        except ConversationFullError:
            # Nothing was recorded: the message stays in the box, which now sends it to a new
            # conversation (the full one is still shown above it).
            error = visit.t("chat.conversation_full", limit=MAX_TURNS)
            return self.chat(visit, error=error, draft=message, status=422, send_to_new=True)
        except TooManyTurnsError as too_many:
            # Nothing was recorded: the message stays in the box, to send once it may.
            wait = seconds_wait(too_many.retry_after, visit.language)
            error = visit.t("chat.too_many_messages", wait=wait)
            page = self.chat(visit, error=error, draft=message, status=429)
            page.headers["Retry-After"] = str(too_many.retry_after)
            return page
        query = urlencode({"interaction": report.interaction_id})
        # Back to the resource as the turn took it: a company key is a key whatever it looks
        # like (one written as a GUID, rewritten as a UUID, named another record: a 404).
        return redirect(f"{chat_address(section, resource_id.strip())}?{query}#latest")

    def _timeline(self, visit: Visit, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The conversation's entries for the page: read tools by their label (those without
        one are not shown), proposals as cards."""
        now = self.cs.clock.now()
        shown: list[dict[str, Any]] = []
        for entry in entries:
            if entry["kind"] == "tool":
                key = f"chat.read.{entry['name']}"
                label = visit.t(key)
                if label != key:
                    shown.append({"kind": "tool", "text": label})
            elif entry["kind"] == "card":
                view = proposal_view(
                    entry["proposal"],
                    visit.t,
                    visit.language,
                    now,
                    visit.signed_in.membership.time_zone,
                )
                shown.append({"kind": "card", "proposal": view})
            else:
                shown.append(dict(entry))
        # The page lands on the turn just taken (#latest): its words at the top of the
        # screen and the answer below them, not the box under the answer.
        said = [entry for entry in shown if entry["kind"] == "manager"]
        if said:
            said[-1]["latest"] = True
        return shown
