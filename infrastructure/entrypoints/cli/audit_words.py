"""Every word ``audit verify`` and ``audit anchor`` say, in English and French
(``--language``): the commands' own lines, the chain's verdict, the seals', and what an anchor
covers and shows, written for an auditor, who must not be able to read a verdict as more than
it is (what the anchor covers, and whether it is signed, is said every time). The report's
--json document keeps its codes and English words, for programs. The texts are put together in
verify_texts.py (the chain, the seals) and anchors.py (the anchor)."""

from __future__ import annotations

from typing import Any

from countersign.domain.contracts.presentation import Localized
from countersign.infrastructure.entrypoints.cli.service_words import number

#: Faults listed on the terminal (``--json`` lists verify.LISTED and anchor.LISTED).
SHOWN = 20


def many(texts: tuple[Localized, Localized], count: int, language: str, **params: Any) -> str:
    """The first text for one, the second for any other count (French: for 0 and 1), with
    ``{count}`` its number as the language writes it."""
    one = count == 1 or (language == "fr" and count == 0)
    return texts[0 if one else 1].text(language, count=number(count, language), **params)


# -- the commands' own lines ------------------------------------------------------------------

SEALS_WITHOUT_KEYS = Localized(
    "--require-seals checks seals, and no seal keys are configured: set COUNTERSIGN_SEAL_KEYS "
    "(or COUNTERSIGN_SEAL_KEYS_FILE) as the deployment does",
    "--require-seals vérifie les sceaux, et aucune clé de scellement n'est configurée : "
    "définissez COUNTERSIGN_SEAL_KEYS (ou COUNTERSIGN_SEAL_KEYS_FILE) comme le fait le "
    "déploiement",
)
MAX_WITHOUT_ANCHOR = Localized(
    "--max-unanchored counts the events recorded after an anchor: give the anchor with "
    "--anchor FILE",
    "--max-unanchored compte les événements enregistrés après une ancre : donnez l'ancre avec "
    "--anchor FICHIER",
)
ANCHOR_EXISTS = Localized(
    "{path} exists: an anchor is kept, never replaced; name a new file (one a run, such as "
    "anchor-2026-12-07T0900.jsonl)",
    "{path} existe : une ancre se garde, elle n'est jamais remplacée ; nommez un nouveau "
    "fichier (un par exécution, comme anchor-2026-12-07T0900.jsonl)",
)
ANCHOR_NOT_CREATED = Localized(
    "cannot create {path} ({why}): choose a path this process may write",
    "impossible de créer {path} ({why}) : choisissez un chemin où ce processus peut écrire",
)
ANCHOR_MADE = Localized(
    "audit anchor: {proposals} and {streams} ({events}) at log position {head}, {signed}, "
    "written {where}; keep it where the database's writers cannot reach, and check the "
    "database against it with `countersign audit verify --anchor FILE`",
    "audit anchor : {proposals} et {streams} ({events}) à la position {head} du journal, "
    "{signed}, écrite {where} ; gardez-la hors de portée de ceux qui écrivent dans la base de "
    "données, et vérifiez la base de données par rapport à elle avec `countersign audit verify "
    "--anchor FICHIER`",
)
ANCHOR_SIGNED = Localized(
    "signed with seal key {key!r}", "signée avec la clé de scellement {key!r}"
)
ANCHOR_UNSIGNED = Localized(
    "unsigned (no seal keys are configured: it proves as much as where it is kept)",
    "non signée (aucune clé de scellement n'est configurée : elle prouve autant que l'endroit "
    "où elle est gardée)",
)
TO_FILE = Localized("to {path}", "dans {path}")
ON_STDOUT = Localized("on stdout", "sur la sortie standard")
SIGNED_WITHOUT_ANCHOR = Localized(
    "--require-signed-anchor demands a signed anchor: give it with --anchor FILE",
    "--require-signed-anchor exige une ancre signée : donnez-la avec --anchor FICHIER",
)
#: The progress lines' labels (``audit verify --anchor`` counts the events after it twice).
EVENTS_AFTER_IT = Localized(
    "audit verify --anchor: events after it", "audit verify --anchor : événements après elle"
)
STREAM_EVENTS_AFTER_IT = Localized(
    "audit verify --anchor: other streams' events after it",
    "audit verify --anchor : événements des autres flux après elle",
)

