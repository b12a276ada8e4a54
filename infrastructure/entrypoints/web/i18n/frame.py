"""The frame every page shares: the site's name, its navigation, signing in, choosing a
club, the error pages and the notices shown after an action."""

from __future__ import annotations

EN: dict[str, str] = {
    "app.tagline": "AI assistants propose. You approve. The club's system executes.",
    "nav.inbox": "Inbox",
    "nav.sign_out": "Sign out",
    "nav.sign_out_everywhere": "Sign out everywhere (every device and browser)",
    "nav.passkeys": "Your passkeys",
    "nav.language": "Language",
    "nav.skip": "Skip to the content",
    "sign_in.title": "Sign in",
    "sign_in.lead": "Sign in to review and approve what your club's assistants propose.",
    "sign_in.email": "Email",
    "sign_in.password": "Password",
    "sign_in.submit": "Sign in",
    "sign_in.failed": "That email and password do not match. Try again.",
    "sign_in.busy": (
        "Many sign-ins are being checked right now, so yours was not. Nothing was counted "
        "against you: try again in a few seconds."
    ),
    "sign_in.throttled": (
        "Too many failed sign-in attempts. Wait about {minutes} minutes, then try again."
    ),
    "sign_in.throttled_one": (
        "Too many failed sign-in attempts. Wait about a minute, then try again."
    ),
    "sign_in.signed_out": "You are signed out.",
    "sign_in.signed_out_everywhere": "You are signed out everywhere, on every device.",
    "sign_in.choose_club": "Choose a club",
    "sign_in.choose_lead": "Your account belongs to more than one club. Which one?",
    "sign_in.expired": "Your session ended. Sign in again.",
    "sign_in.session_ended": (
        "Your session ended: signed out on every device, a new password, or unused for too "
        "long. Sign in again to continue."
    ),
    "nav.attention": "Needs attention",
    "nav.awaiting_count": "{count} awaiting your decision",
    "nav.attention_count": "{count} needing attention",
    "club.leagues": "Leagues",
    "club.members": "{count} members",
    "club.members.one": "1 member",
    "club.full": "full",
    "club.form": "Broadcast form now",
    "club.form_empty": "The broadcast form is empty.",
    "notice.executed": "Approved. Here is what happened.",
    "notice.executed.succeeded": "Approved and done. Here is what happened.",
    "notice.executed.revision_required": (
        "Approved, but not executed: nothing changed. Here is why."
    ),
    "notice.executed.already_so": (
        "Approved, but not executed: it was already so. Nothing is left to do."
    ),
    "notice.executed.needs_reconciliation": (
        "Approved, but the provider has not confirmed it yet. Do not do it again: this "
        "page says when it settles."
    ),
    "notice.executed.terminal_failure": (
        "Approved, but it failed: nothing changed. Give support the reference below."
    ),
    "notice.executed.other": "Approved. Here is what happened.",
    "notice.executed.sent_back": (
        "Sent back to the requester: nothing was approved or carried out. Here is why."
    ),
    "notice.already_completed": (
        "This proposal was already approved. This is its stored outcome; nothing was "
        "executed again."
    ),
    "notice.declined": "Declined. Nothing was changed.",
    "notice.not_pending": "This proposal was declined earlier; it can no longer be approved.",
    "notice.expired": "This proposal expired; it can no longer be approved.",
    "notice.in_progress": (
        "Someone else's approval of this proposal is executing. Refresh in a moment."
    ),
    "notice.forbidden": "Your role does not allow approving this kind of proposal.",
    "notice.decline.already_completed": (
        "Not declined: it had already been approved. Here is its outcome."
    ),
    "notice.decline.not_pending": "This proposal was already declined; nothing more was changed.",
    "notice.decline.expired": (
        "Not declined: this proposal had expired before anyone decided it. Nothing changed."
    ),
    "notice.decline.in_progress": (
        "Not declined: someone else's approval of it is executing. Refresh in a moment to see "
        "its outcome."
    ),
    "notice.decline.forbidden": "Your role does not allow declining this kind of proposal.",
    "notice.busy": "The records this proposal acts on are busy. Try again in a moment.",
    "notice.unverified_elsewhere": (
        "Nothing was approved: the page you approved from said countersign could not vouch "
        "for this record, and this server would carry out the record as it holds it, which "
        "is not what you read. Read it again below before deciding."
    ),
    "notice.order_missing": (
        "There is no order with that number in this club. Check the order reference the "
        "registration system shows, or use the order's id, under Start a conversation below."
    ),
    "notice.order_assistant_not_yours": (
        "Your role does not include the order assistant, so no order opens here. To use it, "
        "ask a club manager: they can change your permissions on the Members page."
    ),
    "notice.redelivered": "Put back in line: the next delivery pass sends it again.",
    "notice.nothing_redelivered": "There was no such dead letter; nothing was changed.",
    "notice.nothing_redelivered_all": (
        "No dead letter was put back: there are none, or only ones to endpoints removed since, "
        "which are not redelivered."
    ),
    "notice.redeliver_endpoint_removed": (
        "Not redelivered: its endpoint was removed, so there is nothing to deliver it to. To "
        "receive new notifications there, add the endpoint again."
    ),
    "nav.webhooks": "Webhooks",
    "nav.members": "Members",
    "notice.permissions_saved": "The permissions were saved: they apply from the next request.",
    "notice.permissions_unchanged": "Nothing changed: the member already held exactly those.",
    "notice.permissions_saved_own": (
        "The permissions were saved. You no longer hold “Manage members' permissions”, so the "
        "members page is closed to you; a member who holds it can give it back."
    ),
    "notice.endpoint_removed": "The endpoint was removed: it receives nothing more.",
    "notice.endpoint_not_removed": "There was no such endpoint; nothing was changed.",
    "nav.signed_in_as": "Signed in as {name} ({email}) at {club}",
    "error.not_found.title": "Not found",
    "error.not_found.text": (
        "There is nothing here in your club. The link may be wrong, or it belongs to "
        "another account."
    ),
    "error.method_not_allowed.title": "This page cannot do that",
    "error.method_not_allowed.text": (
        "This address does not accept that kind of request. Open it from a link or a "
        "button on the site."
    ),
    "error.bad_request.title": "This request cannot be read",
    "error.bad_request.text": "The browser sent something this page cannot read. Try again.",
    "error.forbidden.title": "Not allowed",
    "error.forbidden.text": "Your role in this club does not allow this.",
    "error.csrf.title": "This form expired",
    "error.csrf.text": (
        "For your safety the form was not accepted. Go back, reload the page and try again."
    ),
    "error.too_large.title": "Too much text",
    "error.too_large.text": "The form sent more text than this page accepts.",
    "error.too_many_changes.title": "Too many changes for now",
    "error.too_many_changes.text": (
        "You have changed the club's settings many times in a short time. Nothing was "
        "changed; wait a minute, then try again."
    ),
    "error.too_many_requests.title": "Too many pages at once",
    "error.too_many_requests.text": (
        "You have several pages loading at the same time. Nothing was done; wait for them "
        "to open, then try again."
    ),
    "error.too_many_proposals.title": "Too many proposals for now",
    "error.too_many_proposals.text": (
        "You have made many proposals in a short time. Nothing was changed; wait a minute, "
        "then try again."
    ),
    "error.database.title": "The database is not answering",
    "error.database.text": (
        "The club's records could not be reached just now. Try again in a few seconds. If you "
        "were approving or declining, it may have been recorded: open the proposal again to "
        "see where it stands before you do it again."
    ),
    "error.busy.title": "Busy for a moment",
    "error.busy.text": "The records this page works on are busy with other changes. Try again.",
    "error.unavailable.title": "Temporarily unavailable",
    "error.unavailable.text": "A part of the application is stopped; an operator is needed.",
    "error.internal.title": "Something went wrong",
    "error.internal.text": (
        "Something went wrong on our side. Nothing was changed by this page. Quote this "
        "reference if you contact support: {reference}"
    ),
    "error.home": "Go to the inbox",
    "error.sign_in": "Sign in",
    "notice.withdrawn": (
        "Another proposal was carried out and withdrew this one: it can no longer be "
        "approved or declined."
    ),
    "notice.awaiting_approvals": (
        "Your approval is recorded. Nothing runs until another manager approves too."
    ),
    "notice.already_approved_by_you": (
        "You have already approved this proposal, and an approval counts once per person. "
        "It awaits another manager."
    ),
    "notice.superseded": (
        "A newer proposal replaced this one; it can no longer be approved or declined."
    ),
    "notice.requester_may_not_approve": (
        "You requested this proposal; the club's policy asks another manager to approve it."
    ),
    "notice.passkey_required": (
        "This proposal's policy asks you to approve it with your passkey: nothing changed."
    ),
    "notice.passkey_rejected": (
        "Your passkey's answer could not be verified, so nothing was approved. Try again."
    ),
    "notice.operation_not_enabled": (
        "This proposal's operation is not enabled on this server (its plug-in is turned off), "
        "so nothing was approved, declined or changed. Ask whoever runs countersign to "
        "turn the plug-in back on to decide it."
    ),
    "notice.not_verifiable_here": (
        "This proposal is sealed with a key this server does not hold yet (a seal key being "
        "changed), so it could not be verified here. Nothing was approved or changed, and the "
        "proposal is still waiting for approval. Try again in a few minutes; if this goes on, "
        "tell whoever runs countersign."
    ),
    "notice.not_revisable": (
        "This proposal can no longer be edited: it was approved, or a newer one replaced it."
    ),
    "notice.not_revisable.already_so": (
        "There is nothing to edit: what this proposal asked for was already so, and nothing "
        "is left to do. For a different change, ask for a new proposal."
    ),
    "notice.revised": (
        "Here is the new proposal, prepared again from your changes. Review it before "
        "anyone approves it."
    ),
}

