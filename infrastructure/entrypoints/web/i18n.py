"""The browser's words in English and French, and which language a request gets.

Outcome messages are not here: they are the application's own texts from
``domain.messages.outcome_message`` and ``domain.handback``. Nor is anything about one
operation: its title, headline, preview labels and edit-form labels are its contract's
(``preview_fields``, ``request_fields``).
Nor anything about one section: its names, chat texts and read-tool labels are its
assistant's (``SectionTexts``), added to the catalogue below (``section.<name>``,
``chat.title.<name>``, ``chat.lead.<name>``, ``chat.placeholder.<name>``, ``start.<name>``,
``chat.read.<tool>``). This catalogue holds only the pages' own labels, headings and notices.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from countersign.application.assistant.sections import ASSISTANTS
from countersign.domain.contracts.presentation import Localized

LANGUAGES = ("en", "fr")
DEFAULT_LANGUAGE = "en"

TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "app.tagline": "AI assistants propose. You approve. The club's system executes.",
        "nav.inbox": "Inbox",
        "nav.sign_out": "Sign out",
        "nav.sign_out_everywhere": "Sign out everywhere (every device and browser)",
        "nav.language": "Language",
        "nav.skip": "Skip to the content",
        "sign_in.title": "Sign in",
        "sign_in.lead": "Sign in to review and approve what your club's assistants propose.",
        "sign_in.email": "Email",
        "sign_in.password": "Password",
        "sign_in.submit": "Sign in",
        "sign_in.failed": "That email and password do not match. Try again.",
        "sign_in.throttled": (
            "Too many failed sign-in attempts. Wait about {minutes} minutes, then try again."
        ),
        "sign_in.throttled_one": (
            "Too many failed sign-in attempts. Wait about a minute, then try again."
        ),
        "sign_in.signed_out": "You are signed out.",
        "sign_in.signed_out_everywhere": "You are signed out everywhere, on every device.",
        "sign_in.choose_club": "Choose a club",
        "sign_in.choose_lead": "Your account belongs to more than one club. Which one?",
        "sign_in.expired": "Your session ended. Sign in again.",
        "sign_in.session_ended": (
            "Your session ended: signed out on every device, a new password, or unused for too "
            "long. Sign in again to continue."
        ),
        "inbox.title": "Inbox",
        "inbox.lead": (
            "What the club's assistants propose, and what needs attention after a decision. "
            "Nothing changes until someone approves."
        ),
        "inbox.empty": "Nothing awaits approval. Proposals from the assistants appear here.",
        "inbox.awaiting": "Awaiting your decision",
        "inbox.empty_waiting": (
            "Nothing else awaits your decision: what you approved is below, waiting on others."
        ),
        "inbox.waiting": "Waiting on others",
        "inbox.waiting_lead": (
            "You approved these; each needs another manager's approval before anything runs."
        ),
        "inbox.you_approved": "You approved it",
        "inbox.attention": "Needs attention",
        "inbox.attention_lead": (
            "Being checked with a provider, failed, or not executed. Each leaves this list once "
            "it settles, or once a newer proposal follows it in the same conversation."
        ),
        "inbox.attention_empty": "Nothing needs attention.",
        "inbox.attention_more": "{count} more.",
        "inbox.views": "Which proposals",
        "inbox.sections": "Sections",
        "inbox.pages": "Pages",
        "inbox.open_view": "To do",
        "inbox.recent_view": "Recent outcomes",
        "inbox.recent_title": "Recent outcomes",
        "inbox.recent_lead": "Every decided proposal, the most recently changed first.",
        "inbox.recent_count": "{total} decided",
        "inbox.recent_empty": "No proposal has been decided yet.",
        "inbox.reference": "reference {reference}",
        "inbox.updated": "Last change {when}",
        "nav.attention": "Needs attention",
        "nav.awaiting_count": "{count} awaiting your decision",
        "nav.attention_count": "{count} needing attention",
        "inbox.no_sections": "Your role does not include approving any kind of proposal.",
        "inbox.all": "All",
        "inbox.requested_by": "Requested by {who}",
        "inbox.page": "Page {page} of {pages}",
        "inbox.newer": "Newer",
        "inbox.older": "Older",
        "start.title": "Start a conversation",
        "start.order_label": "Order number",
        "start.order_hint": "The order reference from the registration system, or its id.",
        "start.order_submit": "Open the order assistant",
        "chat.you": "You",
        "chat.assistant": "Assistant",
        "chat.application": "countersign",
        "chat.message": "Your message",
        "chat.send": "Send",
        "chat.busy": "The assistant is reading…",
        "chat.empty": "No messages yet. Say what you need; the assistant answers here.",
        "chat.message_required": "Write a message first.",
        "chat.message_too_long": "Keep the message under {limit} characters.",
        "chat.new": "Start a new conversation",
        "updates.still": "Not settled yet. Check again for the latest.",
        "updates.running": "This page checks again every {seconds} seconds.",
        "updates.paused": "Updates paused.",
        "updates.pause": "Pause updates",
        "updates.resume": "Resume updates",
        "updates.now": "Check now",
        "chat.revision_note": "The last proposal was not executed: {reason}",
        "chat.expired_note": "The last proposal expired before anyone approved it.",
        "order.title": "Order",
        "order.participant": "Participant",
        "order.total": "Order total",
        "order.registration": "Registration",
        "order.registration_active": "Active",
        "order.registration_in": "Active · a spot in {league}",
        "order.registration_cancelled": "Cancelled",
        "order.items": "Items",
        "order.discounts": "Discounts",
        "order.payments": "Payments",
        "order.refunds": "Refunds",
        "order.note": "Note on the order",
        "order.applied": "applied",
        "order.not_applied": "not applied",
        "order.refunded_on": "Refunded {amount} on {day}",
        "order.refunded": "Refunded {amount}",
        "order.refundable": "{amount} refundable",
        "club.leagues": "Leagues",
        "club.members": "{count} members",
        "club.form": "Broadcast form now",
        "club.form_empty": "The broadcast form is empty.",
        "card.review": "Review and decide",
        "card.open": "Open",
        "review.title": "Review the proposal",
        "review.lead": (
            "This is exactly what approval will do. The application computed every amount; "
            "it rechecks everything before executing."
        ),
        "review.lead_no_amounts": (
            "This is exactly what approval will do. The application rechecks everything before "
            "executing."
        ),
        "review.approve": "Approve",
        "review.decline": "Decline",
        "review.decline_note": "Note for the record (optional)",
        "review.decline_hint": "Why you are declining, for the conversation and the audit trail.",
        "review.requested_by": "Requested by",
        "review.proposed_at": "Proposed",
        "review.expires_at": "Expires",
        "review.approved_by": "Approved by",
        "review.declined_by": "Declined by",
        "review.decline_note_shown": "Decline note",
        "review.reference": "Reference",
        "review.outcome": "Outcome: {title}",
        "refund.card": "To the card",
        "refund.account_credit": "Account credit",
        "refund.manual": "Recorded by hand",
        "review.conversation": "Back to the conversation",
        "review.status_page": "Follow the check",
        "review.updates_itself": (
            "This page updates by itself until the check is done; the outcome also stays in "
            "the inbox under Needs attention."
        ),
        "review.revise": "Ask the assistant for a new proposal",
        "review.support_reference": "Reference for support:",
        "review.requested_by_assistant": "The assistant, on behalf of {who}",
        "review.confirm_hint": "You will confirm once more: this cannot be undone.",
        "confirm.title": "Confirm once more",
        "confirm.cannot_undo": "This cannot be undone",
        "confirm.yes": "Yes: {action}",
        "confirm.cancel": "Not now, back to the proposal",
        "confirm.back": "Back to the proposal",
        "review.forbidden_kind": (
            "Your role does not allow approving this kind of proposal. Ask a manager."
        ),
        "review.expired_note": "This proposal expired before anyone approved it. Nothing changed.",
        "review.pending_note": "Waiting for your decision. Nothing has changed yet.",
        "review.executing_note": (
            "Approved and executing. Refresh in a moment to see the outcome."
        ),
        "review.executing_overdue": (
            "Approved, but no outcome has been recorded: the process carrying it out seems to "
            "have stopped."
        ),
        "notice.executed": "Approved. Here is what happened.",
        "notice.executed.succeeded": "Approved and done. Here is what happened.",
        "notice.executed.revision_required": (
            "Approved, but not executed: nothing changed. Here is why."
        ),
        "notice.executed.needs_reconciliation": (
            "Approved, but the provider has not confirmed it yet. Do not do it again: this "
            "page says when it settles."
        ),
        "notice.executed.terminal_failure": (
            "Approved, but it failed: nothing changed. Give support the reference below."
        ),
        "notice.executed.other": "Approved. Here is what happened.",
        "notice.already_completed": (
            "This proposal was already approved. This is its stored outcome; nothing was "
            "executed again."
        ),
        "notice.declined": "Declined. Nothing was changed.",
        "notice.not_pending": "This proposal was declined earlier; it can no longer be approved.",
        "notice.expired": "This proposal expired; it can no longer be approved.",
        "notice.in_progress": (
            "Someone else's approval of this proposal is executing. Refresh in a moment."
        ),
        "notice.forbidden": "Your role does not allow approving this kind of proposal.",
        "notice.busy": "The records this proposal acts on are busy. Try again in a moment.",
        "notice.order_missing": "There is no order with that number in this club.",
        "notice.redelivered": "Put back in line: the next delivery pass sends it again.",
        "notice.nothing_redelivered": "There was no such dead letter; nothing was changed.",
        "nav.webhooks": "Webhooks",
        "webhooks.title": "Webhooks",
        "webhooks.lead": (
            "Where the club's notifications are posted: a proposal awaiting approval, a result "
            "being checked with a provider, a failure. Each is signed, and sent until the "
            "receiver accepts it."
        ),
        "webhooks.endpoints": "Endpoints",
        "webhooks.no_endpoints": "The club has no webhook endpoints.",
        "webhooks.added_by": "Added by {who}",
        "webhooks.added_by_operator": "Added by the operator, from the command line",
        "webhooks.how_to_add": (
            "Endpoints can also be added with 'countersign webhooks add' or the API."
        ),
        "webhooks.state.new": "No attempts yet",
        "webhooks.state.healthy": "Delivering",
        "webhooks.state.failing": "Failing",
        "webhooks.last_attempt": "Last attempt",
        "webhooks.last_attempt_was": "{result} · {when}",
        "webhooks.no_attempt": "None yet",
        "webhooks.error_rate": "Error rate, last 24 h",
        "webhooks.error_rate_value": "{percent}% · {failed} failed of {count}",
        "webhooks.no_recent_attempts": "No attempts in the last 24 h",
        "webhooks.next_retry": "Next retry",
        "webhooks.next_retry_value": "{when} · {count} to try again",
        "webhooks.no_retry": "None: nothing is waiting to be tried again",
        "webhooks.remove": "Remove",
        "webhooks.remove_hint": (
            "It stops receiving the club's notifications at once, and what is still on its way "
            "to it is not sent. Adding it again makes a new signing secret."
        ),
        "webhooks.remove_confirm": "Remove {url}",
        "webhooks.add": "Add an endpoint",
        "webhooks.url": "Endpoint URL",
        "webhooks.url_hint": (
            "The https:// address of your receiver; only public addresses are accepted. Its "
            "signing secret is shown once, after it is added."
        ),
        "webhooks.add_submit": "Add the endpoint",
        "webhooks.added_title": "Endpoint added",
        "webhooks.secret_label": "Signing secret (shown once)",
        "webhooks.secret_hint": (
            "Copy it into your receiver now: it checks each notification's signature with it, "
            "and this page will not show it again."
        ),
        "webhooks.error.empty": "Write the endpoint's URL.",
        "webhooks.error.too_long": "This URL is too long: at most 2,000 characters.",
        "webhooks.error.spaces": "A URL cannot contain spaces or control characters.",
        "webhooks.error.characters": (
            'This URL holds characters a URL cannot hold unencoded (< > " { } | \\ ^ `).'
        ),
        "webhooks.error.invalid": "This is not a valid URL.",
        "webhooks.error.scheme": "The URL must start with https:// (or http://).",
        "webhooks.error.no_host": "The URL has no host name.",
        "webhooks.error.credentials": (
            "The URL must not carry a user name or password: they would be kept in the "
            "club's records."
        ),
        "webhooks.error.fragment": "The URL must not end with a #fragment.",
        "webhooks.error.port": "The URL's port is not valid.",
        "webhooks.error.too_many": (
            "The club already has 10 endpoints, the most it may have. Remove one first."
        ),
        "webhooks.error.internal_address": (
            "This URL leads to a private, loopback or otherwise internal address. Webhooks "
            "are posted to public addresses only."
        ),
        "webhooks.error.duplicate": "This URL is already one of the club's endpoints.",
        "notice.endpoint_removed": "The endpoint was removed: it receives nothing more.",
        "notice.endpoint_not_removed": "There was no such endpoint; nothing was changed.",
        "webhooks.dead_letters": "Dead letters",
        "webhooks.dead_lead": (
            "Notifications that could not be delivered after every try. Redeliver one once "
            "its receiver works again."
        ),
        "webhooks.no_dead_letters": "No dead letters: everything was delivered or is on its way.",
        "webhooks.no_dead_letters_failing": (
            "No dead letters yet, but deliveries are failing: {count} will be tried again, and "
            "each becomes a dead letter here after its last try."
        ),
        "webhooks.dead": "Not delivered",
        "webhooks.redeliver": "Redeliver",
        "webhooks.redeliver_all": "Redeliver all",
        "webhooks.last_answer": "Last answer",
        "webhooks.attempts": "tries: {count}",
        "webhooks.event_id": "Event id",
        "webhooks.result.delivered": "delivered",
        "webhooks.result.answered": "failed: the endpoint answered {code}",
        "webhooks.result.could_not_connect": "failed: could not connect",
        "webhooks.result.endpoint_removed": "failed: the endpoint was removed",
        "webhooks.result.skipped": "not sent: the proposal no longer awaits approval",
        "webhooks.channel.webhook": "Webhook",
        "webhooks.channel.email": "E-mail",
        "webhooks.type.awaiting_approval": "Awaiting approval",
        "webhooks.type.needs_reconciliation": "Being checked with the provider",
        "webhooks.type.failed": "Failed",
        "nav.signed_in_as": "Signed in as {name} ({email}) at {club}",
        "status.title": "Where it stands",
        "status.settled": "Settled. This is the recorded outcome; nothing more will happen.",
        "status.not_reconciling": "Nothing waits on a provider for this proposal.",
        "status.back": "Back to the proposal",
        "status.checked": "Checked",
        "settling.waiting": "Waiting since {since}, {waited}.",
        "settling.unattended": (
            "Nothing is settling it: an operator must start the worker (countersign worker), "
            "which asks the provider what happened. Until then, do not do it again another "
            "way: it may already have happened."
        ),
        "settling.unattended_short": "Nothing is settling it: an operator must start the worker.",
        "settling.provider_silent": (
            "The provider has not confirmed it yet: countersign asks again every {seconds} "
            "seconds. Do not do it again another way: it may already have happened."
        ),
        "state.pending": "Awaiting approval",
        "state.executing": "Executing",
        "state.reconciling": "Confirming with the provider",
        "state.succeeded": "Succeeded",
        "state.revision_required": "Not executed",
        "state.failed": "Failed",
        "state.declined": "Declined",
        "state.expired": "Expired",
        "error.not_found.title": "Not found",
        "error.not_found.text": (
            "There is nothing here in your club. The link may be wrong, or it belongs to "
            "another account."
        ),
        "error.method_not_allowed.title": "This page cannot do that",
        "error.method_not_allowed.text": (
            "This address does not accept that kind of request. Open it from a link or a "
            "button on the site."
        ),
        "error.bad_request.title": "This request cannot be read",
        "error.bad_request.text": "The browser sent something this page cannot read. Try again.",
        "error.forbidden.title": "Not allowed",
        "error.forbidden.text": "Your role in this club does not allow this.",
        "error.csrf.title": "This form expired",
        "error.csrf.text": (
            "For your safety the form was not accepted. Go back, reload the page and try again."
        ),
        "error.too_large.title": "Too much text",
        "error.too_large.text": "The form sent more text than this page accepts.",
        "error.too_many_proposals.title": "Too many proposals for now",
        "error.too_many_proposals.text": (
            "You have made many proposals in a short time. Nothing was changed; wait a minute, "
            "then try again."
        ),
        "error.busy.title": "Busy for a moment",
        "error.busy.text": "The records this page works on are busy with other changes. Try again.",
        "error.unavailable.title": "Temporarily unavailable",
        "error.unavailable.text": "A part of the application is stopped; an operator is needed.",
        "error.internal.title": "Something went wrong",
        "error.internal.text": (
            "Something went wrong on our side. Nothing was changed by this page. Quote this "
            "reference if you contact support: {reference}"
        ),
        "error.home": "Go to the inbox",
        "state.superseded": "Replaced",
        "review.replaced_title": "Replaced by a newer proposal",
        "review.replaced_text": (
            "A newer proposal for the same thing replaced this one, so it can no longer be "
            "approved or declined. This one changed nothing."
        ),
        "review.replaced_link": "Open the newer proposal",
        "review.withdrawn_title": "This proposal will not run",
        "review.withdrawn_link": "Open the proposal that withdrew it",
        "review.withdraws_private": "A proposal your role does not let you open",
        "state.withdrawn": "Withdrawn",
        "notice.withdrawn": (
            "Another proposal was carried out and withdrew this one: it can no longer be "
            "approved or declined."
        ),
        "review.changes_title": "What changed",
        "review.changes_field": "What",
        "review.changes_before": "Before",
        "review.changes_after": "After",
        "review.changes_label": "{label}:",
        "review.changes_none": "This edit changed nothing the review shows.",
        "review.earlier_version": "See the earlier version",
        "review.approvals": "Approvals",
        "review.approvals_count": "{given} of {required}",
        "review.approvals_heading": "Approvals: {count}",
        "review.you_approved": "You have approved it.",
        "review.awaiting_one": "It awaits one more manager's approval; nothing runs until then.",
        "review.awaiting_more": (
            "It awaits {count} more managers' approvals; nothing runs until then."
        ),
        "review.requester_barred": (
            "You requested this proposal, and the club's policy asks another manager to "
            "approve it. You may still decline it."
        ),
        "review.first_of": (
            "Your approval will be {given} of {required}: nothing runs until another manager "
            "approves too."
        ),
        "review.policy": "Approval policy",
        "review.edit": "Edit",
        "review.edit_hint": (
            "Change what it asks for: the application prepares a new proposal from your changes."
        ),
        "policy.rule": "When this was proposed, the club's rule for it was: {quorum}.",
        "policy.rule_above": (
            "When this was proposed, the club's rule for it was: above {amount}, {quorum}."
        ),
        "policy.quorum": "{count} different managers must approve",
        "policy.single": "one manager's approval is enough",
        "policy.not_requester": "The person who requested it may not approve it.",
        "policy.under_threshold": (
            "This one is not above that amount: one manager's approval is enough."
        ),
        "inbox.approvals": "{given} of {required} approvals",
        "notice.awaiting_approvals": (
            "Your approval is recorded. Nothing runs until another manager approves too."
        ),
        "notice.already_approved_by_you": (
            "You have already approved this proposal, and an approval counts once per person. "
            "It awaits another manager."
        ),
        "notice.superseded": (
            "A newer proposal replaced this one; it can no longer be approved or declined."
        ),
        "notice.requester_may_not_approve": (
            "You requested this proposal; the club's policy asks another manager to approve it."
        ),
        "notice.passkey_required": (
            "This proposal's policy asks you to approve it with your passkey: nothing changed."
        ),
        "notice.passkey_rejected": (
            "Your passkey's answer could not be verified, so nothing was approved. Try again."
        ),
        "review.approve_with_passkey": "Approve with my passkey",
        "review.passkey_hint": (
            "The club's policy asks for your passkey: it signs exactly this proposal."
        ),
        "review.passkey_none": (
            "The club's policy asks for a passkey, and you have none yet: add one on your "
            "passkeys page (Account, then Passkeys)."
        ),
        "passkeys.title": "Your passkeys",
        "passkeys.lead": (
            "A passkey signs each approval a club's policy asks it for, bound to exactly what "
            "you approve. It stays on your device; only its public key is kept here."
        ),
        "passkeys.yours": "Passkeys",
        "passkeys.none": "You have no passkey in this club yet.",
        "passkeys.added": "Added {at}",
        "passkeys.name": "Name",
        "passkeys.name_hint": "So you can tell it apart, for example “Ava's laptop”.",
        "passkeys.rename": "Rename",
        "passkeys.remove": "Remove {name}",
        "passkeys.add": "Add a passkey",
        "passkeys.cancelled": "The passkey was not used: nothing changed. You can try again.",
        "passkeys.not_added": "The passkey could not be added: nothing changed. Try again.",
        "passkeys.renamed": "The passkey was renamed.",
        "passkeys.not_renamed": "The passkey could not be renamed: give it a name.",
        "passkeys.removed": "The passkey was removed: it approves nothing any more.",
        "passkeys.not_removed": "That passkey was already removed.",
        "passkeys.registered": "The passkey was added.",
        "notice.not_revisable": (
            "This proposal can no longer be edited: it was approved, or a newer one replaced it."
        ),
        "notice.revised": (
            "Here is the new proposal, prepared again from your changes. Review it before "
            "anyone approves it."
        ),
        "edit.title": "Edit the proposal",
        "edit.back": "Back to the proposal",
        "edit.lead": (
            "Change what the proposal asks for. The application checks it again and works out "
            "everything else itself, amounts included, then makes a new proposal; nothing "
            "changes until someone approves it."
        ),
        "edit.nothing_to_choose": (
            "This proposal has nothing to choose: preparing it again reads the records as they "
            "are now."
        ),
        "edit.problems": (
            "The new proposal could not be prepared, and nothing was changed. Correct what is "
            "marked, then try again."
        ),
        "edit.submit": "Prepare the new proposal",
        "edit.discard": "Discard changes",
        "edit.unchanged": (
            "Nothing was changed: this is what the proposal already asks for, so no new "
            "proposal was made. Change a field, or discard the changes."
        ),
        "edit.optional": "(optional)",
        "edit.none": "(none)",
        "edit.problem.number": "Write a whole number.",
        "edit.problem.json": "This is not in the expected form (JSON).",
    },
    "fr": {
        "app.tagline": ("Les assistants IA proposent. Vous approuvez. Le système du club exécute."),
        "nav.inbox": "À traiter",
        "nav.sign_out": "Se déconnecter",
        "nav.sign_out_everywhere": "Se déconnecter partout (tous les appareils et navigateurs)",
        "nav.language": "Langue",
        "nav.skip": "Aller au contenu",
        "sign_in.title": "Connexion",
        "sign_in.lead": (
            "Connectez-vous pour examiner et approuver ce que proposent les assistants du club."
        ),
        "sign_in.email": "Courriel",
        "sign_in.password": "Mot de passe",
        "sign_in.submit": "Se connecter",
        "sign_in.failed": "Ce courriel et ce mot de passe ne correspondent pas. Réessayez.",
        "sign_in.throttled": (
            "Trop de tentatives de connexion ont échoué. "
            "Patientez environ {minutes} minutes, puis réessayez."
        ),
        "sign_in.throttled_one": (
            "Trop de tentatives de connexion ont échoué. "
            "Patientez environ une minute, puis réessayez."
        ),
        "sign_in.signed_out": "Vous êtes déconnecté.",
        "sign_in.signed_out_everywhere": "Vous êtes déconnecté partout, sur tous vos appareils.",
        "sign_in.choose_club": "Choisissez un club",
        "sign_in.choose_lead": "Votre compte appartient à plusieurs clubs. Lequel ?",
        "sign_in.expired": "Votre session a pris fin. Reconnectez-vous.",
        "sign_in.session_ended": (
            "Votre session a pris fin : déconnexion de tous les appareils, nouveau mot de passe "
            "ou trop longue inactivité. Reconnectez-vous pour continuer."
        ),
        "inbox.title": "À traiter",
        "inbox.lead": (
            "Ce que proposent les assistants du club, et ce qui demande un suivi après une "
            "décision. Rien ne change avant qu'une personne approuve."
        ),
        "inbox.awaiting": "En attente de votre décision",
        "inbox.empty_waiting": (
            "Rien d'autre n'attend votre décision : ce que vous avez approuvé est plus bas, en "
            "attente des autres."
        ),
        "inbox.waiting": "En attente des autres",
        "inbox.waiting_lead": (
            "Vous les avez approuvées ; chacune attend encore l'approbation d'un autre "
            "gestionnaire, et rien ne s'exécute d'ici là."
        ),
        "inbox.you_approved": "Vous l'avez approuvée",
        "inbox.attention": "À surveiller",
        "inbox.attention_lead": (
            "En vérification auprès d'un fournisseur, en échec ou non exécutées. Chacune quitte "
            "cette liste une fois réglée, ou quand une proposition plus récente la suit dans la "
            "même conversation."
        ),
        "inbox.attention_empty": "Rien à surveiller.",
        "inbox.attention_more": "{count} de plus.",
        "inbox.views": "Quelles propositions",
        "inbox.sections": "Sections",
        "inbox.pages": "Pages",
        "inbox.open_view": "À faire",
        "inbox.recent_view": "Résultats récents",
        "inbox.recent_title": "Résultats récents",
        "inbox.recent_lead": "Chaque proposition décidée, la plus récemment modifiée d'abord.",
        "inbox.recent_count": "{total} décidées",
        "inbox.recent_empty": "Aucune proposition n'a encore été décidée.",
        "inbox.reference": "référence {reference}",
        "inbox.updated": "Dernier changement le {when}",
        "nav.attention": "À surveiller",
        "nav.awaiting_count": "{count} en attente de votre décision",
        "nav.attention_count": "{count} à surveiller",
        "inbox.empty": (
            "Rien n'attend d'approbation. Les propositions des assistants apparaissent ici."
        ),
        "inbox.no_sections": "Votre rôle ne permet d'approuver aucun type de proposition.",
        "inbox.all": "Toutes",
        "inbox.requested_by": "Demandée par {who}",
        "inbox.page": "Page {page} sur {pages}",
        "inbox.newer": "Plus récentes",
        "inbox.older": "Plus anciennes",
        "start.title": "Démarrer une conversation",
        "start.order_label": "Numéro de commande",
        "start.order_hint": "La référence de la commande dans le système d'inscription, ou son id.",
        "start.order_submit": "Ouvrir l'assistant commandes",
        "chat.you": "Vous",
        "chat.assistant": "Assistant",
        "chat.application": "countersign",
        "chat.message": "Votre message",
        "chat.send": "Envoyer",
        "chat.busy": "L'assistant lit…",
        "chat.empty": "Aucun message. Dites ce dont vous avez besoin ; l'assistant répond ici.",
        "chat.message_required": "Écrivez d'abord un message.",
        "chat.message_too_long": "Limitez le message à {limit} caractères.",
        "chat.new": "Nouvelle conversation",
        "updates.still": "Pas encore réglé. Vérifiez de nouveau pour la dernière situation.",
        "updates.running": "Cette page vérifie de nouveau toutes les {seconds} secondes.",
        "updates.paused": "Mises à jour suspendues.",
        "updates.pause": "Suspendre les mises à jour",
        "updates.resume": "Reprendre les mises à jour",
        "updates.now": "Vérifier maintenant",
        "chat.revision_note": "La dernière proposition n'a pas été exécutée : {reason}",
        "chat.expired_note": "La dernière proposition a expiré avant d'être approuvée.",
        "order.title": "Commande",
        "order.participant": "Participant(e)",
        "order.total": "Total de la commande",
        "order.registration": "Inscription",
        "order.registration_active": "Active",
        "order.registration_in": "Active · une place dans la ligue {league}",
        "order.registration_cancelled": "Annulée",
        "order.items": "Articles",
        "order.discounts": "Remises",
        "order.payments": "Paiements",
        "order.refunds": "Remboursements",
        "order.note": "Note sur la commande",
        "order.applied": "appliquée",
        "order.not_applied": "non appliquée",
        "order.refunded_on": "{amount} remboursés le {day}",
        "order.refunded": "{amount} remboursés",
        "order.refundable": "{amount} remboursable",
        "club.leagues": "Ligues",
        "club.members": "{count} membres",
        "club.form": "Formulaire d'envoi actuel",
        "club.form_empty": "Le formulaire d'envoi est vide.",
        "card.review": "Examiner et décider",
        "card.open": "Ouvrir",
        "review.title": "Examiner la proposition",
        "review.lead": (
            "Voici exactement ce que fera l'approbation. L'application a calculé chaque montant ; "
            "elle revérifie tout avant d'exécuter."
        ),
        "review.lead_no_amounts": (
            "Voici exactement ce que fera l'approbation. L'application revérifie tout avant "
            "d'exécuter."
        ),
        "review.approve": "Approuver",
        "review.decline": "Refuser",
        "review.decline_note": "Note pour le dossier (facultative)",
        "review.decline_hint": "Pourquoi vous refusez, pour la conversation et l'audit.",
        "review.requested_by": "Demandée par",
        "review.proposed_at": "Proposée",
        "review.expires_at": "Expire",
        "review.approved_by": "Approuvée par",
        "review.declined_by": "Refusée par",
        "review.decline_note_shown": "Note de refus",
        "review.reference": "Référence",
        "review.outcome": "Résultat : {title}",
        "refund.card": "Sur la carte",
        "refund.account_credit": "Crédit au compte",
        "refund.manual": "Saisi à la main",
        "review.conversation": "Retour à la conversation",
        "review.status_page": "Suivre la vérification",
        "review.updates_itself": (
            "Cette page s'actualise d'elle-même jusqu'à la fin de la vérification ; le résultat "
            "reste aussi dans la liste, sous À surveiller."
        ),
        "review.revise": "Demander une nouvelle proposition à l'assistant",
        "review.support_reference": "Référence pour le soutien :",
        "review.requested_by_assistant": "L'assistant, pour le compte de {who}",
        "review.confirm_hint": "Vous confirmerez une dernière fois : c'est irréversible.",
        "confirm.title": "Confirmez une dernière fois",
        "confirm.cannot_undo": "C'est irréversible",
        "confirm.yes": "Oui : {action}",
        "confirm.cancel": "Pas maintenant, retour à la proposition",
        "confirm.back": "Retour à la proposition",
        "review.forbidden_kind": (
            "Votre rôle ne permet pas d'approuver ce type de proposition. Demandez à un "
            "gestionnaire."
        ),
        "review.expired_note": (
            "Cette proposition a expiré avant d'être approuvée. Rien n'a changé."
        ),
        "review.pending_note": "En attente de votre décision. Rien n'a encore changé.",
        "review.executing_note": (
            "Approuvée et en cours d'exécution. Actualisez dans un instant pour voir le résultat."
        ),
        "review.executing_overdue": (
            "Approuvée, mais aucun résultat n'a été enregistré\u00a0: le processus qui "
            "l'exécutait semble s'être arrêté."
        ),
        "notice.executed": "Approuvée. Voici ce qui s'est passé.",
        "notice.executed.succeeded": "Approuvée et effectuée. Voici ce qui s'est passé.",
        "notice.executed.revision_required": (
            "Approuvée, mais non exécutée : rien n'a changé. Voici pourquoi."
        ),
        "notice.executed.needs_reconciliation": (
            "Approuvée, mais le fournisseur ne l'a pas encore confirmée. Ne la refaites pas : "
            "cette page indique quand elle est réglée."
        ),
        "notice.executed.terminal_failure": (
            "Approuvée, mais en échec : rien n'a changé. Donnez au soutien la référence ci-dessous."
        ),
        "notice.executed.other": "Approuvée. Voici ce qui s'est passé.",
        "notice.already_completed": (
            "Cette proposition était déjà approuvée. Voici son résultat enregistré ; rien n'a "
            "été exécuté de nouveau."
        ),
        "notice.declined": "Refusée. Rien n'a été modifié.",
        "notice.not_pending": (
            "Cette proposition a déjà été refusée ; elle ne peut plus être approuvée."
        ),
        "notice.expired": "Cette proposition a expiré ; elle ne peut plus être approuvée.",
        "notice.in_progress": (
            "L'approbation de quelqu'un d'autre est en cours d'exécution. Actualisez dans un "
            "instant."
        ),
        "notice.forbidden": "Votre rôle ne permet pas d'approuver ce type de proposition.",
        "notice.busy": (
            "Les éléments visés par cette proposition sont occupés. Réessayez dans un instant."
        ),
        "notice.order_missing": "Aucune commande de ce club ne porte ce numéro.",
        "notice.redelivered": "Remise en file : le prochain passage d'envoi la renverra.",
        "notice.nothing_redelivered": "Aucune lettre morte de ce type ; rien n'a été modifié.",
        "nav.webhooks": "Webhooks",
        "webhooks.title": "Webhooks",
        "webhooks.lead": (
            "Où les notifications du club sont publiées : une proposition en attente "
            "d'approbation, un résultat en vérification auprès d'un fournisseur, un échec. "
            "Chacune est signée et envoyée jusqu'à ce que le destinataire l'accepte."
        ),
        "webhooks.endpoints": "Points de réception",
        "webhooks.no_endpoints": "Le club n'a aucun point de réception de webhooks.",
        "webhooks.added_by": "Ajouté par {who}",
        "webhooks.added_by_operator": "Ajouté par l'opérateur, en ligne de commande",
        "webhooks.how_to_add": (
            "Un point de réception peut aussi s'ajouter avec « countersign webhooks add » ou l'API."
        ),
        "webhooks.state.new": "Pas encore d'essai",
        "webhooks.state.healthy": "Fonctionne",
        "webhooks.state.failing": "En échec",
        "webhooks.last_attempt": "Dernier essai",
        "webhooks.last_attempt_was": "{result} · {when}",
        "webhooks.no_attempt": "Aucun pour l'instant",
        "webhooks.error_rate": "Taux d'échec, dernières 24 h",
        "webhooks.error_rate_value": "{percent}\N{NO-BREAK SPACE}% · {failed} en échec sur {count}",
        "webhooks.no_recent_attempts": "Aucun essai ces dernières 24 h",
        "webhooks.next_retry": "Prochain essai",
        "webhooks.next_retry_value": "{when} · {count} à réessayer",
        "webhooks.no_retry": "Aucun : rien n'attend d'être réessayé",
        "webhooks.remove": "Retirer",
        "webhooks.remove_hint": (
            "Il cesse aussitôt de recevoir les notifications du club, et ce qui était en route "
            "vers lui n'est pas envoyé. L'ajouter de nouveau crée un nouveau secret de "
            "signature."
        ),
        "webhooks.remove_confirm": "Retirer {url}",
        "webhooks.add": "Ajouter un point de réception",
        "webhooks.url": "URL du point de réception",
        "webhooks.url_hint": (
            "L'adresse https:// de votre récepteur ; seules les adresses publiques sont "
            "acceptées. Son secret de signature est montré une seule fois, après l'ajout."
        ),
        "webhooks.add_submit": "Ajouter le point de réception",
        "webhooks.added_title": "Point de réception ajouté",
        "webhooks.secret_label": "Secret de signature (montré une seule fois)",
        "webhooks.secret_hint": (
            "Copiez-le maintenant dans votre récepteur : il vérifie avec lui la signature de "
            "chaque notification, et cette page ne le montrera plus."
        ),
        "webhooks.error.empty": "Écrivez l'URL du point de réception.",
        "webhooks.error.too_long": "Cette URL est trop longue : 2 000 caractères au plus.",
        "webhooks.error.spaces": (
            "Une URL ne peut pas contenir d'espaces ni de caractères de contrôle."
        ),
        "webhooks.error.characters": (
            "Cette URL contient des caractères qu'une URL ne peut pas contenir tels quels "
            '(< > " { } | \\ ^ `).'
        ),
        "webhooks.error.invalid": "Ce n'est pas une URL valide.",
        "webhooks.error.scheme": "L'URL doit commencer par https:// (ou http://).",
        "webhooks.error.no_host": "L'URL n'a pas de nom d'hôte.",
        "webhooks.error.credentials": (
            "L'URL ne doit contenir ni nom d'utilisateur ni mot de passe : ils seraient "
            "conservés dans les dossiers du club."
        ),
        "webhooks.error.fragment": "L'URL ne doit pas se terminer par un #fragment.",
        "webhooks.error.port": "Le port de l'URL n'est pas valide.",
        "webhooks.error.too_many": (
            "Le club a déjà 10 points de réception, le maximum. Retirez-en un d'abord."
        ),
        "webhooks.error.internal_address": (
            "Cette URL mène à une adresse privée, locale ou autrement interne. Les webhooks ne "
            "sont publiés qu'à des adresses publiques."
        ),
        "webhooks.error.duplicate": "Cette URL est déjà un point de réception du club.",
        "notice.endpoint_removed": "Le point de réception a été retiré : il ne reçoit plus rien.",
        "notice.endpoint_not_removed": (
            "Aucun point de réception de ce type ; rien n'a été modifié."
        ),
        "webhooks.dead_letters": "Lettres mortes",
        "webhooks.dead_lead": (
            "Les notifications qui n'ont pas pu être livrées après tous les essais. Renvoyez-en "
            "une dès que son destinataire fonctionne de nouveau."
        ),
        "webhooks.no_dead_letters": (
            "Aucune lettre morte : tout a été livré ou est en cours d'envoi."
        ),
        "webhooks.no_dead_letters_failing": (
            "Aucune lettre morte pour l'instant, mais des livraisons échouent : {count} seront "
            "réessayées, et chacune devient une lettre morte ici après son dernier essai."
        ),
        "webhooks.dead": "Non livrée",
        "webhooks.redeliver": "Renvoyer",
        "webhooks.redeliver_all": "Tout renvoyer",
        "webhooks.last_answer": "Dernière réponse",
        "webhooks.attempts": "essais : {count}",
        "webhooks.event_id": "Identifiant d'événement",
        "webhooks.result.delivered": "livré",
        "webhooks.result.answered": "échec : le point de réception a répondu {code}",
        "webhooks.result.could_not_connect": "échec : connexion impossible",
        "webhooks.result.endpoint_removed": "échec : le point de réception a été retiré",
        "webhooks.result.skipped": "non envoyé : la proposition n'attend plus d'approbation",
        "webhooks.channel.webhook": "Webhook",
        "webhooks.channel.email": "Courriel",
        "webhooks.type.awaiting_approval": "En attente d'approbation",
        "webhooks.type.needs_reconciliation": "En vérification auprès du fournisseur",
        "webhooks.type.failed": "Échec",
        "nav.signed_in_as": "Connecté(e) : {name} ({email}), {club}",
        "status.title": "Où elle en est",
        "status.settled": "Réglé. Voici le résultat enregistré ; rien d'autre ne se passera.",
        "status.not_reconciling": (
            "Rien n'attend la réponse d'un fournisseur pour cette proposition."
        ),
        "status.back": "Retour à la proposition",
        "status.checked": "Vérifié",
        "settling.waiting": "En attente depuis {since}, {waited}.",
        "settling.unattended": (
            "Rien ne la règle\u00a0: un opérateur doit démarrer le service d'arrière-plan "
            "(countersign worker), qui demande au fournisseur ce qui s'est passé. D'ici là, ne "
            "la refaites pas autrement\u00a0: elle a peut-être déjà eu lieu."
        ),
        "settling.unattended_short": (
            "Rien ne la règle\u00a0: un opérateur doit démarrer le service d'arrière-plan."
        ),
        "settling.provider_silent": (
            "Le fournisseur ne l'a pas encore confirmée\u00a0: countersign le lui redemande "
            "toutes les {seconds} secondes. Ne la refaites pas autrement\u00a0: elle a "
            "peut-être déjà eu lieu."
        ),
        "state.pending": "En attente d'approbation",
        "state.executing": "En cours d'exécution",
        "state.reconciling": "Confirmation auprès du fournisseur",
        "state.succeeded": "Réussie",
        "state.revision_required": "Non exécutée",
        "state.failed": "Échec",
        "state.declined": "Refusée",
        "state.expired": "Expirée",
        "error.not_found.title": "Introuvable",
        "error.not_found.text": (
            "Il n'y a rien ici dans votre club. Le lien est peut-être erroné, ou il appartient "
            "à un autre compte."
        ),
        "error.method_not_allowed.title": "Cette page ne peut pas faire cela",
        "error.method_not_allowed.text": (
            "Cette adresse n'accepte pas ce type de demande. Ouvrez-la depuis un lien ou un "
            "bouton du site."
        ),
        "error.bad_request.title": "Cette demande est illisible",
        "error.bad_request.text": (
            "Le navigateur a envoyé quelque chose que cette page ne peut pas lire. Réessayez."
        ),
        "error.forbidden.title": "Non autorisé",
        "error.forbidden.text": "Votre rôle dans ce club ne le permet pas.",
        "error.csrf.title": "Ce formulaire a expiré",
        "error.csrf.text": (
            "Par sécurité, le formulaire n'a pas été accepté. Revenez en arrière, actualisez la "
            "page et réessayez."
        ),
        "error.too_large.title": "Trop de texte",
        "error.too_large.text": "Le formulaire a envoyé plus de texte que cette page n'en accepte.",
        "error.too_many_proposals.title": "Trop de propositions pour l'instant",
        "error.too_many_proposals.text": (
            "Vous avez fait beaucoup de propositions en peu de temps. Rien n'a été modifié ; "
            "attendez une minute, puis réessayez."
        ),
        "error.busy.title": "Occupé pour un instant",
        "error.busy.text": (
            "Les éléments visés par cette page sont occupés par d'autres changements. Réessayez."
        ),
        "error.unavailable.title": "Momentanément indisponible",
        "error.unavailable.text": (
            "Une partie de l'application est arrêtée ; un opérateur doit intervenir."
        ),
        "error.internal.title": "Une erreur s'est produite",
        "error.internal.text": (
            "Une erreur s'est produite de notre côté. Cette page n'a rien modifié. Citez cette "
            "référence si vous contactez le soutien : {reference}"
        ),
        "error.home": "Aller à la liste à traiter",
        "state.superseded": "Remplacée",
        "review.replaced_title": "Remplacée par une proposition plus récente",
        "review.replaced_text": (
            "Une proposition plus récente pour la même chose a remplacé celle-ci : elle ne peut "
            "plus être approuvée ni refusée. Celle-ci n'a rien modifié."
        ),
        "review.replaced_link": "Ouvrir la proposition plus récente",
        "review.withdrawn_title": "Cette proposition ne sera pas exécutée",
        "review.withdrawn_link": "Ouvrir la proposition qui l'a retirée",
        "review.withdraws_private": "Une proposition que votre rôle ne vous permet pas d'ouvrir",
        "state.withdrawn": "Retirée",
        "notice.withdrawn": (
            "Une autre proposition a été exécutée et a retiré celle-ci\u00a0: elle ne peut plus "
            "être approuvée ni refusée."
        ),
        "review.changes_title": "Ce qui a changé",
        "review.changes_field": "Élément",
        "review.changes_before": "Avant",
        "review.changes_after": "Après",
        "review.changes_label": "{label} :",
        "review.changes_none": "Cette modification ne change rien de ce qui est affiché.",
        "review.earlier_version": "Voir la version précédente",
        "review.approvals": "Approbations",
        "review.approvals_count": "{given} sur {required}",
        "review.approvals_heading": "Approbations : {count}",
        "review.you_approved": "Vous l'avez approuvée.",
        "review.awaiting_one": (
            "Il manque l'approbation d'un autre gestionnaire ; rien ne s'exécute d'ici là."
        ),
        "review.awaiting_more": (
            "Il manque l'approbation de {count} autres gestionnaires ; rien ne s'exécute d'ici là."
        ),
        "review.requester_barred": (
            "Vous avez demandé cette proposition, et la règle du club demande qu'un autre "
            "gestionnaire l'approuve. Vous pouvez encore la refuser."
        ),
        "review.first_of": (
            "Votre approbation comptera pour {given} sur {required} : rien ne s'exécute tant "
            "qu'un autre gestionnaire n'a pas approuvé aussi."
        ),
        "review.policy": "Règle d'approbation",
        "review.edit": "Modifier",
        "review.edit_hint": (
            "Changez ce qu'elle demande : l'application prépare une nouvelle proposition à partir "
            "de vos modifications."
        ),
        "policy.rule": "Au moment de la proposition, la règle du club était : {quorum}.",
        "policy.rule_above": (
            "Au moment de la proposition, la règle du club était : au-delà de {amount}, {quorum}."
        ),
        "policy.quorum": "{count} gestionnaires différents doivent approuver",
        "policy.single": "l'approbation d'un seul gestionnaire suffit",
        "policy.not_requester": "La personne qui l'a demandée ne peut pas l'approuver.",
        "policy.under_threshold": (
            "Celle-ci ne dépasse pas ce montant : l'approbation d'un seul gestionnaire suffit."
        ),
        "inbox.approvals": "Approbations : {given} sur {required}",
        "notice.awaiting_approvals": (
            "Votre approbation est enregistrée. Rien ne s'exécute avant qu'un autre gestionnaire "
            "approuve aussi."
        ),
        "notice.already_approved_by_you": (
            "Vous avez déjà approuvé cette proposition, et chaque personne ne compte qu'une "
            "fois. Elle attend un autre gestionnaire."
        ),
        "notice.superseded": (
            "Une proposition plus récente a remplacé celle-ci ; elle ne peut plus être approuvée "
            "ni refusée."
        ),
        "notice.requester_may_not_approve": (
            "Vous avez demandé cette proposition ; la règle du club demande qu'un autre "
            "gestionnaire l'approuve."
        ),
        "notice.passkey_required": (
            "La règle de cette proposition demande de l'approuver avec votre clé d'accès : "
            "rien n'a changé."
        ),
        "notice.passkey_rejected": (
            "La réponse de votre clé d'accès n'a pas pu être vérifiée ; rien n'a été approuvé. "
            "Réessayez."
        ),
        "review.approve_with_passkey": "Approuver avec ma clé d'accès",
        "review.passkey_hint": (
            "La règle du club demande votre clé d'accès : elle signe exactement cette proposition."
        ),
        "review.passkey_none": (
            "La règle du club demande une clé d'accès, et vous n'en avez pas encore : "
            "ajoutez-en une sur la page de vos clés d'accès."
        ),
        "passkeys.title": "Vos clés d'accès",
        "passkeys.lead": (
            "Une clé d'accès signe chaque approbation pour laquelle la règle d'un club la "
            "demande, liée exactement à ce que vous approuvez. Elle reste sur votre appareil ; "
            "seule sa clé publique est gardée ici."
        ),
        "passkeys.yours": "Clés d'accès",
        "passkeys.none": "Vous n'avez pas encore de clé d'accès dans ce club.",
        "passkeys.added": "Ajoutée le {at}",
        "passkeys.name": "Nom",
        "passkeys.name_hint": "Pour la reconnaître, par exemple « Portable d'Ava ».",
        "passkeys.rename": "Renommer",
        "passkeys.remove": "Retirer {name}",
        "passkeys.add": "Ajouter une clé d'accès",
        "passkeys.cancelled": (
            "La clé d'accès n'a pas été utilisée : rien n'a changé. Vous pouvez réessayer."
        ),
        "passkeys.not_added": (
            "La clé d'accès n'a pas pu être ajoutée : rien n'a changé. Réessayez."
        ),
        "passkeys.renamed": "La clé d'accès a été renommée.",
        "passkeys.not_renamed": "La clé d'accès n'a pas pu être renommée : donnez-lui un nom.",
        "passkeys.removed": "La clé d'accès a été retirée : elle n'approuve plus rien.",
        "passkeys.not_removed": "Cette clé d'accès était déjà retirée.",
        "passkeys.registered": "La clé d'accès a été ajoutée.",
        "notice.not_revisable": (
            "Cette proposition ne peut plus être modifiée : elle a été approuvée, ou une plus "
            "récente l'a remplacée."
        ),
        "notice.revised": (
            "Voici la nouvelle proposition, préparée de nouveau à partir de vos modifications. "
            "Examinez-la avant que quiconque l'approuve."
        ),
        "edit.title": "Modifier la proposition",
        "edit.back": "Retour à la proposition",
        "edit.lead": (
            "Changez ce que demande la proposition. L'application la vérifie de nouveau et "
            "établit elle-même tout le reste, montants compris, puis crée une nouvelle "
            "proposition ; rien ne change avant qu'une personne l'approuve."
        ),
        "edit.nothing_to_choose": (
            "Cette proposition n'a rien à choisir : la préparer de nouveau relit les dossiers "
            "tels qu'ils sont maintenant."
        ),
        "edit.problems": (
            "La nouvelle proposition n'a pas pu être préparée, et rien n'a été modifié. "
            "Corrigez ce qui est signalé, puis réessayez."
        ),
        "edit.submit": "Préparer la nouvelle proposition",
        "edit.discard": "Annuler les modifications",
        "edit.unchanged": (
            "Rien n'a changé : c'est déjà ce que demande la proposition, donc aucune nouvelle "
            "proposition n'a été faite. Modifiez un champ, ou annulez les modifications."
        ),
        "edit.optional": "(facultatif)",
        "edit.none": "(aucun)",
        "edit.problem.number": "Écrivez un nombre entier.",
        "edit.problem.json": "Ce n'est pas dans la forme attendue (JSON).",
    },
}


_ONLY_PROPOSES = Localized(
    "It can only propose ({operations}); nothing happens until you approve.",
    "Il peut seulement proposer ({operations}) ; rien ne se passe avant votre approbation.",
)


def _section_texts(language: str) -> dict[str, str]:
    """Every registered section's texts in ``language``: see the module's docstring."""
    texts: dict[str, str] = {}
    for section, assistant in ASSISTANTS.items():
        words = assistant.texts
        separator = " ; " if language == "fr" else "; "
        titles = separator.join(c.title.text(language).lower() for c in assistant.contracts)
        only = _ONLY_PROPOSES.text(language, operations=titles)
        texts[f"section.{section}"] = words.name.text(language)
        texts[f"chat.title.{section}"] = words.assistant.text(language)
        texts[f"chat.lead.{section}"] = f"{words.lead.text(language)} {only}"
        texts[f"chat.placeholder.{section}"] = words.placeholder.text(language)
        if words.start is not None:
            texts[f"start.{section}"] = words.start.text(language)
        for tool in assistant.read_tools:
            if tool.label is not None:
                texts[f"chat.read.{tool.name}"] = tool.label.text(language)
    return texts


NBSP = "\N{NO-BREAK SPACE}"


def french_typography(text: str) -> str:
    """French spacing: a non-breaking space before ``:``, ``;``, ``?`` and ``!`` and inside
    « », so a line never starts with the sign (applied to the catalogue's own words only,
    never to what people or models wrote)."""
    text = re.sub(r" ([:;?!])(?=\s|$)", NBSP + r"\1", text)
    return text.replace("« ", "«" + NBSP).replace(" »", NBSP + "»")


for _language, _catalogue in TEXTS.items():
    _catalogue.update(_section_texts(_language))
TEXTS["fr"] = {key: french_typography(text) for key, text in TEXTS["fr"].items()}


def translator(language: str) -> Callable[..., str]:
    """``t(key, **params)`` in ``language``, falling back to English, then to the key."""
    catalogue = TEXTS.get(language, TEXTS[DEFAULT_LANGUAGE])
    fallback = TEXTS[DEFAULT_LANGUAGE]

    def t(key: str, **params: object) -> str:
        template = catalogue.get(key) or fallback.get(key) or key
        return template.format(**params) if params else template

    return t


def negotiate(chosen: str | None, accept_language: str | None) -> str:
    """The session's choice if any, else the best of Accept-Language, else English."""
    if chosen in LANGUAGES:
        return chosen
    ranked: list[tuple[float, int, str]] = []
    for index, part in enumerate((accept_language or "")[:512].split(",")[:20]):
        pieces = [piece.strip() for piece in part.split(";")]
        tag = pieces[0].lower()
        quality = 1.0
        for parameter in pieces[1:]:
            name, _, value = parameter.partition("=")
            if name.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        primary = tag.split("-", 1)[0]
        if primary in LANGUAGES and quality > 0:
            ranked.append((-quality, index, primary))
    return sorted(ranked)[0][2] if ranked else DEFAULT_LANGUAGE