# -- the chain's verdict ----------------------------------------------------------------------

UNLINKED = Localized(
    " {count} events written before events' times were linked: their content is proved, their "
    "times are not.",
    " {count} événements écrits avant que les heures des événements soient liées : leur contenu "
    "est prouvé, leurs heures ne le sont pas.",
)
UNREAD = Localized(
    " Not proposals, not checked: streams of events countersign does not read, of {streams} "
    "(a plug-in that is not enabled?).",
    " Ni propositions ni vérifiés : des flux d'événements que countersign ne lit pas, de "
    "{streams} (un plug-in qui n'est pas activé ?).",
)
VERIFIED = Localized(
    "audit verify: OK, {events} of {proposals}; every hash-chain link holds.{more}",
    "audit verify : OK, {events} sur {proposals} ; chaque maillon de la chaîne de hachage "
    "tient.{more}",
)
BROKEN = (
    Localized(
        "audit verify: BROKEN: {count} proposal affected, each at its first broken link:",
        "audit verify : ROMPUE : {count} proposition touchée, à son premier maillon rompu :",
    ),
    Localized(
        "audit verify: BROKEN: {count} proposals affected, each at its first broken link:",
        "audit verify : ROMPUE : {count} propositions touchées, chacune à son premier maillon "
        "rompu :",
    ),
)
BROKEN_LINK = Localized(
    "  proposal {id} version {version}: {problem}",
    "  proposition {id} version {version} : {problem}",
)
#: A broken proposal none of whose events the database returns (``events_unreadable``).
UNREADABLE_AT_ALL = Localized(
    "  proposal {id}: its stored events cannot be read at all ({error}), so no event of it "
    "can be shown or checked: restore them from a backup",
    "  proposition {id} : ses événements enregistrés ne peuvent pas être lus du tout "
    "({error}), et aucun de ses événements ne peut être montré ni vérifié : restaurez-les "
    "depuis une sauvegarde",
)
MORE_ALL_LISTED = Localized(
    "  and {more} more (--json lists them)", "  et {more} de plus (--json les liste)"
)
MORE_FIRST_LISTED = Localized(
    "  and {more} more (--json lists the first ones)",
    "  et {more} de plus (--json liste les premières)",
)

# -- the seals --------------------------------------------------------------------------------

SEALED = (
    Localized(
        " Seals: {count} proposal sealed and verified",
        " Sceaux : {count} proposition scellée et vérifiée",
    ),
    Localized(
        " Seals: {count} proposals sealed and verified",
        " Sceaux : {count} propositions scellées et vérifiées",
    ),
)
UNSEALED_ALLOWED = (
    Localized(
        "; {count} without a seal (made before seal keys were configured, or its seal "
        "removed): proved by the chain alone, and refused at approval (--json lists it)",
        " ; {count} sans sceau (faite avant que les clés de scellement soient configurées, ou "
        "son sceau retiré) : prouvée par la seule chaîne, et refusée à l'approbation (--json "
        "la liste)",
    ),
    Localized(
        "; {count} without a seal (made before seal keys were configured, or their seal "
        "removed): proved by the chain alone, and refused at approval (--json lists them)",
        " ; {count} sans sceau (faites avant que les clés de scellement soient configurées, ou "
        "leur sceau retiré) : prouvées par la seule chaîne, et refusées à l'approbation (--json "
        "les liste)",
    ),
)
BADLY_SEALED = (
    Localized(
        "audit verify: BADLY SEALED: {count} proposal whose seal does not verify under the "
        "configured keys:",
        "audit verify : MAL SCELLÉE : {count} proposition dont le sceau ne se vérifie pas avec "
        "les clés configurées :",
    ),
    Localized(
        "audit verify: BADLY SEALED: {count} proposals whose seal does not verify under the "
        "configured keys:",
        "audit verify : MAL SCELLÉES : {count} propositions dont le sceau ne se vérifie pas "
        "avec les clés configurées :",
    ),
)
UNSEALED = (
    Localized(
        "audit verify: UNSEALED: {count} proposal without a seal, where every proposal must "
        "have one (--require-seals):",
        "audit verify : NON SCELLÉE : {count} proposition sans sceau, alors que chaque "
        "proposition doit en avoir un (--require-seals) :",
    ),
    Localized(
        "audit verify: UNSEALED: {count} proposals without a seal, where every proposal must "
        "have one (--require-seals):",
        "audit verify : NON SCELLÉES : {count} propositions sans sceau, alors que chaque "
        "proposition doit en avoir un (--require-seals) :",
    ),
)
PROPOSED_AT = Localized("  proposal {id}, proposed {at}", "  proposition {id}, proposée {at}")
AT_A_TIME = Localized("{time}", "le {time}")
AT_AN_UNREADABLE_TIME = Localized("at an unreadable time", "à une heure illisible")
#: A badly sealed proposal's problem in French, by its ``code`` (``audit/seals.py``; the
#: English is the report's ``problem``): (of the proposal's own seal, of an event's), with
#: ``{version}`` and ``{event}`` the event's, and ``{key}`` its key (``SEAL_KEY_FR``).
SEAL_PROBLEMS_FR = {
    "mismatch": (
        "la proposition ne correspond pas à son sceau{key}",
        "l'événement {version} ({event}) ne correspond pas à son sceau{key}",
    ),
    "unknown_key": (
        "la proposition est scellée avec {key}",
        "l'événement {version} ({event}) est scellé avec {key}",
    ),
    "unsealed": (
        "la proposition n'a pas de sceau",
        "l'événement {version} ({event}) n'a pas de sceau, après un événement scellé",
    ),
}
#: The key a seal names, by the problem's code: (named, where its id is not a key id's).
SEAL_KEY_FR = {
    "mismatch": (" (clé {key_id!r})", ""),
    "unknown_key": (
        "la clé {key_id!r}, qui n'est pas configurée",
        "un identifiant de clé illisible, qui n'est pas configuré",
    ),
    "unsealed": ("", ""),
}

