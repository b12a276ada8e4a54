"""A proposal's pages: its card, its review, the confirmation step, its status while it
settles, and the form that edits it."""

from __future__ import annotations

from countersign.domain.messages import requester_barred_message

EN: dict[str, str] = {
    "card.review": "Review and decide",
    "card.open": "Open",
    "review.title": "Review the proposal",
    "review.lead": (
        "This is exactly what approval will do. The application computed every amount; "
        "it rechecks everything before executing."
    ),
    "review.lead_no_amounts": (
        "This is exactly what approval will do. The application rechecks everything before "
        "executing."
    ),
    "review.approve": "Approve",
    "review.decline": "Decline",
    "review.decline_note": "Note for the record (optional)",
    "review.decline_hint": "Why you are declining, for the conversation and the audit trail.",
    "review.requested_by": "Requested by",
    "review.proposed_at": "Proposed",
    "review.expires_at": "Expires",
    "review.expired_at": "Expired",
    "review.approved_by": "Approved by",
    "review.declined_by": "Declined by",
    "review.decline_note_shown": "Decline note",
    "review.reference": "Reference",
    "review.outcome": "Outcome: {title}",
    "refund.card": "To the card",
    "refund.account_credit": "Account credit",
    "refund.manual": "Recorded by hand",
    "review.conversation": "Back to the conversation",
    "review.status_page": "Follow the check",
    "review.updates_itself": (
        "This page updates by itself until the check is done; the outcome also stays in "
        "the inbox under Needs attention."
    ),
    "review.revise": "Ask the assistant for a new proposal",
    "review.support_reference": "Reference for support:",
    "review.requested_by_assistant": "The assistant, on behalf of {who}",
    "review.confirm_hint": "You will confirm once more: this cannot be undone.",
    "confirm.title": "Confirm once more",
    "confirm.cannot_undo": "This cannot be undone",
    "confirm.yes": "Yes: {action}",
    "confirm.cancel": "Not now, back to the proposal",
    "confirm.back": "Back to the proposal",
    "review.operation_not_enabled": (
        "This operation is not enabled on this server (its plug-in is turned off), so nobody "
        "can approve or decline it for now. Nothing has changed. Ask whoever runs countersign "
        "to turn the plug-in back on."
    ),
    "review.forbidden_kind": (
        "Your role does not allow approving this kind of proposal. Ask a manager."
    ),
    "review.expired_note": "This proposal expired before anyone approved it. Nothing changed.",
    "review.pending_note": "Waiting for your decision. Nothing has changed yet.",
    "review.executing_note": ("Approved and executing. Refresh in a moment to see the outcome."),
    "review.executing_overdue": (
        "Approved, but no outcome has been recorded: the process carrying it out seems to "
        "have stopped."
    ),
    "status.title": "Where it stands",
    "status.settled": "Settled. This is the recorded outcome; nothing more will happen.",
    "status.not_reconciling": "Nothing waits on a provider for this proposal.",
    "status.back": "Back to the proposal",
    "status.checked": "Checked",
    "settling.waiting": "Waiting since {since}, {waited}.",
    "settling.unattended": (
        "Nothing is settling it: an operator must start the worker (countersign worker), "
        "which asks the provider what happened. Until then, do not do it again another "
        "way: it may already have happened."
    ),
    "settling.unattended_short": "Nothing is settling it: an operator must start the worker.",
    "settling.provider_silent": (
        "The provider has not confirmed it yet: countersign asks again every {seconds} "
        "seconds. Do not do it again another way: it may already have happened."
    ),
    "state.pending": "Awaiting approval",
    "state.executing": "Executing",
    "state.reconciling": "Confirming with the provider",
    "state.succeeded": "Succeeded",
    "state.revision_required": "Not executed",
    "state.already_so": "Nothing to do",
    "state.failed": "Failed",
    "state.declined": "Declined",
    "state.expired": "Expired",
    "state.superseded": "Replaced",
    "review.replaced_title": "Replaced by a newer proposal",
    "review.replaced_text": (
        "A newer proposal for the same thing replaced this one, so it can no longer be "
        "approved or declined. This one changed nothing."
    ),
    "review.replaced_link": "Open the newer proposal",
    "review.withdrawn_title": "This proposal will not run",
    "review.replaces_title.replaced": "It replaces an earlier proposal",
    "review.replaces_text.replaced": (
        "It was proposed again for the same thing, so the earlier proposal can no longer be "
        "approved: approving this one carries it out once, not in addition to the earlier one."
    ),
    "review.replaces_title.revised": "It revises an earlier proposal",
    "review.replaces_text.revised": (
        "It is an edit of an earlier proposal, which can no longer be approved: approving "
        "this one carries out this version only, not both."
    ),
    "review.replaces_link": "Open the earlier proposal",
    "review.withdrawn_link": "Open the proposal that withdrew it",
    "review.withdraws_private": "A proposal your role does not let you open",
    "state.withdrawn": "Withdrawn",
    "review.changes_title": "What changed",
    "review.asked_for": "What it asked for (not carried out)",
    "review.unverified_title": "countersign cannot vouch for this record",
    "review.policy_changed_title": "The club's approval policy changed since this was proposed",
    "review.policy_changed_text": (
        "It now asks more of this proposal (more approvals, a passkey, or an approver other "
        "than the requester). Approving it will not carry it out: it goes back to the "
        "requester, who can propose it again under the policy now in force. No passkey is "
        "needed for that. Decline it if it should not be done at all."
    ),
    "review.send_back": "Send back for a new proposal",
    "review.changes_field": "What",
    "review.changes_before": "Before",
    "review.changes_after": "After",
    "review.changes_label": "{label}:",
    "review.changes_none": "This edit changed nothing the review shows.",
    "review.earlier_version": "See the earlier version",
    "review.approvals": "Approvals",
    "review.approvals_count": "{given} of {required}",
    "review.approvals_heading": "Approvals: {count}",
    "review.lapsed_heading": "Approvals that stopped counting",
    "review.you_approved": "You have approved it.",
    "review.awaiting_one": "It awaits one more manager's approval; nothing runs until then.",
    "review.awaiting_more": (
        "It awaits {count} more managers' approvals; nothing runs until then."
    ),
    # The card's and status's words (one text for the page, the API, MCP and ``show``).
    "review.requester_barred": requester_barred_message("en"),
    "review.first_of": (
        "Your approval will be {given} of {required}: nothing runs until another manager "
        "approves too."
    ),
    "review.policy": "Approval policy",
    "review.edit": "Edit",
    "review.edit_hint": (
        "Change what it asks for: the application prepares a new proposal from your changes."
    ),
    "policy.rule": "When this was proposed, the club's rule for it was: {quorum}.",
    "policy.rule_above": (
        "When this was proposed, the club's rule for it was: above {amount}, {quorum}."
    ),
    "policy.quorum": "{count} different managers must approve",
    "policy.single": "one manager's approval is enough",
    "policy.not_requester": "The person who requested it may not approve it.",
    "policy.passkey": "Each approval must be signed with the approver's passkey.",
    "policy.under_threshold": (
        "This one is not above that amount: one manager's approval is enough."
    ),
    "review.approve_with_passkey": "Approve with my passkey",
    "review.passkey_hint": (
        "The club's policy asks for your passkey: it signs exactly this proposal."
    ),
    "review.passkey_none": (
        "Approving this proposal needs your passkey, and you have none in this club yet."
    ),
    "review.passkey_add": "Add a passkey",
    "edit.title": "Edit the proposal",
    "edit.back": "Back to the proposal",
    "edit.lead": (
        "Change what the proposal asks for. The application checks it again and works out "
        "everything else itself, amounts included, then makes a new proposal; nothing "
        "changes until someone approves it."
    ),
    "edit.nothing_to_choose": (
        "This proposal has nothing to choose: preparing it again reads the records as they are now."
    ),
    "edit.problems": (
        "The new proposal could not be prepared, and nothing was changed. Correct what is "
        "marked, then try again."
    ),
    "edit.submit": "Prepare the new proposal",
    "edit.discard": "Discard changes",
    "edit.unchanged": (
        "Nothing was changed: this is what the proposal already asks for, so no new "
        "proposal was made. Change a field, or discard the changes."
    ),
    "edit.optional": "(optional)",
    "edit.none": "(none)",
    "edit.problem.number": "Write a whole number.",
    "edit.problem.json": "This is not in the expected form (JSON).",
    "edit.to_correct": "To correct:",
}