FR: dict[str, str] = {
    "app.tagline": ("Les assistants IA proposent. Vous approuvez. Le système du club exécute."),
    "nav.inbox": "À traiter",
    "nav.sign_out": "Se déconnecter",
    "nav.sign_out_everywhere": "Se déconnecter partout (tous les appareils et navigateurs)",
    "nav.passkeys": "Vos clés d'accès",
    "nav.language": "Langue",
    "nav.skip": "Aller au contenu",
    "sign_in.title": "Connexion",
    "sign_in.lead": (
        "Connectez-vous pour examiner et approuver ce que proposent les assistants du club."
    ),
    "sign_in.email": "Courriel",
    "sign_in.password": "Mot de passe",
    "sign_in.submit": "Se connecter",
    "sign_in.failed": "Ce courriel et ce mot de passe ne correspondent pas. Réessayez.",
    "sign_in.busy": (
        "Beaucoup de connexions sont en cours de vérification, la vôtre ne l'a pas été. Rien "
        "n'a été compté contre vous : réessayez dans quelques secondes."
    ),
    "sign_in.throttled": (
        "Trop de tentatives de connexion ont échoué. "
        "Patientez environ {minutes} minutes, puis réessayez."
    ),
    "sign_in.throttled_one": (
        "Trop de tentatives de connexion ont échoué. Patientez environ une minute, puis réessayez."
    ),
    "sign_in.signed_out": "Vous êtes déconnecté.",
    "sign_in.signed_out_everywhere": "Vous êtes déconnecté partout, sur tous vos appareils.",
    "sign_in.choose_club": "Choisissez un club",
    "sign_in.choose_lead": "Votre compte appartient à plusieurs clubs. Lequel ?",
    "sign_in.expired": "Votre session a pris fin. Reconnectez-vous.",
    "sign_in.session_ended": (
        "Votre session a pris fin : déconnexion de tous les appareils, nouveau mot de passe "
        "ou trop longue inactivité. Reconnectez-vous pour continuer."
    ),
    "nav.attention": "À surveiller",
    "nav.awaiting_count": "{count} en attente de votre décision",
    "nav.attention_count": "{count} à surveiller",
    "club.leagues": "Ligues",
    "club.members": "{count} membres",
    "club.members.one": "1 membre",
    "club.full": "complète",
    "club.form": "Formulaire d'envoi actuel",
    "club.form_empty": "Le formulaire d'envoi est vide.",
    "notice.executed": "Approuvée. Voici ce qui s'est passé.",
    "notice.executed.succeeded": "Approuvée et effectuée. Voici ce qui s'est passé.",
    "notice.executed.sent_back": (
        "Renvoyée au demandeur : rien n'a été approuvé ni exécuté. Voici pourquoi."
    ),
    "notice.executed.revision_required": (
        "Approuvée, mais non exécutée : rien n'a changé. Voici pourquoi."
    ),
    "notice.executed.already_so": (
        "Approuvée, mais non exécutée : c'était déjà le cas. Il ne reste rien à faire."
    ),
    "notice.executed.needs_reconciliation": (
        "Approuvée, mais le fournisseur ne l'a pas encore confirmée. Ne la refaites pas : "
        "cette page indique quand elle est réglée."
    ),
    "notice.executed.terminal_failure": (
        "Approuvée, mais en échec : rien n'a changé. Donnez au soutien la référence ci-dessous."
    ),
    "notice.executed.other": "Approuvée. Voici ce qui s'est passé.",
    "notice.already_completed": (
        "Cette proposition était déjà approuvée. Voici son résultat enregistré ; rien n'a "
        "été exécuté de nouveau."
    ),
    "notice.declined": "Refusée. Rien n'a été modifié.",
    "notice.not_pending": (
        "Cette proposition a déjà été refusée ; elle ne peut plus être approuvée."
    ),
    "notice.expired": "Cette proposition a expiré ; elle ne peut plus être approuvée.",
    "notice.in_progress": (
        "L'approbation de quelqu'un d'autre est en cours d'exécution. Actualisez dans un instant."
    ),
    "notice.forbidden": "Votre rôle ne permet pas d'approuver ce type de proposition.",
    "notice.decline.already_completed": (
        "Non refusée : elle avait déjà été approuvée. Voici son résultat."
    ),
    "notice.decline.not_pending": (
        "Cette proposition était déjà refusée ; rien de plus n'a été modifié."
    ),
    "notice.decline.expired": (
        "Non refusée : cette proposition avait expiré avant que quiconque la décide. Rien n'a "
        "changé."
    ),
    "notice.decline.in_progress": (
        "Non refusée : l'approbation de quelqu'un d'autre est en cours d'exécution. Actualisez "
        "dans un instant pour voir son résultat."
    ),
    "notice.decline.forbidden": "Votre rôle ne permet pas de refuser ce type de proposition.",
    "notice.busy": (
        "Les éléments visés par cette proposition sont occupés. Réessayez dans un instant."
    ),
    "notice.unverified_elsewhere": (
        "Rien n'a été approuvé : la page d'où vous avez approuvé indiquait que countersign ne "
        "pouvait pas garantir cet enregistrement, et ce serveur exécuterait l'enregistrement "
        "tel qu'il le détient, qui n'est pas ce que vous avez lu. Relisez-le ci-dessous "
        "avant de décider."
    ),
    "notice.order_missing": (
        "Aucune commande de ce club ne porte ce numéro. Vérifiez la référence de la commande "
        "dans le système d'inscription, ou utilisez son id, sous Démarrer une conversation "
        "plus bas."
    ),
    "notice.order_assistant_not_yours": (
        "Votre rôle ne comprend pas l'assistant des commandes : aucune commande ne s'ouvre "
        "ici. Pour l'utiliser, demandez à un gestionnaire du club : il peut changer vos "
        "permissions sur la page Membres."
    ),
    "notice.redelivered": "Remise en file : le prochain passage d'envoi la renverra.",
    "notice.nothing_redelivered": "Aucune lettre morte de ce type ; rien n'a été modifié.",
    "notice.nothing_redelivered_all": (
        "Aucune lettre morte remise en file : il n'y en a pas, ou seulement pour des points de "
        "réception retirés depuis, qui ne sont pas renvoyées."
    ),
    "notice.redeliver_endpoint_removed": (
        "Non renvoyée : son point de réception a été retiré, elle n'a plus de destinataire. "
        "Pour y recevoir les nouvelles notifications, ajoutez de nouveau ce point de "
        "réception."
    ),
    "nav.webhooks": "Webhooks",
    "nav.members": "Membres",
    "notice.permissions_saved": (
        "Les permissions sont enregistrées : elles s'appliquent dès la prochaine requête."
    ),
    "notice.permissions_unchanged": (
        "Rien n'a changé : le membre détenait déjà exactement celles-ci."
    ),
    "notice.permissions_saved_own": (
        "Les permissions sont enregistrées. Vous ne détenez plus « Gérer les permissions des "
        "membres » : la page des membres vous est donc fermée ; un membre qui la détient peut "
        "vous la redonner."
    ),
    "notice.endpoint_removed": "Le point de réception a été retiré : il ne reçoit plus rien.",
    "notice.endpoint_not_removed": ("Aucun point de réception de ce type ; rien n'a été modifié."),
    "nav.signed_in_as": "Connecté(e) : {name} ({email}), {club}",
    "error.not_found.title": "Introuvable",
    "error.not_found.text": (
        "Il n'y a rien ici dans votre club. Le lien est peut-être erroné, ou il appartient "
        "à un autre compte."
    ),
    "error.method_not_allowed.title": "Cette page ne peut pas faire cela",
    "error.method_not_allowed.text": (
        "Cette adresse n'accepte pas ce type de demande. Ouvrez-la depuis un lien ou un "
        "bouton du site."
    ),
    "error.bad_request.title": "Cette demande est illisible",
    "error.bad_request.text": (
        "Le navigateur a envoyé quelque chose que cette page ne peut pas lire. Réessayez."
    ),
    "error.forbidden.title": "Non autorisé",
    "error.forbidden.text": "Votre rôle dans ce club ne le permet pas.",
    "error.csrf.title": "Ce formulaire a expiré",
    "error.csrf.text": (
        "Par sécurité, le formulaire n'a pas été accepté. Revenez en arrière, actualisez la "
        "page et réessayez."
    ),
    "error.too_large.title": "Trop de texte",
    "error.too_large.text": "Le formulaire a envoyé plus de texte que cette page n'en accepte.",
    "error.too_many_changes.title": "Trop de modifications pour l'instant",
    "error.too_many_changes.text": (
        "Vous avez modifié les réglages du club de nombreuses fois en peu de temps. Rien n'a "
        "été modifié ; attendez une minute, puis réessayez."
    ),
    "error.too_many_requests.title": "Trop de pages à la fois",
    "error.too_many_requests.text": (
        "Plusieurs de vos pages sont en cours de chargement. Rien n'a été fait ; attendez "
        "qu'elles s'ouvrent, puis réessayez."
    ),
    "error.too_many_proposals.title": "Trop de propositions pour l'instant",
    "error.too_many_proposals.text": (
        "Vous avez fait beaucoup de propositions en peu de temps. Rien n'a été modifié ; "
        "attendez une minute, puis réessayez."
    ),
    "error.database.title": "La base de données ne répond pas",
    "error.database.text": (
        "Les données du club sont injoignables pour le moment. Réessayez dans quelques "
        "secondes. Si vous approuviez ou refusiez, c'est peut-être enregistré : rouvrez la "
        "proposition pour voir où elle en est avant de recommencer."
    ),
    "error.busy.title": "Occupé pour un instant",
    "error.busy.text": (
        "Les éléments visés par cette page sont occupés par d'autres changements. Réessayez."
    ),
    "error.unavailable.title": "Momentanément indisponible",
    "error.unavailable.text": (
        "Une partie de l'application est arrêtée ; un opérateur doit intervenir."
    ),
    "error.internal.title": "Une erreur s'est produite",
    "error.internal.text": (
        "Une erreur s'est produite de notre côté. Cette page n'a rien modifié. Citez cette "
        "référence si vous contactez le soutien : {reference}"
    ),
    "error.home": "Aller à la liste à traiter",
    "error.sign_in": "Se connecter",
    "notice.withdrawn": (
        "Une autre proposition a été exécutée et a retiré celle-ci\u00a0: elle ne peut plus "
        "être approuvée ni refusée."
    ),
    "notice.awaiting_approvals": (
        "Votre approbation est enregistrée. Rien ne s'exécute avant qu'un autre gestionnaire "
        "approuve aussi."
    ),
    "notice.already_approved_by_you": (
        "Vous avez déjà approuvé cette proposition, et chaque personne ne compte qu'une "
        "fois. Elle attend un autre gestionnaire."
    ),
    "notice.superseded": (
        "Une proposition plus récente a remplacé celle-ci ; elle ne peut plus être approuvée "
        "ni refusée."
    ),
    "notice.requester_may_not_approve": (
        "Vous avez demandé cette proposition ; la règle du club demande qu'un autre "
        "gestionnaire l'approuve."
    ),
    "notice.passkey_required": (
        "La règle de cette proposition demande de l'approuver avec votre clé d'accès : "
        "rien n'a changé."
    ),
    "notice.passkey_rejected": (
        "La réponse de votre clé d'accès n'a pas pu être vérifiée ; rien n'a été approuvé. "
        "Réessayez."
    ),
    "notice.operation_not_enabled": (
        "L'opération de cette proposition n'est pas activée sur ce serveur (son module "
        "d'extension est désactivé) : rien n'a été approuvé, refusé ni modifié. Demandez à la "
        "personne qui administre countersign de réactiver le module pour en décider."
    ),
    "notice.not_verifiable_here": (
        "Cette proposition est scellée avec une clé que ce serveur n'a pas encore (une clé de "
        "scellement en cours de changement) : elle n'a pas pu être vérifiée ici. Rien n'a "
        "été approuvé ni modifié, et la proposition attend toujours son approbation. Réessayez "
        "dans quelques minutes ; si cela dure, prévenez la personne qui administre countersign."
    ),
    "notice.not_revisable": (
        "Cette proposition ne peut plus être modifiée : elle a été approuvée, ou une plus "
        "récente l'a remplacée."
    ),
    "notice.not_revisable.already_so": (
        "Il n'y a rien à modifier : ce que demandait cette proposition était déjà le cas, et "
        "il ne reste rien à faire. Pour un autre changement, demandez une nouvelle proposition."
    ),
    "notice.revised": (
        "Voici la nouvelle proposition, préparée de nouveau à partir de vos modifications. "
        "Examinez-la avant que quiconque l'approuve."
    ),
}