#: The chain's problems by their code (``audit/verify.py`` ``PROBLEMS``, whose English --json
#: gives as ``problem``), with ``{error}`` the class of the error met.
LINK_PROBLEMS = {
    "events_unreadable": Localized(
        "stored events are unreadable ({error})",
        "les événements enregistrés sont illisibles ({error})",
    ),
    "event_unreadable": Localized(
        "stored event is unreadable ({error})", "l'événement enregistré est illisible ({error})"
    ),
    "version_gap": Localized(
        "event removed (version gap)", "événement retiré (trou dans les versions)"
    ),
    "link_mismatch": Localized(
        "content or time does not match its hash-chain link",
        "le contenu ou l'heure ne correspond pas à son maillon de la chaîne de hachage",
    ),
    "audit_copy_differs": Localized(
        "link differs from the audit trail's copy",
        "le maillon diffère de la copie de la piste d'audit",
    ),
    "audited_event_missing": Localized(
        "event removed (audited, now missing)", "événement retiré (audité, maintenant absent)"
    ),
    "event_does_not_replay": Localized(
        "stored event does not replay ({error})",
        "l'événement enregistré ne se rejoue pas ({error})",
    ),
    "passkey_missing": Localized(
        "approved without the passkey its policy required",
        "approuvée sans la clé d'accès que sa règle exigeait",
    ),
    "passkey_registered_after": Localized(
        "approved with a passkey registered only after the approval",
        "approuvée avec une clé d'accès enregistrée seulement après l'approbation",
    ),
    "passkey_other_membership": Localized(
        "approved with a passkey registered during another membership",
        "approuvée avec une clé d'accès enregistrée pendant une autre adhésion",
    ),
    "passkey_not_registered": Localized(
        "approved with a passkey the approver never registered",
        "approuvée avec une clé d'accès que l'approbateur n'a jamais enregistrée",
    ),
    "assertion_unreadable": Localized(
        "the passkey assertion is unreadable", "l'assertion de la clé d'accès est illisible"
    ),
    "assertion_not_bound": Localized(
        "the passkey assertion does not bind this proposal's digest",
        "l'assertion de la clé d'accès ne lie pas l'empreinte de cette proposition",
    ),
    "signature_invalid": Localized(
        "the passkey signature does not verify against the registered key",
        "la signature de la clé d'accès ne se vérifie pas avec la clé enregistrée",
    ),
    # A stored event's key that is no key (``malformed_keys``; lines of its own: key_words.py).
    "originator_id_malformed": Localized(
        "the stored event at log position {position} has a stream id that is not a UUID ({value})",
        "l'événement enregistré à la position {position} du journal a un identifiant de flux "
        "qui n'est pas un UUID ({value})",
    ),
    "originator_version_malformed": Localized(
        "the stored event at log position {position} has a version that is not a whole number "
        "from 1 ({value})",
        "l'événement enregistré à la position {position} du journal a une version qui n'est pas "
        "un nombre entier à partir de 1 ({value})",
    ),
}

