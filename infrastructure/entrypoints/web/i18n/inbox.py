"""The inbox, opening an order and the assistants' chat."""

from __future__ import annotations

EN: dict[str, str] = {
    "inbox.title": "Inbox",
    "inbox.lead": (
        "What the club's assistants propose, and what needs attention after a decision. "
        "Nothing changes until someone approves."
    ),
    "inbox.empty": "Nothing awaits approval. Proposals from the assistants appear here.",
    "inbox.awaiting": "Awaiting your decision",
    "inbox.empty_waiting": (
        "Nothing else awaits your decision: what you approved is below, waiting on others."
    ),
    "inbox.empty_followed": (
        "Nothing awaits your decision: the proposals below await another manager's."
    ),
    "inbox.decides_none": (
        "Your role does not allow approving any kind of proposal: you may read them, and "
        "another manager decides them. To approve some, ask a club manager: they can change "
        "your permissions on the Members page."
    ),
    "inbox.followed": "Awaiting another manager's decision",
    "inbox.followed_lead": (
        "Your role lets you read these, not approve them: a manager who holds the permission "
        "decides."
    ),
    "inbox.waiting": "Waiting on others",
    "inbox.waiting_lead": (
        "You approved these; each needs another manager's approval before anything runs."
    ),
    "inbox.you_approved": "You approved it",
    "inbox.your_approval_lapsed": (
        "Your approval no longer counts: the club's policy no longer lets the requester approve it."
    ),
    "inbox.attention": "Needs attention",
    "inbox.attention_lead": (
        "Being checked with a provider, failed, or not executed. Each leaves this list once "
        "it settles, or once a newer proposal for the same thing follows it."
    ),
    "inbox.attention_empty": "Nothing needs attention.",
    "inbox.attention_more": "{count} more.",
    "inbox.not_enabled": (
        "{count} pending proposals of this club are of operations not enabled on this server "
        "(their plug-in is turned off), so nobody can approve or decline them "
        "here. Ask whoever runs countersign to turn the plug-in back on to decide them, "
        "or let them expire: the first expires {expires}."
    ),
    "inbox.not_enabled.one": (
        "1 pending proposal of this club is of an operation not enabled on this server (its "
        "plug-in is turned off), so nobody can approve or decline it here. "
        "Ask whoever runs countersign to turn the plug-in back on to decide it, or let it "
        "expire: it expires {expires}."
    ),
    "inbox.views": "Which proposals",
    "inbox.sections": "Sections",
    "inbox.pages": "Pages",
    "inbox.open_view": "To do",
    "inbox.recent_view": "Recent outcomes",
    "inbox.recent_title": "Recent outcomes",
    "inbox.recent_lead": "Every decided proposal, the most recently changed first.",
    "inbox.recent_count": "{total} decided",
    "inbox.recent_count.one": "1 decided",
    "inbox.recent_empty": "No proposal has been decided yet.",
    "inbox.reference": "reference {reference}",
    "inbox.updated": "Last change {when}",
    "inbox.no_sections": (
        "Your role does not include approving any kind of proposal. To approve some, ask a "
        "club manager: they can change your permissions on the Members page."
    ),
    "inbox.all": "All",
    "inbox.requested_by": "Requested by {who}",
    "inbox.page": "Page {page} of {pages}",
    "inbox.past_end": "There is no page {page}: the last is page {pages}.",
    "inbox.list_ends": "This list ends on page {last}.",
    "inbox.go_to_page": "Go to page {page}",
    "inbox.newer": "Newer",
    "inbox.older": "Older",
    "start.title": "Start a conversation",
    "start.order_label": "Order number",
    "start.order_hint": "The order reference from the registration system, or its id.",
    "start.order_submit": "Open the order assistant",
    "chat.you": "You",
    "chat.from_token": "Token “{name}”",
    "chat.token_note": (
        "Your token “{name}” started this conversation through the API: the messages marked"
        " with its name are its words, not yours. A message you send here starts a"
        " conversation of your own."
    ),
    "chat.assistant": "Assistant",
    "chat.application": "countersign",
    "chat.message": "Your message",
    "chat.send": "Send",
    "chat.busy": "The assistant is reading…",
    "chat.empty": "No messages yet. Say what you need; the assistant answers here.",
    "chat.message_required": "Write a message first.",
    "chat.message_too_long": "Keep the message under {limit} characters.",
    "chat.too_many_messages": (
        "You have sent the assistants many messages in a short time. Nothing was sent or "
        "changed; try again in {wait}."
    ),
    "chat.conversation_full": (
        "This conversation holds its {limit} messages, the most one may. Nothing was sent: "
        "press Send to start a new conversation with this message."
    ),
    "chat.new": "Start a new conversation",
    "updates.still": "Not settled yet. Check again for the latest.",
    "updates.running": "This page checks again every {seconds} seconds.",
    "updates.paused": "Updates paused.",
    "updates.pause": "Pause updates",
    "updates.resume": "Resume updates",
    "updates.now": "Check now",
    "chat.revision_note": "The last proposal was not executed: {reason}",
    "chat.already_so_note": (
        "The last proposal was not executed: {reason} That is already what it asked for, so "
        "nothing is left to do."
    ),
    "chat.expired_note": "The last proposal expired before anyone approved it.",
    "order.title": "Order",
    "order.participant": "Participant",
    "order.total": "Order total",
    "order.registration": "Registration",
    "order.registration_active": "Active",
    "order.registration_in": "Active · a spot in {league}",
    "order.registration_cancelled": "Cancelled",
    "order.items": "Items",
    "order.discounts": "Discounts",
    "order.payments": "Payments",
    "order.refunds": "Refunds",
    "order.note": "Note on the order",
    "order.applied": "applied",
    "order.not_applied": "not applied",
    "order.refunded_on": "Refunded {amount} on {day}",
    "order.refunded": "Refunded {amount}",
    "order.refundable": "{amount} refundable",
    "inbox.approvals": "{given} of {required} approvals",
    "inbox.policy_changed": "Policy changed: approving sends it back",
}

