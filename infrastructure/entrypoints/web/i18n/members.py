"""The members page: who belongs to the club and the permissions each holds."""

from __future__ import annotations

EN: dict[str, str] = {
    "members.title": "Members and permissions",
    "members.lead": (
        "Who may do what in the club. Tick the permissions a member holds and save: the ones "
        "left unticked are withdrawn. Every change is recorded with who made it."
    ),
    "members.members": "Members",
    "members.permissions_of": "Permissions of {name}",
    "members.save": "Save the permissions of {name}",
    "members.how_to": (
        "A new member is added by the club's administrator. The command line sets permissions too:"
    ),
    "members.codes_title": "Permission names for the command line and the API",
    "members.error.last_manager": (
        "{email} is the last member who may manage members: give that permission to someone "
        "else first, or nobody could change a member's permissions again. Nothing changed."
    ),
    "members.error.unknown_permission": (
        "That is not a permission a member may hold. Nothing changed."
    ),
    "members.error.not_member": "{email} is no longer a member of the club. Nothing changed.",
    "members.permission.orders.refund": "Refund orders",
    "members.permission.email_broadcasts.prepare": "Prepare email broadcasts",
    "members.permission.email_broadcasts.send": "Send email broadcasts",
    "members.permission.roster.manage": "Manage the roster",
    "members.permission.audit.read": "Read the audit trail",
    "members.permission.policies.manage": "Set approval policies",
    "members.permission.webhooks.manage": "Manage webhooks",
    "members.permission.members.manage": "Manage members' permissions",
    # A member's role, as it reads mid-sentence (the members page capitalises it).
    "role.manager": "manager",
    "role.staff": "staff",
}

FR: dict[str, str] = {
    "members.title": "Membres et permissions",
    "members.lead": (
        "Qui peut faire quoi dans le club. Cochez les permissions d'un membre et enregistrez : "
        "celles qui restent décochées lui sont retirées. Chaque changement est consigné avec "
        "son auteur."
    ),
    "members.members": "Membres",
    "members.permissions_of": "Permissions de {name}",
    "members.save": "Enregistrer les permissions de {name}",
    "members.how_to": (
        "Un nouveau membre est ajouté par l'administrateur du club. La ligne de commande règle "
        "aussi les permissions :"
    ),
    "members.codes_title": "Noms des permissions pour la ligne de commande et l'API",
    "members.error.last_manager": (
        "{email} est le dernier membre à pouvoir gérer les membres : donnez d'abord cette "
        "permission à quelqu'un d'autre, sinon personne ne pourrait plus changer les "
        "permissions d'un membre. Rien n'a changé."
    ),
    "members.error.unknown_permission": (
        "Ce n'est pas une permission qu'un membre peut détenir. Rien n'a changé."
    ),
    "members.error.not_member": "{email} n'est plus membre du club. Rien n'a changé.",
    "members.permission.orders.refund": "Rembourser des commandes",
    "members.permission.email_broadcasts.prepare": "Préparer des envois de courriels",
    "members.permission.email_broadcasts.send": "Faire partir des envois de courriels",
    "members.permission.roster.manage": "Gérer les effectifs",
    "members.permission.audit.read": "Lire la piste d'audit",
    "members.permission.policies.manage": "Régler les politiques d'approbation",
    "members.permission.webhooks.manage": "Gérer les webhooks",
    "members.permission.members.manage": "Gérer les permissions des membres",
    "role.manager": "gestionnaire",
    "role.staff": "personnel",
}