# -- the anchor -------------------------------------------------------------------------------

COVERS_EVERY_STREAM = Localized(
    " Anchor: every stream as anchored at log position {position} (made {made_at}, {signed}): "
    "{proposals} and {streams} (clubs, members, rosters, orders, forms, policies: whatever the "
    "store held; {events}), none removed or changed since.",
    " Ancre : chaque flux tel qu'ancré à la position {position} du journal (faite le "
    "{made_at}, {signed}) : {proposals} et {streams} (clubs, membres, effectifs, commandes, "
    "formulaires, règles : tout ce que la base contenait ; {events}), aucun supprimé ni "
    "modifié depuis.",
)
COVERS_PROPOSALS_ONLY = Localized(
    " Anchor of format 1 (made by an earlier release): {proposals} as anchored at log "
    "position {position} (made {made_at}, {signed}). It COVERS THE PROPOSALS "
    "ONLY: no other stream (clubs, members, orders, forms, policies) was checked against it; "
    "make a new anchor (`countersign audit anchor`) to cover every stream.",
    " Ancre au format 1 (faite par une version antérieure) : {proposals} telles qu'ancrées "
    "à la position {position} du journal (faite le {made_at}, {signed}). "
    "Elle NE COUVRE QUE LES PROPOSITIONS : aucun autre flux (clubs, membres, commandes, "
    "formulaires, règles) n'a été vérifié ; faites une nouvelle ancre (`countersign audit "
    "anchor`) pour couvrir chaque flux.",
)
SIGNED = Localized("signed with key {key}", "signée avec la clé {key}")
SIGNED_RETIRED = Localized(
    "signed with key {key}, a retired key the configured keys still list (not the sealing "
    "key): it verifies while they list it",
    "signée avec la clé {key}, une clé retirée que les clés configurées listent encore (pas "
    "la clé de scellement) : elle se vérifie tant qu'elles la listent",
)
UNSIGNED = Localized(
    "UNSIGNED, accepted only because signed anchors are not required here: it proves no more "
    "than the place it was kept, since whoever can write there can make one; "
    "--require-signed-anchor refuses it",
    "NON SIGNÉE, acceptée seulement parce que les ancres signées ne sont pas exigées ici : "
    "elle ne prouve rien de plus que l'endroit où elle était gardée, puisque quiconque peut y "
    "écrire peut en faire une ; --require-signed-anchor la refuse",
)
UNSIGNED_WITH_KEYS = Localized(
    "UNSIGNED though seal keys are configured, accepted only because signed anchors are not "
    "required here: it proves no more than the place it was kept, since whoever can write "
    "there can make one; `audit anchor` signs new ones, and --require-signed-anchor or "
    "--require-seals refuses it",
    "NON SIGNÉE bien que des clés de scellement soient configurées, acceptée seulement parce "
    "que les ancres signées ne sont pas exigées ici : elle ne prouve rien de plus que "
    "l'endroit où elle était gardée, puisque quiconque peut y écrire peut en faire une ; "
    "`audit anchor` signe les nouvelles, et --require-signed-anchor ou --require-seals la "
    "refuse",
)
NOTHING_AFTER = Localized(
    " No event was recorded after it (up to log position {head}): it covers every one.",
    " Aucun événement n'a été enregistré après elle (jusqu'à la position {head} du journal) : "
    "elle les couvre tous.",
)
NO_PROPOSAL_EVENT_AFTER = Localized(
    " No proposal's event was recorded after it (up to log position {head}): it covers every one.",
    " Aucun événement de proposition n'a été enregistré après elle (jusqu'à la position "
    "{head} du journal) : elle les couvre tous.",
)
NOT_COVERED = Localized(
    " Not covered by it: {events} of {count}{made}, recorded after it (log positions {low} to "
    "{head}): an event among them removed or changed is shown by no anchor until the next one "
    "is made:",
    " Non couvert par elle : {events} sur {count}{made}, enregistré(s) après elle (positions "
    "{low} à {head} du journal) : un événement parmi eux supprimé ou modifié n'est montré par "
    "aucune ancre avant la suivante :",
)
#: A count, by its noun: (one, several), each with ``{count}`` (``many``).
EVENTS_COUNTED = (
    Localized("{count} event", "{count} événement"),
    Localized("{count} events", "{count} événements"),
)
PROPOSALS_COUNTED = (
    Localized("{count} proposal", "{count} proposition"),
    Localized("{count} proposals", "{count} propositions"),
)
STREAMS_COUNTED = (
    Localized("{count} other stream", "{count} autre flux"),
    Localized("{count} other streams", "{count} autres flux"),
)
MADE_SINCE = Localized(", {new} of them made since", ", dont {new} créé(s) depuis")
MADE_AFTER = Localized("made after it ({events})", "créé après elle ({events})")
AFTER = Localized("{events} after it", "{events} après elle")
ONE_EVENT = Localized("event {first}", "événement {first}")
EVENTS = Localized("events {first} to {last}", "événements {first} à {last}")
MORE = Localized(
    "  and {more} more (--json lists the first {listed})",
    "  et {more} de plus (--json liste les {listed} premiers)",
)
PROPOSAL_ITEM = Localized("  proposal {id}: {said}", "  proposition {id} : {said}")
STREAM_ITEM = Localized("  {kind} stream {id}: {said}", "  flux {kind} {id} : {said}")
NOT_AS_ANCHORED = Localized(
    "audit verify: NOT AS ANCHORED: {count} of the anchor made {made_at} (log position "
    "{position}) removed, cut back or rewritten since:",
    "audit verify : PAS COMME ANCRÉ : {count} de l'ancre faite le {made_at} (position "
    "{position} du journal) supprimée(s), tronquée(s) ou réécrite(s) depuis :",
)
STREAMS_NOT_AS_ANCHORED = Localized(
    "audit verify: NOT AS ANCHORED: {count} of the anchor made {made_at} (log position "
    "{position}) with an event removed, changed or added since, each named at its first:",
    "audit verify : PAS COMME ANCRÉ : {count} de l'ancre faite le {made_at} (position "
    "{position} du journal) dont un événement a été supprimé, modifié ou ajouté depuis, "
    "chacun nommé au premier :",
)
ADDED_BEFORE = Localized(
    "audit verify: NOT AS ANCHORED: {events} at or before the anchor's position that it does "
    "not hold (written in since, at a position from before it; the anchor made {made_at}, "
    "log position {position})",
    "audit verify : PAS COMME ANCRÉ : {events} à la position de l'ancre ou avant qu'elle ne "
    "contient pas (écrit depuis, à une position d'avant elle ; l'ancre faite le {made_at}, "
    "position {position} du journal)",
)
#: An event ``ADDED_BEFORE`` counts, where it is (after its stream's anchored last event,
#: or in a stream the anchor does not hold).
ADDED_AFTER = Localized(
    "event {version} ({event}) at log position {position}, after its anchored event {anchored}",
    "événement {version} ({event}) à la position {position} du journal, après son événement "
    "ancré {anchored}",
)
ADDED_NEW_STREAM = Localized(
    "event {version} ({event}) at log position {position}, in a stream the anchor does not hold",
    "événement {version} ({event}) à la position {position} du journal, dans un flux que "
    "l'ancre ne contient pas",
)
UNANCHORED_FAULT = Localized(
    "audit verify: UNANCHORED: {events} events {what} recorded after the anchor made "
    "{made_at} (log position {position}), more than --max-unanchored {limit}: make an anchor "
    "now (`countersign audit anchor`), keep it, and check against it; anchor more often if "
    "this recurs.",
    "audit verify : NON ANCRÉ : {events} événements {what} enregistrés après l'ancre faite le "
    "{made_at} (position {position} du journal), plus que --max-unanchored {limit} : faites "
    "une ancre maintenant (`countersign audit anchor`), gardez-la et vérifiez avec elle ; "
    "ancrez plus souvent si cela se reproduit.",
)
OF_PROPOSALS = Localized("of proposals", "des propositions")
OF_OTHER_STREAMS = Localized("of other streams", "des autres flux")
VERIFY_PREFIX = Localized("audit verify:", "audit verify :")