FR: dict[str, str] = {
    "card.review": "Examiner et décider",
    "card.open": "Ouvrir",
    "review.title": "Examiner la proposition",
    "review.lead": (
        "Voici exactement ce que fera l'approbation. L'application a calculé chaque montant ; "
        "elle revérifie tout avant d'exécuter."
    ),
    "review.lead_no_amounts": (
        "Voici exactement ce que fera l'approbation. L'application revérifie tout avant d'exécuter."
    ),
    "review.approve": "Approuver",
    "review.decline": "Refuser",
    "review.decline_note": "Note pour le dossier (facultative)",
    "review.decline_hint": "Pourquoi vous refusez, pour la conversation et l'audit.",
    "review.requested_by": "Demandée par",
    "review.proposed_at": "Proposée",
    "review.expires_at": "Expire",
    "review.expired_at": "Expirée",
    "review.approved_by": "Approuvée par",
    "review.declined_by": "Refusée par",
    "review.decline_note_shown": "Note de refus",
    "review.reference": "Référence",
    "review.outcome": "Résultat : {title}",
    "refund.card": "Sur la carte",
    "refund.account_credit": "Crédit au compte",
    "refund.manual": "Saisi à la main",
    "review.conversation": "Retour à la conversation",
    "review.status_page": "Suivre la vérification",
    "review.updates_itself": (
        "Cette page s'actualise d'elle-même jusqu'à la fin de la vérification ; le résultat "
        "reste aussi dans la liste, sous À surveiller."
    ),
    "review.revise": "Demander une nouvelle proposition à l'assistant",
    "review.support_reference": "Référence pour le soutien :",
    "review.requested_by_assistant": "L'assistant, pour le compte de {who}",
    "review.confirm_hint": "Vous confirmerez une dernière fois : c'est irréversible.",
    "confirm.title": "Confirmez une dernière fois",
    "confirm.cannot_undo": "C'est irréversible",
    "confirm.yes": "Oui : {action}",
    "confirm.cancel": "Pas maintenant, retour à la proposition",
    "confirm.back": "Retour à la proposition",
    "review.operation_not_enabled": (
        "Cette opération n'est pas activée sur ce serveur (son module d'extension est "
        "désactivé) : personne ne peut l'approuver ni la refuser pour l'instant. Rien n'a "
        "changé. Demandez à la personne qui administre countersign de réactiver le module."
    ),
    "review.forbidden_kind": (
        "Votre rôle ne permet pas d'approuver ce type de proposition. Demandez à un gestionnaire."
    ),
    "review.expired_note": ("Cette proposition a expiré avant d'être approuvée. Rien n'a changé."),
    "review.pending_note": "En attente de votre décision. Rien n'a encore changé.",
    "review.executing_note": (
        "Approuvée et en cours d'exécution. Actualisez dans un instant pour voir le résultat."
    ),
    "review.executing_overdue": (
        "Approuvée, mais aucun résultat n'a été enregistré\u00a0: le processus qui "
        "l'exécutait semble s'être arrêté."
    ),
    "status.title": "Où elle en est",
    "status.settled": "Réglé. Voici le résultat enregistré ; rien d'autre ne se passera.",
    "status.not_reconciling": ("Rien n'attend la réponse d'un fournisseur pour cette proposition."),
    "status.back": "Retour à la proposition",
    "status.checked": "Vérifié",
    "settling.waiting": "En attente depuis {since}, {waited}.",
    "settling.unattended": (
        "Rien ne la règle\u00a0: un opérateur doit démarrer le service d'arrière-plan "
        "(countersign worker), qui demande au fournisseur ce qui s'est passé. D'ici là, ne "
        "la refaites pas autrement\u00a0: elle a peut-être déjà eu lieu."
    ),
    "settling.unattended_short": (
        "Rien ne la règle\u00a0: un opérateur doit démarrer le service d'arrière-plan."
    ),
    "settling.provider_silent": (
        "Le fournisseur ne l'a pas encore confirmée\u00a0: countersign le lui redemande "
        "toutes les {seconds} secondes. Ne la refaites pas autrement\u00a0: elle a "
        "peut-être déjà eu lieu."
    ),
    "state.pending": "En attente d'approbation",
    "state.executing": "En cours d'exécution",
    "state.reconciling": "Confirmation auprès du fournisseur",
    "state.succeeded": "Réussie",
    "state.revision_required": "Non exécutée",
    "state.already_so": "Rien à faire",
    "state.failed": "Échec",
    "state.declined": "Refusée",
    "state.expired": "Expirée",
    "state.superseded": "Remplacée",
    "review.replaced_title": "Remplacée par une proposition plus récente",
    "review.replaced_text": (
        "Une proposition plus récente pour la même chose a remplacé celle-ci : elle ne peut "
        "plus être approuvée ni refusée. Celle-ci n'a rien modifié."
    ),
    "review.replaced_link": "Ouvrir la proposition plus récente",
    "review.withdrawn_title": "Cette proposition ne sera pas exécutée",
    "review.replaces_title.replaced": "Elle remplace une proposition antérieure",
    "review.replaces_text.replaced": (
        "Elle a été proposée de nouveau pour la même chose : la proposition antérieure ne "
        "peut plus être approuvée, et approuver celle-ci l'exécute une seule fois, pas en "
        "plus de l'autre."
    ),
    "review.replaces_title.revised": "Elle modifie une proposition antérieure",
    "review.replaces_text.revised": (
        "C'est une modification d'une proposition antérieure, qui ne peut plus être "
        "approuvée : approuver celle-ci exécute cette version seulement, pas les deux."
    ),
    "review.replaces_link": "Ouvrir la proposition antérieure",
    "review.withdrawn_link": "Ouvrir la proposition qui l'a retirée",
    "review.withdraws_private": "Une proposition que votre rôle ne vous permet pas d'ouvrir",
    "state.withdrawn": "Retirée",
    "review.changes_title": "Ce qui a changé",
    "review.asked_for": "Ce qu'elle demandait (non exécutée)",
    "review.unverified_title": "countersign ne peut pas garantir cet enregistrement",
    "review.policy_changed_title": (
        "La politique d'approbation du club a changé depuis cette proposition"
    ),
    "review.policy_changed_text": (
        "Elle en demande désormais davantage (plus d'approbations, une clé d'accès ou un "
        "approbateur autre que le demandeur). L'approuver ne l'exécutera pas : elle retournera "
        "au demandeur, qui pourra la proposer de nouveau selon la politique en vigueur. Aucune "
        "clé d'accès n'est demandée pour cela. Refusez-la si elle ne doit pas du tout être "
        "faite."
    ),
    "review.send_back": "Renvoyer pour une nouvelle proposition",
    "review.changes_field": "Élément",
    "review.changes_before": "Avant",
    "review.changes_after": "Après",
    "review.changes_label": "{label} :",
    "review.changes_none": "Cette modification ne change rien de ce qui est affiché.",
    "review.earlier_version": "Voir la version précédente",
    "review.approvals": "Approbations",
    "review.approvals_count": "{given} sur {required}",
    "review.approvals_heading": "Approbations : {count}",
    "review.lapsed_heading": "Approbations qui ont cessé de compter",
    "review.you_approved": "Vous l'avez approuvée.",
    "review.awaiting_one": (
        "Il manque l'approbation d'un autre gestionnaire ; rien ne s'exécute d'ici là."
    ),
    "review.awaiting_more": (
        "Il manque l'approbation de {count} autres gestionnaires ; rien ne s'exécute d'ici là."
    ),
    "review.requester_barred": requester_barred_message("fr"),
    "review.first_of": (
        "Votre approbation comptera pour {given} sur {required} : rien ne s'exécute tant "
        "qu'un autre gestionnaire n'a pas approuvé aussi."
    ),
    "review.policy": "Règle d'approbation",
    "review.edit": "Modifier",
    "review.edit_hint": (
        "Changez ce qu'elle demande : l'application prépare une nouvelle proposition à partir "
        "de vos modifications."
    ),
    "policy.rule": "Au moment de la proposition, la règle du club était : {quorum}.",
    "policy.rule_above": (
        "Au moment de la proposition, la règle du club était : au-delà de {amount}, {quorum}."
    ),
    "policy.quorum": "{count} gestionnaires différents doivent approuver",
    "policy.single": "l'approbation d'un seul gestionnaire suffit",
    "policy.not_requester": "La personne qui l'a demandée ne peut pas l'approuver.",
    "policy.passkey": ("Chaque approbation doit être signée avec la clé d'accès de son auteur."),
    "policy.under_threshold": (
        "Celle-ci ne dépasse pas ce montant : l'approbation d'un seul gestionnaire suffit."
    ),
    "review.approve_with_passkey": "Approuver avec ma clé d'accès",
    "review.passkey_hint": (
        "La règle du club demande votre clé d'accès : elle signe exactement cette proposition."
    ),
    "review.passkey_none": (
        "Approuver cette proposition demande votre clé d'accès, et vous n'en avez pas "
        "encore dans ce club."
    ),
    "review.passkey_add": "Ajouter une clé d'accès",
    "edit.title": "Modifier la proposition",
    "edit.back": "Retour à la proposition",
    "edit.lead": (
        "Changez ce que demande la proposition. L'application la vérifie de nouveau et "
        "établit elle-même tout le reste, montants compris, puis crée une nouvelle "
        "proposition ; rien ne change avant qu'une personne l'approuve."
    ),
    "edit.nothing_to_choose": (
        "Cette proposition n'a rien à choisir : la préparer de nouveau relit les dossiers "
        "tels qu'ils sont maintenant."
    ),
    "edit.problems": (
        "La nouvelle proposition n'a pas pu être préparée, et rien n'a été modifié. "
        "Corrigez ce qui est signalé, puis réessayez."
    ),
    "edit.submit": "Préparer la nouvelle proposition",
    "edit.discard": "Annuler les modifications",
    "edit.unchanged": (
        "Rien n'a changé : c'est déjà ce que demande la proposition, donc aucune nouvelle "
        "proposition n'a été faite. Modifiez un champ, ou annulez les modifications."
    ),
    "edit.optional": "(facultatif)",
    "edit.none": "(aucun)",
    "edit.problem.number": "Écrivez un nombre entier.",
    "edit.problem.json": "Ce n'est pas dans la forme attendue (JSON).",
    "edit.to_correct": "À corriger :",
}
