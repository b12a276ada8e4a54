"""What ``audit anchor`` and ``audit verify --anchor`` say of an anchor, in English and French
(``--language``): written for an auditor, who must not be able to read a verdict as more than
it is (what the anchor covers, and whether it is signed, is said every time)."""

from __future__ import annotations

from countersign.domain.contracts.presentation import Localized

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
    "NON SIGNÉE bien que des clés de sceau soient configurées, acceptée seulement parce que "
    "les ancres signées ne sont pas exigées ici : elle ne prouve rien de plus que l'endroit "
    "où elle était gardée, puisque quiconque peut y écrire peut en faire une ; `audit anchor` "
    "signe les nouvelles, et --require-signed-anchor ou --require-seals la refuse",
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
#: A count, by its noun: (one, several), each with ``{n}``.
EVENTS_COUNTED = (
    Localized("{n} event", "{n} événement"),
    Localized("{n} events", "{n} événements"),
)
PROPOSALS_COUNTED = (
    Localized("{n} proposal", "{n} proposition"),
    Localized("{n} proposals", "{n} propositions"),
)
STREAMS_COUNTED = (
    Localized("{n} other stream", "{n} autre flux"),
    Localized("{n} other streams", "{n} autres flux"),
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
    "audit anchor` a écrite avec les clés de sceau configurées (elle la signe) ; une ancre non "
    "signée faite avant les clés ne peut être vérifiée que sans --require-seals et avec "
    "COUNTERSIGN_SEALS_REQUIRED=false",
)
REFUSED_UNSIGNED_FLAG = Localized(
    "--anchor: {name} is UNSIGNED, and --require-signed-anchor demands a signed anchor: "
    "whoever can write where an unsigned anchor is kept can make one of a store cut back. "
    "Check against an anchor `countersign audit anchor` wrote with the seal keys configured "
    "(it signs it)",
    "--anchor : {name} n'est PAS SIGNÉE, et --require-signed-anchor exige une ancre signée : "
    "quiconque peut écrire là où une ancre non signée est gardée peut en faire une d'une base "
    "tronquée. Vérifiez avec une ancre que `countersign audit anchor` a écrite avec les clés "
    "de sceau configurées (elle la signe)",
)
