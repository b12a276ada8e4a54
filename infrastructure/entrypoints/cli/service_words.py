"""What the services and the data's commands say, in English and French (``--language``):
``serve``, ``worker`` and ``projections run`` as they start and stop, ``projections status``
and ``rebuild``, and the progress of the long commands. A --json document's words and codes
stay as they are, for programs (``audit verify`` says its own in ``audit_words``)."""

from __future__ import annotations

from typing import Any

from countersign.domain.contracts.presentation import Localized

COLON = Localized(": ", " : ")


def number(count: int, language: str) -> str:
    """``count`` with its thousands grouped as each language writes them (1,234; 1 234)."""
    grouped = f"{count:,}"
    return grouped.replace(",", "\u202f") if language == "fr" else grouped


def plural(count: int, one: Localized, many: Localized, language: str) -> str:
    """``one`` or ``many`` for ``count`` (French takes the singular for 0 and 1)."""
    singular = count in (0, 1) if language == "fr" else count == 1
    return (one if singular else many).text(language)


# -- serve ------------------------------------------------------------------------------------

SERVING = Localized(
    "countersign: serving on http://{host}:{port} with {workers} process{es} (pages at /, API "
    "under /api/v1, OpenAPI at /openapi.json, /healthz, /readyz, /metrics); secure cookies "
    "{secure}; forwarded headers trusted from {trusted}; Ctrl-C stops",
    "countersign : en service sur http://{host}:{port} avec {workers} processus (les pages "
    "sous /, l'API sous /api/v1, OpenAPI à /openapi.json, /healthz, /readyz, /metrics) ; "
    "cookies sécurisés {secure} ; en-têtes transférés acceptés de {trusted} ; Ctrl-C arrête",
)
ON = Localized("on", "activés")
OFF = Localized("off", "désactivés")
NOBODY = Localized("nobody", "personne")
SWEEPING = Localized(
    "countersign: the sweepers (reconcile, expire, notify) run in this process every {every} s; "
    "--no-sweepers leaves them to countersign worker",
    "countersign : les balayeurs (reconcile, expire, notify) tournent dans ce processus toutes "
    "les {every} s ; --no-sweepers les laisse à countersign worker",
)
NOT_SWEEPING = Localized(
    "countersign: no sweeper runs in this process: start `countersign worker` beside it, or "
    "lost provider answers are never settled, overdue proposals never expire and nobody is "
    "notified (or serve with --sweepers)",
    "countersign : aucun balayeur ne tourne dans ce processus : démarrez `countersign worker` "
    "à côté, sinon les réponses perdues des fournisseurs ne sont jamais réglées, les "
    "propositions échues n'expirent jamais et personne n'est prévenu (ou servez avec "
    "--sweepers)",
)
SERVER_STOPPED = Localized("countersign: server stopped.", "countersign : serveur arrêté.")
MCP_STOPPED = Localized("countersign: MCP server stopped.", "countersign : serveur MCP arrêté.")
NOT_STARTED = Localized(
    "the server did not start; its log above says why",
    "le serveur n'a pas démarré ; son journal ci-dessus dit pourquoi",
)

# -- worker -----------------------------------------------------------------------------------

WORKER_RUNNING = Localized(
    "worker: running {names} every {every} s (SIGTERM or Ctrl-C stops)",
    "worker : {names} tournent toutes les {every} s (SIGTERM ou Ctrl-C arrête)",
)
WORKER_STOPPED = Localized(
    "worker: stopped cleanly after {passes} pass(es); {summary}",
    "worker : arrêté proprement après {passes} passage(s) ; {summary}",
)
# -- notify run ------------------------------------------------------------------------------

NOTIFY_RUNNING = Localized(
    "notify: delivering the outbox every {every} s (Ctrl-C stops)",
    "notify : livraison de la boîte d'envoi toutes les {every} s (Ctrl-C arrête)",
)
NOTIFY_PASS = Localized("notify: {line}", "notify : {line}")
NOTIFY_STOPPED = Localized("notify: stopped cleanly; {line}", "notify : arrêté proprement ; {line}")
NOTIFY_LINE_FR = (
    "{fanned_out} nouvelle(s) livraison(s) ; {attempted} tentée(s) : {delivered} livrée(s), "
    "{retrying} à réessayer, {dead} morte(s)"
)
NOTIFY_SKIPPED_FR = ", {skipped} ignorée(s) (plus en attente)"