#: A proposal not as anchored, by its problem (the JSON's ``text`` is the English).
PROPOSAL_PROBLEMS = {
    "removed": Localized(
        "removed: no stream (anchored at version {anchored_version}, {anchored_event})",
        "supprimée : plus aucun flux (ancrée à la version {anchored_version}, {anchored_event})",
    ),
    "cut_back": Localized(
        "cut back: {gone} removed, the last anchored {anchored_event} (the stream now ends "
        "at version {stored_version})",
        "tronquée : {gone} supprimé(s), le dernier ancré {anchored_event} (le flux s'arrête "
        "maintenant à la version {stored_version})",
    ),
    "rewritten": Localized(
        "rewritten: its event {anchored_version} ({anchored_event}) or one before it is not "
        "as anchored (changed, or removed and made again)",
        "réécrite : son événement {anchored_version} ({anchored_event}) ou un précédent n'est "
        "pas tel qu'ancré (modifié, ou supprimé et refait)",
    ),
}
#: Another stream not as anchored, at its first event that is not (``version``).
STREAM_PROBLEMS = {
    "removed": Localized(
        "removed: no stream (anchored up to version {anchored_version})",
        "supprimé : plus aucun flux (ancré jusqu'à la version {anchored_version})",
    ),
    "cut_back": Localized(
        "cut back: its events from version {version} on are removed (the stream now ends at "
        "version {stored_version})",
        "tronqué : ses événements à partir de la version {version} sont supprimés (le flux "
        "s'arrête maintenant à la version {stored_version})",
    ),
    "gap": Localized(
        "event {version} removed (the stream has a gap there)",
        "événement {version} supprimé (le flux a un trou à cet endroit)",
    ),
    "changed": Localized(
        "event {version} ({stored_event}) changed: it is not the event anchored",
        "événement {version} ({stored_event}) modifié : ce n'est pas l'événement ancré",
    ),
    "changed_among": Localized(
        "an event from version {from_version} to {version} changed: together they are not the "
        "events anchored",
        "un événement des versions {from_version} à {version} modifié : ensemble, ils ne sont "
        "pas les événements ancrés",
    ),
    "added": Localized(
        "event {version} ({stored_event}) added where the anchor has none",
        "événement {version} ({stored_event}) ajouté là où l'ancre n'en a aucun",
    ),
}

