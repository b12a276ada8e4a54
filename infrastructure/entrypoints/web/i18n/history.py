"""A proposal's history page: what happened to it, in order, and who did it."""

from __future__ import annotations

EN: dict[str, str] = {
    "history.title": "History",
    "history.link": "Its history: who did what, and when",
    "history.lead": (
        "Everything recorded about this proposal, oldest first, in the club's time. Any "
        "event shows the proposal as it stood then."
    ),
    "history.unvouched": (
        "No seal of this server vouches for this event: it may not have happened."
    ),
    "history.now": "Now: {status}",
    "history.events": "{count} events",
    "history.events.one": "1 event",
    "history.events_until": "Events 1 to {version} of {total}",
    "history.event": "Event {version}",
    "history.as_of_link": "As it stood after event {version}",
    "history.whole": "The whole history",
    "history.as_of_title": "As it stood after event {version}",
    "history.as_of_lead": (
        "What the approvers were shown then, its status and its approvals so far; what "
        "happened later is left out."
    ),
    "history.together": (
        "Recorded in the same step as event {next}: no one could have seen the proposal as "
        "it stands here, only as it stood after that event."
    ),
    "history.status_then": "Status then",
    "history.approvals_then": "Approvals so far",
    "history.approvals_none": "None yet",
    "history.outcome_then": "Outcome",
    "history.the_application": "countersign (the application)",
    "history.proposed": "{who} proposed it.",
    "history.proposed_revision": "{who} proposed it, as an edit of an earlier version.",
    "history.earlier_version": "The earlier version's history",
    "history.expires": "To be approved by {when}.",
    "history.approved": "{who} approved it.",
    "history.approved_quorum": "{who} approved it: approval {given} of {required}.",
    "history.role": "Their role in the club then: {role}.",
    "history.lapsed": "The approval by {who} stopped counting.",
    "history.claimed": "Approved in full: the application started carrying it out.",
    "history.revalidated": (
        "The application checked again that the facts it was approved on still held: they did."
    ),
    "history.succeeded": "The application carried it out.",
    "history.reconciling": (
        "The provider's answer was not known: the application had to confirm with the "
        "provider what happened."
    ),
    "history.settled": "The check with the provider settled it.",
    "history.revision_required": "The application did not carry it out: it needs a new proposal.",
    "history.already_so": (
        "The application did not carry it out: what it asked for was already so, and nothing "
        "is left to do."
    ),
    "history.declined_closed": "The decline closed it: nothing will be carried out.",
    "history.failed": "It failed inside the application: nothing more will be tried.",
    # Why, for each failure the application records (``Failed.error_class``); another
    # (a newer release's) is shown as its code.
    "history.failure.UndecodableContractError": (
        "Why: the arguments it was approved with could no longer be read."
    ),
    "history.failure.ContractDigestMismatch": (
        "Why: what would have been carried out no longer matched what was approved."
    ),
    "history.failure.ExecutionError": "Why: an error stopped it while it was carried out.",
    "history.failure.UnknownEffectProvider": (
        "Why: the provider it needs is not set up in this installation."
    ),
    "history.failure.code": "Error code: {code}.",
    "history.reference": "Support reference: {reference}",
    "history.declined": "{who} declined it.",
    "history.note": "Their note:",
    "history.expired": "It expired before it was approved in full: it can no longer be approved.",
    "history.superseded.revised": "An edit of it took its place.",
    "history.superseded.replaced": "A newer proposal for the same thing took its place.",
    "history.superseded.withdrawn": "Another proposal was carried out, which withdrew it.",
    "history.superseded.unknown": "Another proposal took its place.",
    "history.superseded_link": "The proposal that took its place",
    "history.withdrawn_link": "The proposal that withdrew it",
    "history.unknown": "An event this page does not describe: “{type}”.",
    "error.no_such_point.title": "No such point in the history",
    "error.no_such_point.text": (
        "This proposal's history has no such event. Its history page lists every one."
    ),
}

