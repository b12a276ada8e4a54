"""The command line's general answers in the reader's language (``--language``, on every
command): not found, forbidden, busy, the usage and configuration errors, the internal ones,
and argparse's own usage errors, which are read before the command line is."""

from __future__ import annotations

import re

from countersign.application.errors import UnreadableEvent
from countersign.domain.contracts.presentation import Localized
from countersign.domain.storable_text import unstorable

#: An unknown club, member or id and another club's id answer alike (the application says
#: no more); the text says what to check.
NOT_FOUND = Localized(
    "Not found: check the club, the member and the id named (an unknown one and another club's "
    "answer alike; `countersign seed` lists the demo's).",
    "Introuvable : vérifiez le club, le membre et l'identifiant indiqués (un inconnu et celui "
    "d'un autre club reçoivent la même réponse ; `countersign seed` liste ceux de la démo).",
)
FORBIDDEN = Localized(
    "You do not have permission to do that.", "Vous n'avez pas la permission de faire cela."
)
BUSY = Localized(
    "the records this command acts on are busy with other changes; try again",
    "les enregistrements sur lesquels agit cette commande sont pris par d'autres "
    "modifications ; réessayez",
)
BUSY_LINE = Localized("Busy: {message}.", "Occupé : {message}.")
ERROR_LINE = Localized("error: {message}", "erreur : {message}")
REJECTED_LINE = Localized("Rejected: {message}.", "Refusé : {message}.")
NO_SUCH_OPERATION = Localized("no such operation", "aucune opération de ce nom")
OPERATIONS_LISTED = Localized(
    "`countersign operations` lists them", "`countersign operations` les liste"
)
UNAVAILABLE = Localized(
    "the database did not answer in time; try again in a few seconds",
    "la base de données n'a pas répondu à temps ; réessayez dans quelques secondes",
)
MAY_BE_RECORDED = Localized(
    ". A decision sent just before may have been recorded: look at the proposal "
    "(countersign show) before sending it again",
    ". Une décision envoyée juste avant a peut-être été enregistrée : regardez la "
    "proposition (countersign show) avant de l'envoyer de nouveau",
)
#: A stored record that does not read (altered, or damaged): for the operator or auditor at
#: the command line, what it is and where to look, beside the reference its log line carries.
DAMAGED = Localized(
    "a stored record this needs cannot be read (altered or damaged); nothing was changed. "
    "`countersign audit verify` names the damaged proposals; the log has this reference",
    "un enregistrement dont cette commande a besoin ne peut pas être lu (altéré ou "
    "endommagé) ; rien n'a été modifié. `countersign audit verify` nomme les propositions "
    "endommagées ; le journal porte cette référence",
)
#: Which stored event of the damaged record does not read, where the store found it
#: (``CorruptRecordError.event``): its place in the log, what is wrong, and what to do, as
#: ``audit verify`` and a stopped projection say it.
DAMAGED_EVENT = Localized(
    "The stored event at log position {position} (version {version}, {event} of {stream}) "
    "cannot be read: {problem}. Restore it from a backup (`countersign audit verify` names "
    "every damaged event); if it cannot be restored, `countersign projections skip "
    "{position} --reason TEXT` passes it in every projection, recorded",
    "L'événement enregistré à la position {position} du journal (version {version}, {event} "
    "de {stream}) ne peut pas être lu : {problem}. Restaurez-le depuis une sauvegarde "
    "(`countersign audit verify` nomme chaque événement endommagé) ; s'il ne peut pas être "
    "restauré, `countersign projections skip {position} --reason TEXTE` le fait passer dans "
    "chaque projection, en l'enregistrant",
)
#: What is wrong with it, by its code (``audit verify``'s), ``{error}`` the error's class.
DAMAGED_PROBLEMS = {
    "originator_version_malformed": Localized(
        "its version is not a whole number from 1",
        "sa version n'est pas un nombre entier à partir de 1",
    ),
    "version_gap": Localized(
        "the version before it is missing (version gap)",
        "la version qui le précède manque (trou dans les versions)",
    ),
    "event_unreadable": Localized("it does not decode ({error})", "il ne se décode pas ({error})"),
    "event_does_not_replay": Localized(
        "it does not apply to the events before it ({error})",
        "il ne s'applique pas aux événements qui le précèdent ({error})",
    ),
}


