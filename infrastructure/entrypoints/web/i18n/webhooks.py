"""The webhooks page: a club's endpoints, their health and dead letters."""

from __future__ import annotations

EN: dict[str, str] = {
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
    "webhooks.error.spaces": (
        "A URL cannot contain spaces, control characters or invisible formatting characters."
    ),
    "webhooks.error.characters": (
        'This URL holds characters a URL cannot hold unencoded (< > " { } | \\ ^ `).'
    ),
    "webhooks.error.invalid": "This is not a valid URL.",
    "webhooks.error.scheme": "The URL must start with https:// (or http://).",
    "webhooks.error.no_host": "The URL has no host name.",
    "webhooks.error.credentials": (
        "The URL must not carry a user name or password: they would be kept in the club's records."
    ),
    "webhooks.error.fragment": "The URL must not end with a #fragment.",
    "webhooks.error.port": "The URL's port is not valid.",
    "webhooks.error.too_many": (
        "The club already has 10 endpoints, the most it may have. Remove one first."
    ),
    "webhooks.error.internal_address": (
        "This URL leads to a private, loopback or otherwise internal address, or to this "
        "server itself. Webhooks are posted to other hosts' public addresses only."
    ),
    "webhooks.error.duplicate": "This URL is already one of the club's endpoints.",
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
    "webhooks.endpoint_removed": "Endpoint removed: not redelivered",
    "webhooks.redeliver": "Redeliver",
    "webhooks.redeliver_all": "Redeliver all",
    "webhooks.last_answer": "Last answer",
    "webhooks.attempts": "tries: {count}",
    "webhooks.event_id": "Event id",
    "webhooks.result.delivered": "delivered",
    "webhooks.result.answered": "failed: the endpoint answered {code}",
    "webhooks.result.relay_answered": "failed: the e-mail relay answered {code}",
    "webhooks.result.address_refused": "failed: the e-mail relay refused the address",
    "webhooks.result.could_not_connect": "failed: could not connect",
    "webhooks.result.endpoint_removed": "failed: the endpoint was removed",
    "webhooks.result.skipped": "not sent: the proposal no longer awaits approval",
    "webhooks.channel.webhook": "Webhook",
    "webhooks.channel.email": "E-mail",
    "webhooks.type.awaiting_approval": "Awaiting approval",
    "webhooks.type.needs_reconciliation": "Being checked with the provider",
    "webhooks.type.failed": "Failed",
}

FR: dict[str, str] = {
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
        "Une URL ne peut pas contenir d'espaces, ni de caractères de contrôle ou de mise en "
        "forme invisibles."
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
        "Cette URL mène à une adresse privée, locale ou autrement interne, ou à ce serveur "
        "lui-même. Les webhooks ne sont publiés qu'aux adresses publiques d'autres hôtes."
    ),
    "webhooks.error.duplicate": "Cette URL est déjà un point de réception du club.",
    "webhooks.dead_letters": "Lettres mortes",
    "webhooks.dead_lead": (
        "Les notifications qui n'ont pas pu être livrées après tous les essais. Renvoyez-en "
        "une dès que son destinataire fonctionne de nouveau."
    ),
    "webhooks.no_dead_letters": ("Aucune lettre morte : tout a été livré ou est en cours d'envoi."),
    "webhooks.no_dead_letters_failing": (
        "Aucune lettre morte pour l'instant, mais des livraisons échouent : {count} seront "
        "réessayées, et chacune devient une lettre morte ici après son dernier essai."
    ),
    "webhooks.dead": "Non livrée",
    "webhooks.endpoint_removed": "Point de réception retiré : pas de renvoi",
    "webhooks.redeliver": "Renvoyer",
    "webhooks.redeliver_all": "Tout renvoyer",
    "webhooks.last_answer": "Dernière réponse",
    "webhooks.attempts": "essais : {count}",
    "webhooks.event_id": "Identifiant d'événement",
    "webhooks.result.delivered": "livré",
    "webhooks.result.answered": "échec : le point de réception a répondu {code}",
    "webhooks.result.relay_answered": "échec : le relais de courriel a répondu {code}",
    "webhooks.result.address_refused": "échec : le relais de courriel a refusé l'adresse",
    "webhooks.result.could_not_connect": "échec : connexion impossible",
    "webhooks.result.endpoint_removed": "échec : le point de réception a été retiré",
    "webhooks.result.skipped": "non envoyé : la proposition n'attend plus d'approbation",
    "webhooks.channel.webhook": "Webhook",
    "webhooks.channel.email": "Courriel",
    "webhooks.type.awaiting_approval": "En attente d'approbation",
    "webhooks.type.needs_reconciliation": "En vérification auprès du fournisseur",
    "webhooks.type.failed": "Échec",
}