def notify_line(report: Any, language: str) -> str:
    """A notify pass's counts (``PassReport``), in the reader's language."""
    if language != "fr":
        return str(report.line())
    counts = {name: getattr(report, name) for name in NOTIFY_COUNTS}
    line = NOTIFY_LINE_FR.format(**counts)
    return line + (NOTIFY_SKIPPED_FR.format(**counts) if report.skipped else "")


NOTIFY_COUNTS = ("fanned_out", "attempted", "delivered", "retrying", "dead", "skipped")


# -- projections ------------------------------------------------------------------------------

FOLLOWING = Localized(
    "projections: following the log for {names} (Ctrl-C stops)",
    "projections : suivi du journal pour {names} (Ctrl-C arrête)",
)
PROCESSED = Localized("projections: {counts}", "projections : {counts}")
PROJECTIONS_STOPPED = Localized(
    "projections: stopped cleanly; {counts}", "projections : arrêtées proprement ; {counts}"
)
REBUILDING = Localized("rebuild {names}", "reconstruction de {names}")
REBUILT = Localized(
    "rebuilt {names} from {events} events in {seconds} s ({rate} events/s, the log read once "
    "for all)",
    "{names} reconstruite(s) à partir de {events} événements en {seconds} s ({rate} "
    "événements/s, le journal lu une seule fois pour toutes)",
)
STATUS_LINE = Localized(
    "{name} position {position}  lag {lag}", "{name} position {position}  retard {lag}"
)
SKIPPED_LINE = Localized(
    "every projection passes notification {position} ({event}), skipped by {who} at {at}: {reason}",
    "chaque projection passe la notification {position} ({event}), sautée par {who} le {at} : "
    "{reason}",
)
SKIP_RECORDED = Localized(
    "every projection passes notification {position} ({event}) from now on, recorded: "
    "{reason}. 'countersign projections status' lists it; the stopped runners carry on at "
    "their next pass",
    "chaque projection passe désormais la notification {position} ({event}), c'est "
    "enregistré : {reason}. 'countersign projections status' l'indique ; les exécutants "
    "arrêtés reprennent à leur prochain passage",
)
#: ``projections status``'s note on tables this release's code did not build, by their state
#: (``projection_engine/standing.py`` writes the English one, which --json keeps).
STATUS_NOTES_FR = {
    "not_built": (
        "pas encore construite : `countersign projections run` (ou une page qui la lit) la "
        "construit à partir du journal"
    ),
    "built_by_later_release": (
        "construite par une version ultérieure (v{theirs} ; celle-ci a v{ours}) ; cette "
        "version n'y touchera pas. Sa position est celle de la version ultérieure. Pour revenir "
        "à cette version, arrêtez les processus de la version ultérieure, puis lancez "
        "`countersign projections rebuild {name}` avec celle-ci"
    ),
    "built_by_other_build": (
        "construite par une autre compilation de countersign, de même version de projection "
        "(v{ours}) mais avec d'autres tables : un processus de cette compilation déjà lancé ne "
        "s'en sert pas, un qui démarre la supprime et la reconstruit pour son propre code. "
        "N'en faites tourner qu'une, ou lancez `countersign projections rebuild {name}` avec "
        "celle-ci"
    ),
    "built_by_earlier_release": (
        "construite par une version antérieure{theirs_said} : cette version supprime ses "
        "tables et les reconstruit à partir du journal à sa prochaine ouverture (`countersign "
        "projections run`, une page) ; `countersign projections rebuild {name}` le fait tout "
        "de suite, en montrant sa progression"
    ),
}
#: One row, then any other count (French: 0 and 1 take the singular).
EXPORTED = (
    Localized("audit export: {count} row", "audit export : {count} ligne"),
    Localized("audit export: {count} rows", "audit export : {count} lignes"),
)
NO_SUCH_CLUB = Localized("no club is named {name!r}", "aucun club ne s'appelle {name!r}")
NOT_A_PROPOSAL_ID = Localized(
    "{value!r} is not a proposal id", "{value!r} n'est pas un identifiant de proposition"
)

# -- progress ---------------------------------------------------------------------------------

#: The units the long commands count, (plural, singular) in each language.
UNITS = {
    "events": (Localized("events", "événements"), Localized("event", "événement")),
    "proposals": (Localized("proposals", "propositions"), Localized("proposal", "proposition")),
    "snapshots": (
        Localized("snapshots", "instantanés"),
        Localized("snapshot", "instantané"),
    ),
    "log positions": (
        Localized("log positions", "positions du journal"),
        Localized("log position", "position du journal"),
    ),
}
