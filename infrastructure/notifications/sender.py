"""One sender pass, and the long-running loop (``countersign notify run``).

A pass catches the ``notifications`` projection up, fans new outbox rows out into deliveries,
then attempts every due delivery on a thread pool and records each attempt as soon as it
ends. Attempts run concurrently, bounded overall, per webhook endpoint and per club, and each
has one deadline; the pass claims more as soon as one ends, and the long-running loop also
picks up new notifications while slow attempts are under way. The next try after a failure
is tenacity's exponential wait with jitter, stored in the ledger (so it survives the
process); the last failed try makes the delivery a dead letter.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from countersign.application.notifications import NotificationsService
from countersign.application.ports import Clock
from countersign.domain.errors import NotFoundError
from countersign.domain.notifications import AWAITING_APPROVAL
from countersign.infrastructure.notifications import channels
from countersign.infrastructure.notifications.ledger import (
    DEAD,
    DELIVERED,
    EMAIL,
    NO_LONGER_PENDING,
    SKIPPED,
    WEBHOOK,
    Attempt,
    Claimed,
    DeliveryLedger,
    Target,
)
from countersign.infrastructure.notifications.messages import Mail, email_message, webhook_body
from countersign.infrastructure.notifications.settings import NotifySettings
from countersign.infrastructure.notifications.signing import signed_headers
from tenacity import RetryCallState, wait_exponential_jitter

log = logging.getLogger("countersign.notify")

FANOUT_BATCH = 500
CLAIM_BATCH = 100

ENDPOINT_REMOVED = "EndpointRemoved"
NO_SECRET = "NoSigningSecret"  # noqa: S105 - an error class, not a secret
NO_SMTP = "NoSmtpRelay"
SENDER_ERROR = "SenderError"
#: Failures no retry can mend: the delivery is a dead letter at once.
_HOPELESS = frozenset({ENDPOINT_REMOVED, NO_SECRET, NO_SMTP})


@dataclass
class PassReport:
    """What one pass did."""

    fanned_out: int = 0
    attempted: int = 0
    delivered: int = 0
    retrying: int = 0
    dead: int = 0
    skipped: int = 0
    """Deliveries of "awaits your approval" not sent: the proposal was no longer pending."""
    dead_letters: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "fanned_out": self.fanned_out,
            "attempted": self.attempted,
            "delivered": self.delivered,
            "retrying": self.retrying,
            "dead": self.dead,
            "skipped": self.skipped,
        }

    def line(self) -> str:
        return (
            f"{self.fanned_out} new deliveries; {self.attempted} attempted: "
            f"{self.delivered} delivered, {self.retrying} to retry, {self.dead} dead"
            + (f", {self.skipped} skipped (no longer pending)" if self.skipped else "")
        )


class NotificationSender:
    """Fans the outbox out and delivers it, at least once."""

    def __init__(
        self,
        ledger: DeliveryLedger,
        notifications: NotificationsService,
        clock: Clock,
        settings: NotifySettings,
        *,
        catch_up: Callable[[], object] | None = None,
        recorded: Callable[[Claimed, str], None] | None = None,
    ) -> None:
        self.ledger = ledger
        self.notifications = notifications
        self.clock = clock
        self.settings = settings
        self.catch_up = catch_up
        #: Called after each attempt is recorded, with its delivery's status (progress lines).
        self.recorded = recorded
        self._wait = wait_exponential_jitter(
            multiplier=settings.first_retry_seconds,
            max=settings.max_retry_seconds,
            jitter=settings.first_retry_seconds,
        )
        self._slugs: dict[str, str] = {}

    # -- a pass ---------------------------------------------------------------------------------

    def run_once(
        self,
        stop: threading.Event | None = None,
        poll: float | None = None,
        budget: float | None = None,
    ) -> PassReport:
        """Catch up, fan out, then attempt everything due now. With ``poll`` (seconds), the
        pass also catches up, fans out and claims again every ``poll`` seconds while attempts
        are under way, so a notification made during a slow attempt does not wait for it.
        With ``budget`` (seconds), the pass claims nothing more once it has run that long: the
        attempts under way end by their deadline, and what is still due waits for the next
        pass (the worker's, whose other sweepers would otherwise wait behind a club whose
        endpoints never answer, its retries and its redelivered dead letters)."""
        report = PassReport()
        self._refresh(report)
        until = None if budget is None else time.monotonic() + budget
        self.deliver_due(report, stop=stop, poll=poll, until=until)
        return report

    def _refresh(self, report: PassReport) -> None:
        if self.catch_up is not None:
            self.catch_up()
        report.fanned_out += self.fan_out()

    def fan_out(self) -> int:
        """Deliveries for the outbox rows not fanned out yet; how many were new."""
        created = 0
        while True:
            after = self.ledger.fanout_position()
            rows = self.ledger.outbox_after(after, FANOUT_BATCH)
            if not rows:
                return created
            deliveries = [(row, target) for row in rows for target in self.targets(row)]
            created += self.ledger.fan_out(
                after, rows[-1]["position"], deliveries, self.clock.now()
            )

    def targets(self, notification: dict[str, Any]) -> list[Target]:
        """Every endpoint of the club, and every recipient when e-mail is configured."""
        organization_id = notification["organization_id"]
        found = [Target(WEBHOOK, e) for e in self.ledger.active_endpoints(organization_id)]
        if self.settings.email_enabled:
            try:
                recipients = self.notifications.recipients(
                    organization_id,
                    notification["reason"],
                    notification["operation"],
                    notification["requester"],
                    notification["approvers"],
                )
            except NotFoundError:
                recipients = []
            found += [Target(EMAIL, r.email, r.language) for r in recipients]
        return found

    def deliver_due(
        self,
        report: PassReport | None = None,
        *,
        stop: threading.Event | None = None,
        poll: float | None = None,
        until: float | None = None,
    ) -> PassReport:
        """Attempt every due delivery concurrently, recording each as it ends. At most
        ``settings.workers`` attempts run at once, at most ``per_endpoint`` to one webhook
        endpoint and ``per_club`` webhooks of one club: a slow endpoint holds only its own
        slots, and the pass claims more as soon as any attempt ends, until ``stop`` is set or
        the monotonic clock passes ``until``; then it waits for the attempts under way."""
        report = report or PassReport()

        def claiming() -> bool:
            return not (stop is not None and stop.is_set()) and (
                until is None or time.monotonic() < until
            )

        lease = timedelta(seconds=self.settings.lease_seconds)
        under_way: dict[Future[Attempt], Claimed] = {}
        slots = _Slots(self.settings)
        refresh_at = time.monotonic() + (poll or 0.0)
        with ThreadPoolExecutor(self.settings.workers, "countersign-notify") as pool:
            while True:
                free = self.settings.workers - len(under_way)
                skipped = 0
                later: list[Claimed] = []
                if free > 0 and claiming():
                    claimed = self.ledger.claim_due(
                        self.clock.now(),
                        lease,
                        free,
                        busy_endpoints=slots.busy_endpoints(),
                        busy_clubs=slots.busy_clubs(),
                    )
                    pending: dict[str, bool] = {}
                    for delivery in claimed:
                        if self._stale(delivery, pending):
                            now = self.clock.now()
                            self._record(
                                delivery, Attempt(now, 0, error_class=NO_LONGER_PENDING), report
                            )
                            skipped += 1
                        elif slots.take(delivery):
                            under_way[pool.submit(self.send, delivery)] = delivery
                        else:
                            later.append(delivery)
                    self.ledger.release(later, self.clock.now())
                if (later or skipped) and len(under_way) < self.settings.workers:
                    # Claim again at once: deliveries left to a busy endpoint or club, or
                    # skipped as stale, may have hidden others due behind them.
                    continue
                if not under_way:
                    return report
                timeout = None if poll is None else max(0.0, refresh_at - time.monotonic())
                done, _ = wait(under_way, timeout=timeout, return_when=FIRST_COMPLETED)
                for future in done:
                    delivery = under_way.pop(future)
                    slots.give_back(delivery)
                    self._record(delivery, future.result(), report)
                if poll is not None and time.monotonic() >= refresh_at and claiming():
                    # What was notified meanwhile goes out now: every ``poll`` seconds, even
                    # while slow attempts keep ending (each ending is no sign that it did).
                    self._refresh(report)
                    refresh_at = time.monotonic() + poll

    def _stale(self, delivery: Claimed, pending: dict[str, bool]) -> bool:
        """Whether the delivery says a proposal awaits approval that no longer does (asked
        once per proposal and claim)."""
        notification = delivery.notification
        if notification["reason"] != AWAITING_APPROVAL:
            return False
        proposal_id = str(notification["proposal_id"])
        if proposal_id not in pending:
            pending[proposal_id] = self.notifications.still_awaits_approval(proposal_id)
        return not pending[proposal_id]

    def _record(self, delivery: Claimed, attempt: Attempt, report: PassReport) -> None:
        tries = delivery.attempts + 1
        dead = not attempt.delivered and (
            tries >= self.settings.max_attempts or attempt.error_class in _HOPELESS
        )
        next_try = None if attempt.delivered or dead else self.next_attempt_at(attempt, tries)
        status = self.ledger.record(delivery, attempt, next_try, dead)
        report.attempted += 1
        if status == DELIVERED:
            report.delivered += 1
        elif status == DEAD:
            report.dead += 1
            report.dead_letters.append(delivery.delivery_id)
        elif status == SKIPPED:
            report.skipped += 1
        else:
            report.retrying += 1
        if self.recorded is not None:
            self.recorded(delivery, status)

    def next_attempt_at(self, attempt: Attempt, tries: int) -> datetime:
        """When to try again after ``tries`` failed tries: tenacity's exponential wait with
        jitter, from now."""
        state = RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
        state.attempt_number = tries
        return self.clock.now() + timedelta(seconds=self._wait(state))

    # -- sending one ----------------------------------------------------------------------------

    def send(self, delivery: Claimed) -> Attempt:
        """One attempt (runs on the pool's threads: it touches no database)."""
        started_at = self.clock.now()
        try:
            if delivery.channel == WEBHOOK:
                return self._post(delivery, started_at)
            return self._mail(delivery, started_at)
        except Exception:  # a bug here must not stop the others' deliveries
            log.exception("delivery %s could not be attempted", delivery.delivery_id)
            return Attempt(started_at, 0, error_class=SENDER_ERROR)

    def _post(self, delivery: Claimed, started_at: datetime) -> Attempt:
        if delivery.url is None:
            return Attempt(started_at, 0, error_class=ENDPOINT_REMOVED)
        if delivery.secret is None:
            return Attempt(started_at, 0, error_class=NO_SECRET)
        notification = delivery.notification
        body = webhook_body(
            notification,
            self.slug(delivery.organization_id),
            self.settings.review_url(notification["proposal_id"]),
        )
        # The wall clock's, whatever the application's clock says: receivers refuse a
        # timestamp far from their own time (replay protection).
        timestamp = int(time.time())
        headers = signed_headers(delivery.secret, delivery.event_id, timestamp, body)
        return channels.post_webhook(
            delivery.url,
            body,
            headers,
            self.settings.timeout_seconds,
            started_at,
            self.settings.allowed_networks,
        )

    def _mail(self, delivery: Claimed, started_at: datetime) -> Attempt:
        host = self.settings.smtp_host
        if host is None:
            return Attempt(started_at, 0, error_class=NO_SMTP)
        notification = delivery.notification
        club = self.club_name(delivery.organization_id)
        name = self.member_name(delivery.organization_id, delivery.target)
        requester = self.member_name(delivery.organization_id, notification["requester"])
        message = email_message(
            notification,
            Mail(delivery.target, name, delivery.language, requester),
            club,
            self.settings.review_url(notification["proposal_id"]),
            self.settings.smtp_from,
        )
        return channels.send_email(
            message, host, self.settings.smtp_port, self.settings.timeout_seconds, started_at
        )

    def slug(self, organization_id: str) -> str:
        if organization_id not in self._slugs:
            self._slugs[organization_id] = self.notifications.slug_of(organization_id)
        return self._slugs[organization_id]

    def club_name(self, organization_id: str) -> str:
        return self.notifications.club_name(organization_id)

    def member_name(self, organization_id: str, email: str) -> str:
        return self.notifications.member_name(organization_id, email)

    # -- the long run ---------------------------------------------------------------------------

    def run(
        self,
        stop: threading.Event,
        interval: float,
        progress: Callable[[PassReport], None] | None = None,
    ) -> None:
        """Pass after pass until ``stop`` is set, waiting ``interval`` seconds between them;
        while attempts are under way, new notifications are picked up every ``interval``."""
        poll = min(max(interval, 0.01), 1.0)
        while not stop.is_set():
            report = self.run_once(stop, poll)
            if progress is not None:
                progress(report)
            stop.wait(interval)


class _Slots:
    """Attempts under way, by webhook endpoint and by club."""

    def __init__(self, settings: NotifySettings) -> None:
        self.per_endpoint = settings.per_endpoint
        self.per_club = settings.per_club
        self.endpoints: Counter[str] = Counter()
        self.clubs: Counter[str] = Counter()

    def busy_endpoints(self) -> list[str]:
        return sorted(e for e, n in self.endpoints.items() if n >= self.per_endpoint)

    def busy_clubs(self) -> list[str]:
        return sorted(c for c, n in self.clubs.items() if n >= self.per_club)

    def take(self, delivery: Claimed) -> bool:
        if delivery.channel != WEBHOOK:
            return True
        if (
            self.endpoints[delivery.target] >= self.per_endpoint
            or self.clubs[delivery.organization_id] >= self.per_club
        ):
            return False
        self.endpoints[delivery.target] += 1
        self.clubs[delivery.organization_id] += 1
        return True

    def give_back(self, delivery: Claimed) -> None:
        if delivery.channel == WEBHOOK:
            self.endpoints[delivery.target] -= 1
            self.clubs[delivery.organization_id] -= 1
