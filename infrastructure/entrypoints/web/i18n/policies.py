"""The approval policies page: what each kind of proposal needs before it runs."""

from __future__ import annotations

EN: dict[str, str] = {
    "policies.title": "Approval policies",
    "policies.lead": (
        "What each kind of proposal needs before the application carries it out. A proposal "
        "keeps the policy in force when it was made, so a change applies to new ones only."
    ),
    "policies.operation": "Operation",
    "policies.applies": "Applies to",
    "policies.every": "Every proposal",
    "policies.above": "Proposals above {amount}",
    "policies.approvals": "Approvals needed",
    "policies.requester": "Its requester",
    "policies.passkey": "Passkey",
    "policies.one": "One manager",
    "policies.many": "{count} different managers",
    "policies.below": (
        "Where a rule applies only above an amount, a proposal at or below it needs one "
        "manager's approval, its requester's included, and no passkey; one that moves no "
        "money is covered only by a rule for every proposal."
    ),
    "policies.may_approve": "May approve it",
    "policies.may_not_approve": "May not approve it",
    "policies.passkey_required": "Each approval signed with a passkey",
    "policies.passkey_not_required": "Not required",
    "policies.how_to": (
        "Read-only here: a member holding policies.manage changes them through the API, and "
        "the club's operator with"
    ),
    "review.policies_link": "The club's approval policies now",
    "nav.policies": "Approval policies",
}

FR: dict[str, str] = {
    "policies.title": "Règles d'approbation",
    "policies.lead": (
        "Ce qu'il faut à chaque sorte de proposition avant que l'application l'exécute. Une "
        "proposition garde la règle en vigueur à sa création : un changement ne vaut que "
        "pour les nouvelles."
    ),
    "policies.operation": "Opération",
    "policies.applies": "S'applique à",
    "policies.every": "Toute proposition",
    "policies.above": "Propositions au-delà de {amount}",
    "policies.approvals": "Approbations requises",
    "policies.requester": "La personne qui la demande",
    "policies.passkey": "Clé d'accès",
    "policies.one": "Un gestionnaire",
    "policies.many": "{count} gestionnaires différents",
    "policies.below": (
        "Quand une règle ne s'applique qu'au-delà d'un montant, une proposition jusqu'à ce "
        "montant demande l'approbation d'un seul gestionnaire, y compris celle de la personne "
        "qui la demande, sans clé d'accès ; une proposition qui ne déplace pas d'argent n'est "
        "couverte que par une règle pour toute proposition."
    ),
    "policies.may_approve": "Peut l'approuver",
    "policies.may_not_approve": "Ne peut pas l'approuver",
    "policies.passkey_required": "Chaque approbation signée avec une clé d'accès",
    "policies.passkey_not_required": "Non requise",
    "policies.how_to": (
        "En lecture seule ici : un membre qui détient policies.manage les change par l'API, "
        "et l'opérateur du club avec"
    ),
    "review.policies_link": "Les règles d'approbation du club aujourd'hui",
    "nav.policies": "Règles d'approbation",
}
