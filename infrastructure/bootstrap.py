"""The one place that wires everything. Tests pass fakes; production takes the defaults."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from uuid import UUID

from countersign.application.assistant.service import AssistantService
from countersign.application.assistant.toolbox import AgentToolbox
from countersign.application.assistant.turn_limits import TurnLimiter, TurnSlots
from countersign.application.audit import AuditService
from countersign.application.cards import ProposalCards
from countersign.application.club import ClubService
from countersign.application.notifications import NotificationsService
from countersign.application.passkeys import PasskeyService, PasskeyStep
from countersign.application.plugins import Plugin, providers_of
from countersign.application.policies import PolicyService
from countersign.application.ports import (
    ChatModel,
    Clock,
    EffectProvider,
    FaultPoints,
    ModelReply,
)
from countersign.application.proposal_access import ProposalAccess
from countersign.application.proposal_limit import ProposalLimiter, RateLimit
from countersign.application.proposals import ProposalService
from countersign.application.settlement import Settlement
from countersign.application.sweepers import Sweepers
from countersign.application.token_write_limit import TokenWriteLimiter
from countersign.infrastructure.adapters.clock import SystemClock
from countersign.infrastructure.adapters.crash_points import fault_points_from_env
from countersign.infrastructure.adapters.email_sandbox import SandboxEmailProvider
from countersign.infrastructure.adapters.payment_sandbox import SandboxPaymentProvider
from countersign.infrastructure.identity.passkeys import WebAuthnCeremonies
from countersign.infrastructure.observability.counting import MeteredProposalService, counted
from countersign.infrastructure.observability.outages import OutageLog
from countersign.infrastructure.persistence.app import CountersignApplication
from countersign.infrastructure.persistence.event_store import EventSourcedStore
from countersign.infrastructure.persistence.presence import prepare
from countersign.infrastructure.persistence.sql import SqlDatabase
from countersign.infrastructure.persistence.unavailable import database_unavailable
from countersign.infrastructure.plugins import enable
from countersign.infrastructure.projection_engine.in_place import TablesInPlace
from countersign.infrastructure.projection_engine.open_work import ProjectedOpenWork
from countersign.infrastructure.projection_engine.read_models import ReadModels
from countersign.infrastructure.projection_engine.runner import ProjectionRunner
from countersign.infrastructure.proposal_counts import (
    PASSKEY_COUNTS,
    TOKEN_WRITE_COUNTS,
    TURN_COUNTS,
    SqlProposalCounts,
)
from countersign.infrastructure.settings import Database, Settings, SettingsError, plugin_names
from countersign.infrastructure.sweeper_passes import SqlSweeperPasses
from countersign.projections import PROJECTIONS
from countersign.projections.base import Projection


@dataclass
class Countersign:
    """A wired countersign: its services and the adapters behind them."""

    settings: Settings
    database: Database
    app: CountersignApplication
    store: EventSourcedStore
    sql: SqlDatabase
    sandbox: SandboxPaymentProvider
    email_sandbox: SandboxEmailProvider
    clock: Clock
    proposals: ProposalService  # propose, revise, approve, decline
    cards: ProposalCards  # proposals as their reviewers read them
    sweepers: Sweepers  # expire and reconcile
    club: ClubService
    audit: AuditService
    read_models: ReadModels
    assistant: AssistantService
    access: ProposalAccess  # who may see and act on a proposal: what the entry points call
    policies: PolicyService
    toolbox: AgentToolbox  # the assistants' tools for an outside agent (the MCP server)
    notifications: NotificationsService  # webhook endpoints, members' languages, recipients
    passkeys: PasskeyService  # members' passkeys (the account page)
    token_writes: TokenWriteLimiter  # an API token's changes to club settings, per while
    sweeper_passes: SqlSweeperPasses  # where the sweepers' schedules record their passes
    plugins: tuple[Plugin, ...]  # the plug-ins COUNTERSIGN_PLUGINS enabled
    #: The projections whose tables this process's requests found in place (``catch_up``).
    tables_in_place: TablesInPlace = field(default_factory=TablesInPlace)
    #: The database-unavailable warnings of its requests, each reason said once a while.
    outages: OutageLog = field(default_factory=OutageLog)

    def audit_interaction(self, interaction_id: str) -> list[dict[str, object]]:
        """The tool calls of one conversation, as recorded (arguments redacted)."""
        events = self.store.history(UUID(interaction_id))
        return [
            {
                "name": e.fields["name"],
                "arguments": e.fields["arguments"],
                "outcome": e.fields["outcome"],
            }
            for e in events
            if e.type == "ToolCalled"
        ]

    def one_request(self) -> AbstractContextManager[None]:
        """The reads of one request (an entry point wraps each request it answers): an
        aggregate read outside a decision is queried once per request
        (``EventSourcedStore.one_request``)."""
        return self.store.one_request()

    def read_along(self, aggregate_id: UUID) -> None:
        """This request's next query also fetches this aggregate
        (``EventSourcedStore.read_along``)."""
        self.store.read_along(aggregate_id)

    def projection_runners(
        self,
        names: list[str] | None = None,
        batch_size: int | None = None,
        *,
        take_over: bool = False,
        set_up: bool = True,
    ) -> list[ProjectionRunner]:
        """Runners for the named projections (all of them by default), reading ``batch_size``
        events a batch (by default ``ProjectionRunner.BATCH_SIZE``). ``take_over``: tables a
        later release built are dropped too, for an operator's rebuild
        (``infrastructure/projection_engine/releases.py``). ``set_up=False``: their tables are
        neither made nor claimed, for a command that only decodes events with them."""
        _check_names(names)
        return [
            ProjectionRunner(
                self.app,
                self.sql,
                PROJECTIONS[name],
                batch_size=batch_size,
                take_over=take_over,
                set_up=set_up,
            )
            for name in (names or list(PROJECTIONS))
        ]

    def projections(self, names: list[str] | None = None) -> list[Projection]:
        """The named projections (all of them by default), as this release's code has them:
        for a report that reads their tables without setting them up."""
        _check_names(names)
        return [PROJECTIONS[name] for name in (names or list(PROJECTIONS))]

    def catch_up(self, names: Sequence[str]) -> None:
        """Bring the named projections up to the log, for a request that reads them next (a
        page, the API's inbox). Their tables are made, or checked, by this process's first
        such call only (``TablesInPlace``): later ones take no schema lock and send no DDL,
        one statement reading each position (and checking the tables are still the ones
        made) and one reading the log after it, when nothing is new."""
        _check_names(list(names))
        for name in names:
            runner = ProjectionRunner(
                self.app, self.sql, PROJECTIONS[name], in_place=self.tables_in_place
            )
            runner.catch_up()

    def close(self) -> None:
        self.sql.close()
        self.app.close()


def _check_names(names: list[str] | None) -> None:
    unknown = sorted(set(names or []) - set(PROJECTIONS))
    if unknown:
        raise SettingsError(
            f"unknown projection {', '.join(unknown)}; known: {', '.join(PROJECTIONS)}"
        )


def enable_plugins(names: tuple[str, ...] | None = None) -> tuple[Plugin, ...]:
    """Enable the deployment's plug-ins (``COUNTERSIGN_PLUGINS``, or ``names``) in this
    process: the one place every process does it (``bootstrap`` calls it; the command line
    also before it builds its parser, whose choices list the operations and sections). The
    same set again costs nothing. SettingsError, in one line, when a named plug-in is not
    installed, cannot be loaded, or breaks a registry rule."""
    return enable(plugin_names() if names is None else names)


def bootstrap(
    settings: Settings | None = None,
    *,
    database_url: str | None = None,
    create: bool = True,
    clock: Clock | None = None,
    providers: Mapping[str, EffectProvider] | None = None,
    model: ChatModel | None = None,
    faults: FaultPoints | None = None,
) -> Countersign:
    """Wire countersign for the configured database; any port can be replaced.

    ``providers``: effect providers by the name contracts use, added to (or replacing) the
    defaults: ``"payments"``, the payment sandbox, ``"email"``, the e-mail delivery sandbox,
    and the enabled plug-ins' own.

    ``settings.plugins`` (``COUNTERSIGN_PLUGINS``): the plug-ins enabled first
    (``enable_plugins``).

    ``faults``: where the approve path may be stopped; by default none, unless the
    ``COUNTERSIGN_CRASH_AT`` variable names a crash point (crash tests, docs/faults.md).

    ``create``: make countersign's tables (and a SQLite file, in its folder) where they are
    missing. With False, a database that does not hold countersign yet raises
    NoDatabaseError, saying what to do, and nothing is created (the command line's way for
    every command but ``seed``, ``demo`` and ``--create``)."""
    settings = settings or Settings.from_env(database_url)
    plugins = enable_plugins(settings.plugins)
    database = Database.parse(settings.database_url)
    # On PostgreSQL, each connection's statements wait at most COUNTERSIGN_DATABASE_TIMEOUT
    # seconds for a lock, or run as long (persistence/pg_waits.py).
    sql = SqlDatabase(database, timeout=settings.database_timeout)
    try:
        prepare(database, create, sql)
        # Processes starting together would race to create the event store's tables and
        # functions.
        with sql.schema_lock():
            env = database.eventsourcing_env(settings.database_timeout, settings.database_pool_idle)
            app = CountersignApplication(env=env)
    except BaseException:
        sql.close()  # the connection it asked and took the lock on (a start that failed)
        raise
    store = EventSourcedStore(app, seals=settings.seal_keys)
    sandbox = SandboxPaymentProvider(sql)
    email_sandbox = SandboxEmailProvider(sql)
    clock = clock or SystemClock()
    ceremonies = WebAuthnCeremonies(sql, settings.webauthn_rp_id, settings.webauthn_origins)
    sweeper_passes = SqlSweeperPasses(sql)
    lease = timedelta(seconds=settings.reconcile_lease_seconds)
    settlement = Settlement(
        store,
        counted(
            {
                "payments": sandbox,
                "email": email_sandbox,
                **providers_of(plugins),
                **(providers or {}),
            }
        ),
        faults or fault_points_from_env(),
    )
    # Metered: approval latency and every provider call are counted once the process serves
    # its metrics (observability/counting.py).
    proposals = MeteredProposalService(
        store,
        settlement,
        clock,
        ttl=timedelta(seconds=settings.proposal_ttl_seconds),
        passkeys=PasskeyStep(ceremonies, clock),
        seals=settings.seal_keys,
    )
    cards = ProposalCards(
        store, clock, lease=lease, passes=sweeper_passes, seals=settings.seal_keys
    )
    limiter = ProposalLimiter(
        SqlProposalCounts(sql), RateLimit.parse(settings.proposal_limit), clock
    )
    assistant = AssistantService(
        store,
        proposals,
        model or LazyChatModel(settings),
        limiter=limiter,
        slots=TurnSlots(settings.turns_per_club),
        turn_limiter=TurnLimiter(
            SqlProposalCounts(sql, TURN_COUNTS), RateLimit.parse(settings.turn_limit), clock
        ),
    )
    audit = AuditService(
        store, {package: p.namespace for p in plugins for package in p.event_packages}
    )
    access = ProposalAccess(store, proposals, cards, audit, limiter=limiter)
    return Countersign(
        settings=settings,
        database=database,
        app=app,
        store=store,
        sql=sql,
        sandbox=sandbox,
        email_sandbox=email_sandbox,
        clock=clock,
        proposals=proposals,
        cards=cards,
        sweepers=Sweepers(
            store,
            settlement,
            ProjectedOpenWork(app, sql),
            clock,
            lease=lease,
            stops_the_pass=database_unavailable,
            seals=settings.seal_keys,
        ),
        club=ClubService(store),
        audit=audit,
        read_models=ReadModels(sql),
        assistant=assistant,
        access=access,
        policies=PolicyService(store),
        toolbox=AgentToolbox(store, access),
        notifications=NotificationsService(store),
        passkeys=PasskeyService(
            store,
            ceremonies,
            clock,
            SqlProposalCounts(sql, PASSKEY_COUNTS),
            RateLimit.parse(settings.passkey_change_limit),
        ),
        token_writes=TokenWriteLimiter(
            SqlProposalCounts(sql, TOKEN_WRITE_COUNTS),
            RateLimit.parse(settings.token_write_limit),
            clock,
        ),
        sweeper_passes=sweeper_passes,
        plugins=plugins,
    )


class LazyChatModel:
    """Builds the configured model on first use: most commands never talk to a model, and the
    openai client is a large import (it matters for the 60 MB client budget)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._model: ChatModel | None = None

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply:
        if self._model is None:
            self._model = chat_model(self.settings)
        return self._model.complete(messages, tools)


def chat_model(settings: Settings) -> ChatModel:
    """The offline stand-in unless COUNTERSIGN_MODEL names a model of a real endpoint.

    A real endpoint is configured the openai client's way: OPENAI_API_KEY and, for any
    OpenAI-compatible server, OPENAI_BASE_URL.
    """
    import openai
    from countersign.infrastructure.adapters.openai_model import OpenAIChatModel
    from countersign.infrastructure.adapters.scripted_model import ScriptedEndpoint, StandInPolicy

    if settings.model == "scripted":
        return OpenAIChatModel(ScriptedEndpoint(StandInPolicy()).client(), "scripted")
    if not os.environ.get("OPENAI_API_KEY"):
        raise SettingsError(
            f"COUNTERSIGN_MODEL={settings.model} needs OPENAI_API_KEY (and OPENAI_BASE_URL for "
            "a non-OpenAI endpoint); or set COUNTERSIGN_MODEL=scripted to run offline"
        )
    return OpenAIChatModel(openai.OpenAI(max_retries=0, timeout=30.0), settings.model)
