"""What the commands that manage who may use countersign (passwords, API tokens) answer, in
English and French (``--language``)."""

from __future__ import annotations

from countersign.domain.contracts.presentation import Localized

NO_CLUB = Localized(
    "{email} is a member of no club, so nobody signs in with it: check the address; nothing "
    "was changed",
    "{email} n'est membre d'aucun club, donc personne ne se connecte avec : vérifiez "
    "l'adresse ; rien n'a été modifié",
)
PASSWORD_SET = Localized(
    "Password set for {email}; {ended} browser session(s) ended.",
    "Mot de passe défini pour {email} ; {ended} session(s) de navigateur terminée(s).",
)
NEW_PASSWORD = Localized("New password: ", "Nouveau mot de passe : ")
REPEAT_IT = Localized("Repeat it: ", "Répétez-le : ")
PASSWORDS_DIFFER = Localized(
    "the two passwords differ; nothing was changed",
    "les deux mots de passe diffèrent ; rien n'a été modifié",
)
APPROVER_TOKEN = Localized(
    "an approver token: it may approve, decline and edit for this person",
    "un jeton d'approbation : il peut approuver, refuser et modifier pour cette personne",
)
AGENT_TOKEN = Localized(
    "an agent token: it reads and proposes, and can never approve",
    "un jeton d'agent : il lit et propose, et ne peut jamais approuver",
)
TOKEN_ISSUED = Localized(
    "Token {id} for {organization} ({permissions}), acting as {who}; {what}. Shown once; "
    "store it now:",
    "Jeton {id} pour {organization} ({permissions}), agissant comme {who} ; {what}. Montré "
    "une seule fois ; conservez-le maintenant :",
)
TOKEN_REVOKED = Localized("Token {id} revoked.", "Jeton {id} révoqué.")
NO_SUCH_TOKEN = Localized("No active token {id}.", "Aucun jeton actif {id}.")
REVOKED = Localized("(revoked)", "(révoqué)")
NO_TOKENS = Localized("No tokens.", "Aucun jeton.")