def damaged_event(event: UnreadableEvent, language: str) -> str:
    """``DAMAGED_EVENT`` of ``event`` in ``language``."""
    problem = DAMAGED_PROBLEMS[event.code].text(language, error=event.error)
    return DAMAGED_EVENT.text(
        language,
        position=event.position,
        version=event.version,
        event=event.topic.rpartition(":")[2],
        stream=event.stream_id,
        problem=problem,
    )


#: A command reads a projection this database does not hold as this release builds it: a
#: read sets nothing up (``common.catch_up``). ``names``: the projections, as the command
#: takes them.
NOT_SET_UP = Localized(
    "this command reads the projection {names}, which is not set up in this database yet; "
    "nothing was changed. Build it with `countersign projections rebuild {names}` (from the "
    "log, once), or keep `countersign projections run` going beside the application",
    "cette commande lit la projection {names}, qui n'est pas encore installée dans cette "
    "base ; rien n'a été modifié. Construisez-la avec `countersign projections rebuild "
    "{names}` (à partir du journal, une fois), ou faites tourner `countersign projections "
    "run` à côté de l'application",
)
BUILT_ELSEWHERE = Localized(
    "this command reads the projection {names}, whose tables another release of countersign "
    "built; nothing was changed. `countersign projections status` says what to do",
    "cette commande lit la projection {names}, dont les tables ont été construites par une "
    "autre version de countersign ; rien n'a été modifié. `countersign projections status` "
    "dit quoi faire",
)
INTERNAL_LINE = Localized("Internal error: {message}.", "Erreur interne : {message}.")
INTERNAL = Localized(
    "Internal error. Reference: {reference}", "Erreur interne. Référence : {reference}"
)


def chosen_language(words: list[str]) -> str:
    """The language a command line asks for (``--language fr``, ``--language=fr`` or an
    abbreviation argparse takes, ``--lang fr``), read before argparse reads it, so that its
    own usage errors are in that language too; English when none is named or it is not one."""
    chosen = "en"
    for i, word in enumerate(words):
        name, equals, value = word.partition("=")
        if len(name) < 6 or not "--language".startswith(name):
            continue
        if not equals:
            value = words[i + 1] if i + 1 < len(words) else ""
        chosen = value if value in ("en", "fr") else chosen
    return chosen


#: argparse's usage errors (Python 3.11 to 3.13 write them so), in French.
_ARGPARSE_FR: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), french)
    for pattern, french in (
        (r"the following arguments are required: (.*)", r"ces arguments sont requis : \1"),
        (r"one of the arguments (.*) is required", r"l'un des arguments \1 est requis"),
        (r"unrecognized arguments: (.*)", r"arguments non reconnus : \1"),
        (r"ambiguous option: (.*) could match (.*)", r"option ambiguë : \1 peut désigner \2"),
        (r"invalid choice: (.*) \(choose from (.*)\)", r"choix invalide : \1 (choisir parmi \2)"),
        (r"invalid (\w+) value: (.*)", r"valeur \1 invalide : \2"),
        (r"must be a whole number from (.*) to (.*)", r"doit être un nombre entier de \1 à \2"),
        (r"expected one argument", "une valeur est attendue"),
        (r"expected at most one argument", "une valeur au plus est attendue"),
        (r"expected at least one argument", "une valeur au moins est attendue"),
        (r"not allowed with argument (.*)", r"interdit avec l'argument \1"),
    )
)
_ARGUMENT = re.compile(r"argument ([^:]+): (.*)", re.DOTALL)


_PLUGIN_CHOICE = re.compile(r"argument --(section|operation): invalid choice")
#: After an unknown section or operation: a plug-in's are there only where it is enabled (a
#: new shell without COUNTERSIGN_PLUGINS refused a plug-in's section as a mere typo).
PLUGIN_CHOICE_HINT = Localized(
    "; a plug-in's sections and operations are offered only where COUNTERSIGN_PLUGINS names "
    "it (countersign operations lists what is enabled)",
    " ; les sections et opérations d'un module d'extension ne sont proposées que là où "
    "COUNTERSIGN_PLUGINS le nomme (countersign operations liste ce qui est activé)",
)


