"""The sweepers ``countersign worker`` runs on a schedule: one pass of each, then a pause.
``countersign serve`` runs the same schedule in a thread of its own process on the embedded
database (``InProcessSweepers``), where no worker is deployed beside it.

* reconcile: settle uncertain external effects under their original idempotency keys;
* expire: record Expired for pending proposals past their expiry;
* notify: deliver the notification outbox (webhooks and e-mail, ``countersign notify run``).

Each is safe to run in several processes at once (every change is a decision whose commit
checks what it read), so a second worker during a deploy does no harm. A sweeper that fails
is logged with a correlation id and tried again at the next pass; the others still run. Each
pass that finishes is recorded (``SweeperPasses``), so the pages can tell whether anything
is settling a lost provider answer.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from countersign.application.errors import CorruptRecordError, new_correlation_id
from countersign.application.reports import SweepReport
from countersign.domain.contracts.presentation import Localized
from countersign.infrastructure.bootstrap import Countersign, bootstrap
from countersign.infrastructure.notifications.webhooks import notification_sender
from countersign.infrastructure.persistence.unavailable import (
    database_unavailable,
    timed_out,
    unavailable_reason,
)
from countersign.infrastructure.projection_engine import held_locks
from countersign.infrastructure.projection_engine.rows import ProjectionStoppedError
from countersign.infrastructure.settings import Settings

log = logging.getLogger("countersign.worker")


@dataclass(frozen=True)
class Sweeper:
    """One sweeper: its name, the verb for what it did, and one pass (how many it did)."""

    name: str
    verb: str
    run: Callable[[], int]


#: Seconds between passes unless told otherwise (``countersign worker --interval``).
DEFAULT_INTERVAL = 10.0


#: Seconds between a notify pass's looks for new notifications while its attempts are slow.
NOTIFY_POLL = 1.0


def sweepers(
    cs: Countersign, every: float = DEFAULT_INTERVAL, stop: threading.Event | None = None
) -> list[Sweeper]:
    """The sweepers of this countersign, in the order a pass runs them, each recording its
    finished passes for a schedule of one pass every ``every`` seconds.

    The notify pass is bounded: it claims deliveries for ``every`` seconds at most (then the
    attempts under way end by their deadline), looks for new notifications every
    ``NOTIFY_POLL`` seconds while attempts are slow, and claims nothing more once ``stop`` is
    set. Unbounded, a club whose endpoints never answer (many of them, retried, their dead
    letters redelivered again and again) kept one pass going, and with it every club's
    reconciliation and expiry, and the other clubs' new notifications, waited."""
    sender = notification_sender(cs)
    poll = min(NOTIFY_POLL, every)

    def notify() -> int:
        return sender.run_once(stop=stop, poll=poll, budget=every).delivered

    work = [
        # Those it settled (an answer recorded, or the request replayed): not those it found
        # still uncertain or failed on, which the pass's line counted as settled.
        Sweeper("reconcile", "settled", lambda: _settled(cs.sweepers.reconcile())),
        Sweeper("expire", "expired", lambda: len(cs.sweepers.expire_due())),
        # The outbox: notifications of what the passes above (and every approval) recorded.
        Sweeper("notify", "delivered", notify),
    ]
    return [_recorded(cs, sweeper, timedelta(seconds=every)) for sweeper in work]


def _settled(reports: Sequence[SweepReport]) -> int:
    return sum(1 for report in reports if report.action in SETTLED)


#: What a reconciliation that settled its proposal did (``application.sweepers``).
SETTLED = frozenset({"settled", "replayed"})


class PassWaitedError(Exception):
    """Raised when a sweeper's pass waited in vain for the database (a lock another session
    held past COUNTERSIGN_DATABASE_TIMEOUT); its text names the lock, its holder and what to
    do, as ``projections run`` does (``held_locks``)."""


def _recorded(cs: Countersign, sweeper: Sweeper, every: timedelta) -> Sweeper:
    """The sweeper, recording each pass it finishes (a failed one is not recorded)."""

    def run() -> int:
        try:
            done = sweeper.run()
            cs.sweeper_passes.record(sweeper.name, cs.clock.now(), every)
        except Exception as error:
            if timed_out(error):
                raise PassWaitedError(_waited(cs, sweeper.name, error)) from error
            raise
        return done

    return Sweeper(sweeper.name, sweeper.verb, run)


def _waited(cs: Countersign, name: str, error: BaseException) -> str:
    """Who holds a lock on any table now: a pass touches many, and cannot say which waited."""
    return held_locks.gave_up(
        f"{name} pass",
        None,
        error,
        cs.sql.timeout,
        held_locks.holders(cs.sql, None),
        postgres=cs.sql.is_postgres,
        carries_on="The next pass tries again",
    )


@dataclass
class PassReport:
    """What one pass did: each sweeper's count, the ones that failed, how long it took."""

    number: int
    done: dict[str, int]
    failed: list[str]
    seconds: float
    #: The sweepers among ``failed`` that found the database unavailable.
    unavailable: list[str] = field(default_factory=list)


@dataclass
class Totals:
    """Everything the schedule did since it started."""

    passes: int = 0
    done: dict[str, int] = field(default_factory=dict)
    failures: int = 0