FR: dict[str, str] = {
    "history.title": "Historique",
    "history.link": "Son historique : qui a fait quoi, et quand",
    "history.lead": (
        "Tout ce qui a été enregistré sur cette proposition, du plus ancien au plus récent, à "
        "l'heure du club. Chaque événement montre la proposition telle qu'elle était alors."
    ),
    "history.unvouched": (
        "Aucun sceau de ce serveur ne garantit cet événement : il n'a peut-être pas eu lieu."
    ),
    "history.now": "Actuellement : {status}",
    "history.events": "{count} événements",
    "history.events.one": "1 événement",
    "history.events_until": "Événements 1 à {version} sur {total}",
    "history.event": "Événement {version}",
    "history.as_of_link": "Telle qu'elle était après l'événement {version}",
    "history.whole": "Tout l'historique",
    "history.as_of_title": "Telle qu'elle était après l'événement {version}",
    "history.as_of_lead": (
        "Ce qui était alors montré aux approbateurs, son statut et ses approbations à ce "
        "moment ; la suite n'y figure pas."
    ),
    "history.together": (
        "Enregistré dans la même étape que l'événement {next} : personne n'a pu voir la "
        "proposition telle qu'elle apparaît ici, seulement telle qu'elle était après cet "
        "événement."
    ),
    "history.status_then": "Statut alors",
    "history.approvals_then": "Approbations à ce moment",
    "history.approvals_none": "Aucune encore",
    "history.outcome_then": "Résultat",
    "history.the_application": "countersign (l'application)",
    "history.proposed": "{who} l'a proposée.",
    "history.proposed_revision": "{who} l'a proposée, en modifiant une version antérieure.",
    "history.earlier_version": "L'historique de la version antérieure",
    "history.expires": "À approuver avant le {when}.",
    "history.approved": "{who} l'a approuvée.",
    "history.approved_quorum": "{who} l'a approuvée : approbation {given} sur {required}.",
    "history.role": "Son rôle dans le club alors : {role}.",
    "history.lapsed": "L'approbation de {who} a cessé de compter.",
    "history.claimed": "Approuvée en entier : l'application a commencé à l'exécuter.",
    "history.revalidated": (
        "L'application a vérifié de nouveau que les faits approuvés tenaient toujours : "
        "c'était le cas."
    ),
    "history.succeeded": "L'application l'a exécutée.",
    "history.reconciling": (
        "La réponse du fournisseur était inconnue : l'application devait confirmer auprès du "
        "fournisseur ce qui s'était passé."
    ),
    "history.settled": "La vérification auprès du fournisseur l'a réglée.",
    "history.revision_required": (
        "L'application ne l'a pas exécutée : il faut une nouvelle proposition."
    ),
    "history.already_so": (
        "L'application ne l'a pas exécutée : ce qu'elle demandait était déjà le cas, et il ne "
        "reste rien à faire."
    ),
    "history.declined_closed": "Le refus l'a close : rien ne sera exécuté.",
    "history.failed": "Elle a échoué dans l'application : rien d'autre ne sera tenté.",
    "history.failure.UndecodableContractError": (
        "Cause : les arguments approuvés ne pouvaient plus être lus."
    ),
    "history.failure.ContractDigestMismatch": (
        "Cause : ce qui aurait été exécuté ne correspondait plus à ce qui a été approuvé."
    ),
    "history.failure.ExecutionError": "Cause : une erreur l'a arrêtée pendant son exécution.",
    "history.failure.UnknownEffectProvider": (
        "Cause : le fournisseur dont elle a besoin n'est pas configuré dans cette installation."
    ),
    "history.failure.code": "Code d'erreur : {code}.",
    "history.reference": "Référence pour le support : {reference}",
    "history.declined": "{who} l'a refusée.",
    "history.note": "Sa note :",
    "history.expired": (
        "Elle a expiré avant d'être approuvée en entier : elle ne peut plus être approuvée."
    ),
    "history.superseded.revised": "Une modification l'a remplacée.",
    "history.superseded.replaced": (
        "Une proposition plus récente pour la même chose l'a remplacée."
    ),
    "history.superseded.withdrawn": "Une autre proposition a été exécutée, ce qui l'a retirée.",
    "history.superseded.unknown": "Une autre proposition l'a remplacée.",
    "history.superseded_link": "La proposition qui l'a remplacée",
    "history.withdrawn_link": "La proposition qui l'a retirée",
    "history.unknown": "Un événement que cette page ne décrit pas : « {type} ».",
    "error.no_such_point.title": "Ce point n'existe pas dans l'historique",
    "error.no_such_point.text": (
        "L'historique de cette proposition n'a pas cet événement. Sa page d'historique les "
        "liste tous."
    ),
}