REFUSED_UNSIGNED = Localized(
    "--anchor: {name} is unsigned, and every anchor must be signed here (--require-seals, or "
    "COUNTERSIGN_SEALS_REQUIRED=true): whoever can write where an unsigned anchor is kept can "
    "make one of a store cut back. Check against an anchor `countersign audit anchor` wrote "
    "with the seal keys configured (it signs it); an unsigned one made before the keys can "
    "only be checked without --require-seals and with COUNTERSIGN_SEALS_REQUIRED=false",
    "--anchor : {name} n'est pas signée, et chaque ancre doit l'être ici (--require-seals, ou "
    "COUNTERSIGN_SEALS_REQUIRED=true) : quiconque peut écrire là où une ancre non signée est "
    "gardée peut en faire une d'une base tronquée. Vérifiez avec une ancre que `countersign "
    "audit anchor` a écrite avec les clés de scellement configurées (elle la signe) ; une "
    "ancre non signée faite avant les clés ne peut être vérifiée que sans --require-seals et "
    "avec COUNTERSIGN_SEALS_REQUIRED=false",
)
REFUSED_UNSIGNED_FLAG = Localized(
    "--anchor: {name} is UNSIGNED, and --require-signed-anchor demands a signed anchor: "
    "whoever can write where an unsigned anchor is kept can make one of a store cut back. "
    "Check against an anchor `countersign audit anchor` wrote with the seal keys configured "
    "(it signs it)",
    "--anchor : {name} n'est PAS SIGNÉE, et --require-signed-anchor exige une ancre signée : "
    "quiconque peut écrire là où une ancre non signée est gardée peut en faire une d'une base "
    "tronquée. Vérifiez avec une ancre que `countersign audit anchor` a écrite avec les clés "
    "de scellement configurées (elle la signe)",
)