def run_pass(sweepers: list[Sweeper], number: int) -> PassReport:
    started = time.perf_counter()
    done: dict[str, int] = {}
    failed: list[str] = []
    unavailable: list[str] = []
    for sweeper in sweepers:
        try:
            done[sweeper.name] = sweeper.run()
        except PassWaitedError as waited:
            failed.append(sweeper.name)
            log.warning("%s", waited)
        except Exception as error:
            failed.append(sweeper.name)
            if database_unavailable(error):
                # A restart, a session ended, a lock held past the timeout: not a defect,
                # and what it left half done is the next pass's (docs/deploy.md).
                log.warning(
                    "%s pass: the database is unavailable (%s); the next pass tries again",
                    sweeper.name,
                    unavailable_reason(error),
                )
                unavailable.append(sweeper.name)
                continue
            if isinstance(error, ProjectionStoppedError | CorruptRecordError):
                # What it reads stopped (a later release's tables, an event it cannot
                # take), or a record it reads is damaged (the store's ERROR line of its
                # reference names the event): an operator's to act on, said in its words,
                # not as a defect.
                log.error("%s pass: %s; the next pass tries again", sweeper.name, error)
                log.debug("%s pass", sweeper.name, exc_info=True)
                continue
            correlation_id = new_correlation_id()
            log.exception("%s pass failed, correlation id %s", sweeper.name, correlation_id)
    return PassReport(number, done, failed, time.perf_counter() - started, unavailable)


def run_schedule(
    sweepers: list[Sweeper],
    stop: threading.Event,
    interval: float,
    on_pass: Callable[[PassReport], None] = lambda report: None,
    once: bool = False,
) -> Totals:
    """A pass of every sweeper, then ``interval`` seconds' pause, until ``stop`` is set (a
    pass under way finishes first: each of its steps is a decision that commits or not)."""
    totals = Totals(done={sweeper.name: 0 for sweeper in sweepers})
    out_of_reach: set[str] = set()  # the sweepers whose last pass found no database
    while not stop.is_set():
        report = run_pass(sweepers, totals.passes + 1)
        for name in sorted(out_of_reach & report.done.keys()):
            # Said once, as the projection runner says it: the outage's warnings end here.
            log.warning("%s pass: the database answers again; carrying on", name)
        out_of_reach = (out_of_reach - report.done.keys()) | set(report.unavailable)
        totals.passes += 1
        totals.failures += len(report.failed)
        for name, count in report.done.items():
            totals.done[name] += count
        on_pass(report)
        if once:
            break
        stop.wait(interval)
    return totals


class PassLog:
    """Logs a line for every pass that did something or failed, and one a minute to say the
    schedule is alive (``countersign.worker``)."""

    ALIVE_EVERY = 60.0

    def __init__(self, work: list[Sweeper], prefix: str = "worker", language: str = "en") -> None:
        self.verbs = {sweeper.name: sweeper.verb for sweeper in work}
        self.prefix = prefix
        self.language = language
        self.last_said = time.monotonic()

    def __call__(self, report: PassReport) -> None:
        did = self.summary(report.done)
        language, number = self.language, report.number
        if any(report.done.values()) or report.failed:
            failed = ", ".join(report.failed)
            failed = _FAILED.text(language, names=failed) if report.failed else ""
            said = _AND.text(language).join(part for part in (did, failed) if part)
            seconds = f"{report.seconds:.2f}"
            seconds = seconds.replace(".", ",") if language == "fr" else seconds
            log.info(_PASS.text(language, prefix=self.prefix, number=number, said=said, s=seconds))
        elif time.monotonic() - self.last_said >= self.ALIVE_EVERY:
            log.info(_NOTHING.text(language, prefix=self.prefix, number=number))
        else:
            return
        self.last_said = time.monotonic()

    def summary(self, done: dict[str, int]) -> str:
        """'reconcile settled 1, expire expired 0, notify delivered 0'; in French
        'reconcile : 1 réglée(s), expire : 0 expirée(s), notify : 0 livrée(s)'."""
        if self.language != "fr":
            return ", ".join(f"{name} {self.verbs[name]} {count}" for name, count in done.items())
        return ", ".join(
            f"{name} : {count} {_DID_FR.get(self.verbs[name], self.verbs[name])}"
            for name, count in done.items()
        )


#: A pass's lines, in the language of the command that runs the schedule.
_PASS = Localized(
    "{prefix}: pass {number}: {said} ({s} s)", "{prefix} : passage {number} : {said} ({s} s)"
)
_NOTHING = Localized(
    "{prefix}: pass {number}: nothing to do", "{prefix} : passage {number} : rien à faire"
)
_FAILED = Localized("failed: {names}", "en échec : {names}")
_AND = Localized("; ", " ; ")
#: What each sweeper did, as its line counts it (``Sweeper.verb``), in French.
_DID_FR = {"settled": "réglée(s)", "expired": "expirée(s)", "delivered": "livrée(s)"}


class InProcessSweepers:
    """The sweepers' schedule in a thread of this process, for ``countersign serve`` on the
    embedded database: started before serving, stopped after (the pass under way finishes,
    as ``countersign worker``'s does on SIGTERM). It wires its own countersign, so it shares
    no connection with the server's workers."""

    def __init__(
        self, settings: Settings, every: float = DEFAULT_INTERVAL, language: str = "en"
    ) -> None:
        self.settings = settings
        self.every = every
        self.language = language
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="countersign-sweepers")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        try:
            cs = bootstrap(self.settings)
        except Exception:
            log.exception("serve: the sweepers could not start; run countersign worker instead")
            return
        try:
            work = sweepers(cs, self.every, self._stop)
            run_schedule(
                work, self._stop, self.every, PassLog(work, "serve sweepers", self.language)
            )
        finally:
            cs.close()