FR: dict[str, str] = {
    "inbox.title": "À traiter",
    "inbox.lead": (
        "Ce que proposent les assistants du club, et ce qui demande un suivi après une "
        "décision. Rien ne change avant qu'une personne approuve."
    ),
    "inbox.awaiting": "En attente de votre décision",
    "inbox.empty_waiting": (
        "Rien d'autre n'attend votre décision : ce que vous avez approuvé est plus bas, en "
        "attente des autres."
    ),
    "inbox.empty_followed": (
        "Rien n'attend votre décision : les propositions plus bas attendent celle d'un autre "
        "gestionnaire."
    ),
    "inbox.decides_none": (
        "Votre rôle ne permet d'approuver aucun type de proposition : vous pouvez les lire, et "
        "un autre gestionnaire en décide. Pour en approuver, demandez à un gestionnaire du "
        "club : il peut changer vos permissions sur la page Membres."
    ),
    "inbox.followed": "En attente de la décision d'un autre gestionnaire",
    "inbox.followed_lead": (
        "Votre rôle vous permet de les lire, pas de les approuver : un gestionnaire qui en a "
        "la permission en décide."
    ),
    "inbox.waiting": "En attente des autres",
    "inbox.waiting_lead": (
        "Vous les avez approuvées ; chacune attend encore l'approbation d'un autre "
        "gestionnaire, et rien ne s'exécute d'ici là."
    ),
    "inbox.you_approved": "Vous l'avez approuvée",
    "inbox.your_approval_lapsed": (
        "Votre approbation ne compte plus : la règle du club ne permet plus à la personne "
        "qui la demande de l'approuver."
    ),
    "inbox.attention": "À surveiller",
    "inbox.attention_lead": (
        "En vérification auprès d'un fournisseur, en échec ou non exécutées. Chacune quitte "
        "cette liste une fois réglée, ou quand une proposition plus récente pour la même "
        "chose la suit."
    ),
    "inbox.attention_empty": "Rien à surveiller.",
    "inbox.attention_more": "{count} de plus.",
    "inbox.not_enabled": (
        "{count} propositions en attente de ce club relèvent d'opérations non activées sur ce "
        "serveur (leur module d'extension est désactivé) : personne ne peut les approuver ni "
        "les refuser ici. Demandez à la personne qui administre "
        "countersign de réactiver le module pour en décider, ou laissez-les expirer : la "
        "première expire le {expires}."
    ),
    "inbox.not_enabled.one": (
        "1 proposition en attente de ce club relève d'une opération non activée sur ce "
        "serveur (son module d'extension est désactivé) : personne ne peut l'approuver ni la "
        "refuser ici. Demandez à la personne qui administre "
        "countersign de réactiver le module pour en décider, ou laissez-la expirer : elle "
        "expire le {expires}."
    ),
    "inbox.views": "Quelles propositions",
    "inbox.sections": "Sections",
    "inbox.pages": "Pages",
    "inbox.open_view": "À faire",
    "inbox.recent_view": "Résultats récents",
    "inbox.recent_title": "Résultats récents",
    "inbox.recent_lead": "Chaque proposition décidée, la plus récemment modifiée d'abord.",
    "inbox.recent_count": "{total} décidées",
    "inbox.recent_count.one": "1 décidée",
    "inbox.recent_empty": "Aucune proposition n'a encore été décidée.",
    "inbox.reference": "référence {reference}",
    "inbox.updated": "Dernier changement le {when}",
    "inbox.empty": (
        "Rien n'attend d'approbation. Les propositions des assistants apparaissent ici."
    ),
    "inbox.no_sections": (
        "Votre rôle ne permet d'approuver aucun type de proposition. Pour en approuver, "
        "demandez à un gestionnaire du club : il peut changer vos permissions sur la page "
        "Membres."
    ),
    "inbox.all": "Toutes",
    "inbox.requested_by": "Demandée par {who}",
    "inbox.page": "Page {page} sur {pages}",
    "inbox.past_end": "Il n'y a pas de page {page} : la dernière est la page {pages}.",
    "inbox.list_ends": "Cette liste s'arrête à la page {last}.",
    "inbox.go_to_page": "Aller à la page {page}",
    "inbox.newer": "Plus récentes",
    "inbox.older": "Plus anciennes",
    "start.title": "Démarrer une conversation",
    "start.order_label": "Numéro de commande",
    "start.order_hint": "La référence de la commande dans le système d'inscription, ou son id.",
    "start.order_submit": "Ouvrir l'assistant commandes",
    "chat.you": "Vous",
    "chat.from_token": "Jeton « {name} »",
    "chat.token_note": (
        "Votre jeton « {name} » a commencé cette conversation par l'API : les messages"
        " marqués de son nom sont les siens, pas les vôtres. Un message envoyé ici commence"
        " une conversation à vous."
    ),
    "chat.assistant": "Assistant",
    "chat.application": "countersign",
    "chat.message": "Votre message",
    "chat.send": "Envoyer",
    "chat.busy": "L'assistant lit…",
    "chat.empty": "Aucun message. Dites ce dont vous avez besoin ; l'assistant répond ici.",
    "chat.message_required": "Écrivez d'abord un message.",
    "chat.message_too_long": "Limitez le message à {limit} caractères.",
    "chat.too_many_messages": (
        "Vous avez envoyé beaucoup de messages aux assistants en peu de temps. Rien n'a été "
        "envoyé ni modifié ; réessayez dans {wait}."
    ),
    "chat.conversation_full": (
        "Cette conversation compte ses {limit} messages, le plus qu'une puisse en compter. "
        "Rien n'a été envoyé : appuyez sur Envoyer pour commencer une nouvelle conversation "
        "avec ce message."
    ),
    "chat.new": "Nouvelle conversation",
    "updates.still": "Pas encore réglé. Vérifiez de nouveau pour la dernière situation.",
    "updates.running": "Cette page vérifie de nouveau toutes les {seconds} secondes.",
    "updates.paused": "Mises à jour suspendues.",
    "updates.pause": "Suspendre les mises à jour",
    "updates.resume": "Reprendre les mises à jour",
    "updates.now": "Vérifier maintenant",
    "chat.revision_note": "La dernière proposition n'a pas été exécutée : {reason}",
    "chat.already_so_note": (
        "La dernière proposition n'a pas été exécutée : {reason} C'est déjà ce qu'elle "
        "demandait ; il ne reste donc rien à faire."
    ),
    "chat.expired_note": "La dernière proposition a expiré avant d'être approuvée.",
    "order.title": "Commande",
    "order.participant": "Participant(e)",
    "order.total": "Total de la commande",
    "order.registration": "Inscription",
    "order.registration_active": "Active",
    "order.registration_in": "Active · une place dans la ligue {league}",
    "order.registration_cancelled": "Annulée",
    "order.items": "Articles",
    "order.discounts": "Remises",
    "order.payments": "Paiements",
    "order.refunds": "Remboursements",
    "order.note": "Note sur la commande",
    "order.applied": "appliquée",
    "order.not_applied": "non appliquée",
    "order.refunded_on": "{amount} remboursés le {day}",
    "order.refunded": "{amount} remboursés",
    "order.refundable": "{amount} remboursable",
    "inbox.approvals": "Approbations : {given} sur {required}",
    "inbox.policy_changed": "Politique modifiée : l'approuver la renvoie",
}