def usage_error(message: str, language: str) -> str:
    """argparse's usage error ``message`` in ``language``: in French, its known sentences
    translated (an option's own words, a type's refusal, are left as they are); after an
    unknown section or operation, where a plug-in's come from."""
    hint = PLUGIN_CHOICE_HINT.text(language) if _PLUGIN_CHOICE.match(message) else ""
    return _translated(message, language) + hint


def _translated(message: str, language: str) -> str:
    if language != "fr":
        return message
    prefix = ""
    named = _ARGUMENT.fullmatch(message)
    if named:
        prefix, message = f"argument {named.group(1)} : ", named.group(2)
    for pattern, french in _ARGPARSE_FR:
        if pattern.fullmatch(message):
            return prefix + pattern.sub(french, message)
    return prefix + message


#: The PostgreSQL server answered and refused this login (an unknown role or database, a wrong
#: password, no ``pg_hba.conf`` entry, SSL asked of a server without it): a setting to fix,
#: not a server out of reach. ``said``: the server's (or libpq's) own words.
LOGIN_REFUSED = Localized(
    "the PostgreSQL server answered but refused this connection ({said}): check the user, "
    "password, database name and sslmode in COUNTERSIGN_DATABASE_URL or --database",
    "le serveur PostgreSQL a répondu mais a refusé cette connexion ({said}) : vérifiez "
    "l'utilisateur, le mot de passe, le nom de la base et sslmode dans "
    "COUNTERSIGN_DATABASE_URL ou --database",
)


#: What to do next after an approve or decline refused (``cards.render_report``), where the
#: reason alone left the person without a way on: ``{show}`` the command that shows the
#: proposal, ``{actor}`` the member named.
NEXT_STEP = {
    "expired": Localized(
        "It expired before it was approved, and nothing changed. To go ahead, ask for a new "
        "proposal (the assistant, or countersign propose).",
        "Elle a expiré avant d'être approuvée, et rien n'a changé. Pour aller de l'avant, "
        "demandez une nouvelle proposition (à l'assistant, ou countersign propose).",
    ),
    "in_progress": Localized(
        "An approval is carrying it out right now; nothing more was done. See its outcome in "
        "a moment: {show}. Do not do it again another way: it may already have happened.",
        "Une approbation est en train de l'exécuter ; rien de plus n'a été fait. Voyez son "
        "résultat dans un instant : {show}. Ne la refaites pas autrement : elle a peut-être "
        "déjà eu lieu.",
    ),
    "not_found": Localized(
        "Nothing was changed. Check the id and the member named (an unknown id and another "
        "club's answer alike): countersign inbox --org ORG --as {actor} lists what awaits them.",
        "Rien n'a changé. Vérifiez l'identifiant et le membre indiqués (un identifiant inconnu "
        "et celui d'un autre club reçoivent la même réponse) : countersign inbox --org ORG "
        "--as {actor} liste ce qui les attend.",
    ),
    "forbidden": Localized(
        "Nothing was changed: your role in this club does not let you decide this kind of "
        "proposal. A manager holding its permission can, or grants it to you (countersign "
        "members set-permissions).",
        "Rien n'a changé : votre rôle dans ce club ne vous permet pas de décider ce genre de "
        "proposition. Un responsable qui en a la permission le peut, ou vous la donne "
        "(countersign members set-permissions).",
    ),
}


#: An argument holding bytes that are not UTF-8 (Python reads each as a lone surrogate) or a
#: NUL: no database, stored event or UTF-8 text holds it (``domain.storable_text``).
UNSTORABLE_ARGUMENT = Localized(
    "argument {position} holds bytes that are not UTF-8 text, which cannot be stored; "
    "write it in UTF-8",
    "l'argument {position} contient des octets qui ne sont pas du texte UTF-8, qui ne peuvent "
    "pas être enregistrés ; écrivez-le en UTF-8",
)


def unstorable_argument(words: list[str], language: str) -> str | None:
    """The usage error for the first argument no database stores, if one does; checked once,
    before any command reads its arguments."""
    for position, word in enumerate(words, start=1):
        if unstorable(word):
            return UNSTORABLE_ARGUMENT.text(language, position=position)
    return None
