"""What ``countersign demo`` tells, in English and French (``--language fr``): its chapters'
titles, its narration, and Ava's words to the assistants (the offline stand-in model reads
both languages). The cards and listings it shows speak the same language (cli/cards.py and
cli/listings.py); a --json document's data stays as the commands give it."""

from __future__ import annotations

from countersign.domain.contracts.presentation import Localized as L

# -- chapter titles ---------------------------------------------------------------------------

SEEDED_TITLE = L(
    "A club with orders, a roster, and sandboxes for payments and e-mail",
    "Un club avec des commandes, une liste de membres, et des bacs à sable pour les paiements "
    "et les e-mails",
)
ASKS_TITLE = L(
    "Ava asks the order assistant; the application writes the contract",
    "Ava s'adresse à l'assistant des commandes ; l'application rédige le contrat",
)
APPROVES_TITLE = L("Ava approves by id alone", "Ava approuve par le seul identifiant")
AGAIN_TITLE = L(
    "Approving again returns the stored outcome, executing nothing",
    "Approuver de nouveau renvoie le résultat enregistré, sans rien exécuter",
)
STALE_TITLE = L(
    "State changes before approval: the proposal fails closed",
    "L'état change avant l'approbation : la proposition échoue sans rien faire",
)
LOST_TITLE = L(
    "The card provider's response is lost", "La réponse du fournisseur de carte est perdue"
)
CREDIT_TITLE = L(
    "A card that declines, and a refund to account credit instead",
    "Une carte qui refuse, et un remboursement en crédit de compte à la place",
)
CANCEL_TITLE = L(
    "A registration is cancelled: a card refund and a roster change, together",
    "Une inscription est annulée : un remboursement par carte et un changement de ligue, ensemble",
)
TWO_TITLE = L(
    "Two managers for a refund above $100, and an edit that is a new revision",
    "Deux responsables pour un remboursement de plus de 100 $, et une modification qui est "
    "une nouvelle révision",
)
DRAFT_TITLE = L(
    "An email draft from Ava's words: the audience is recounted at approval",
    "Un brouillon d'e-mail à partir des mots d'Ava : l'audience est recomptée à l'approbation",
)
MOVE_TITLE = L(
    "A member changes league from Ava's words: the roster is rechecked at approval",
    "Un membre change de ligue à partir des mots d'Ava : la liste est revérifiée à l'approbation",
)
SEND_TITLE = L(
    "Sending the applied draft: once, though the e-mail service's answer is lost",
    "L'envoi du brouillon appliqué : une seule fois, bien que la réponse du service d'e-mail "
    "soit perdue",
)
OTHERS_TITLE = L(
    "Every other operation, from a manager's words to its outcome",
    "Toutes les autres opérations, des mots d'un responsable à leur résultat",
)
EXPIRE_TITLE = L("Proposals expire", "Les propositions expirent")
HISTORY_TITLE = L(
    "The auditor replays one proposal's history",
    "L'auditeur rejoue l'historique d'une proposition",
)
READ_MODELS_TITLE = L(
    "Read models, rebuilt from the one event stream",
    "Les modèles de lecture, reconstruits à partir de l'unique flux d'événements",
)

# -- Ava's words ------------------------------------------------------------------------------

REFUND_WORDS = L(
    "Olivia says she registered early but never got her early-bird discount. Fix it?",
    "Olivia dit qu'elle s'est inscrite tôt mais n'a jamais eu sa remise d'inscription "
    "anticipée. Tu peux corriger ?",
)
CANCEL_WORDS = L(
    "Olivia can't play this season after all. Please cancel her registration.",
    "Olivia ne peut finalement pas jouer cette saison. Annule son inscription, s'il te plaît.",
)
DRAFT_WORDS = L(
    "Email the Thursday Seniors and Monday Night Open about ice times moving 30 minutes later.",
    "Envoie un e-mail aux Thursday Seniors et au Monday Night Open sur les heures de glace "
    "décalées de 30 minutes.",
)
MOVE_WORDS = L(
    "Move Olivia Chen from Sunday Mixed Doubles to Thursday Seniors",
    "Déplace Olivia Chen de Sunday Mixed Doubles vers Thursday Seniors",
)
SEND_WORDS = L(
    "The draft looks good: send the draft to them.",
    "Le brouillon est bien : envoie le brouillon.",
)
SEND_AGAIN_WORDS = L(
    "Send the draft again, just to be sure.", "Envoie le brouillon encore une fois, par sécurité."
)

# -- the narration ----------------------------------------------------------------------------

SEEDED = L(
    "Database: {database}\nSeeded {orders} orders in two clubs. Ava manages the Granite "
    "Curling Club.",
    "Base de données : {database}\n{orders} commandes créées dans deux clubs. Ava est "
    "responsable du Granite Curling Club.",
)
MODEL_READ = L(
    "The model read the order and asked for: {asked}\nIt never names an amount. The "
    "application computed it and froze this preview:",
    "Le modèle a lu la commande et a demandé : {asked}\nIl ne donne jamais de montant. "
    "L'application l'a calculé et a figé cet aperçu :",
)
SAME_OUTCOME = L(
    "\n  Same stored outcome, byte for byte: {same}. Provider requests for it: {requests}.",
    "\n  Même résultat enregistré, octet pour octet : {same}. Demandes au fournisseur pour "
    "elle : {requests}.",
)
YES = L("True", "oui")
NO = L("False", "non")
REFUNDED_BY_HAND = L(
    "Meanwhile, in another tab, the whole payment is refunded by hand.",
    "Pendant ce temps, dans un autre onglet, tout le paiement est remboursé à la main.",
)
PROVIDER_RECEIVED = L(
    "The provider did receive it: {requests} request. Nobody improvises a second call.",
    "Le fournisseur l'a bien reçue : {requests} demande. Personne n'improvise un second appel.",
)
RECONCILER = L(
    "The reconciler looks the original idempotency key up:",
    "Le rapprocheur consulte la clé d'idempotence d'origine :",
)
STILL_REQUESTS = L(
    "\n  Provider requests for it, still: {requests}.",
    "\n  Demandes au fournisseur pour elle, toujours : {requests}.",
)
SECOND_DRAFT = L(
    "A second, identical draft is proposed; then Grace Kim joins Thursday Seniors.",
    "Un second brouillon, identique, est proposé ; puis Grace Kim rejoint Thursday Seniors.",
)
MODEL_ASKED = L(
    "The model asked for: {asked}\nIt names the member by the email the search showed; the "
    "application counted both leagues before and after the move:\n",
    "Le modèle a demandé : {asked}\nIl désigne le membre par l'e-mail que la recherche a "
    "montré ; l'application a compté les deux ligues avant et après le déplacement :\n",
)
LUCAS = L(
    "Ava also proposes moving Lucas Roy to the Junior Program; before she approves, the front "
    "desk signs him up for it directly.",
    "Ava propose aussi de déplacer Lucas Roy vers le Junior Program ; avant qu'elle approuve, "
    "l'accueil l'y inscrit directement.",
)
A_DAY_PASSES = L(
    "A day passes before anyone looks at it.", "Un jour passe avant que quiconque la regarde."
)
LEFT_FOR_LATER = L(
    "Emma's card declined earlier; Ava proposes account credit instead and leaves it for later.",
    "La carte d'Emma a été refusée plus tôt ; Ava propose un crédit de compte à la place et le "
    "laisse pour plus tard.",
)
INBOX = L(
    "Ava's inbox (the browser view projection):\n",
    "La boîte de réception d'Ava (la projection browser_view) :\n",
)
HANDBACK = L(
    "What the application said back into that conversation (never a model paraphrase):\n",
    "Ce que l'application a répondu dans cette conversation (jamais une paraphrase du modèle) :\n",
)
REVISION_CONTEXT = L(
    "Revision context left for Ava's next message: {context}",
    "Contexte de révision laissé pour le prochain message d'Ava : {context}",
)
AUDIT_EXPORT = L(
    "Audit export ({rows} rows, first five):\n",
    "Export d'audit ({rows} lignes, les cinq premières) :\n",
)
VERIFIED = L(
    "audit verify: {verdict}: {events} events of {proposals} proposals, every hash-chain link "
    "holds.",
    "audit verify : {verdict} : {events} événements de {proposals} propositions, chaque maillon "
    "de la chaîne de hachage tient.",
)
BROKEN = L("BROKEN", "ROMPUE")
CANCEL_EXPLAINED = L(
    "The model chose only where the money goes. The application computed what is left to "
    "refund (what was paid, less the discount refunded earlier) and the spot to release.",
    "Le modèle n'a choisi que la destination de l'argent. L'application a calculé ce qui reste "
    "à rembourser (ce qui a été payé, moins la remise remboursée plus tôt) et la place à "
    "libérer.",
)
CANCELLED = L(
    "Provider requests for it: {requests}. The order was cancelled and the spot released in "
    "the commit that recorded the provider's answer:\n",
    "Demandes au fournisseur pour elle : {requests}. La commande a été annulée et la place "
    "libérée dans la transaction qui a enregistré la réponse du fournisseur :\n",
)
MEMBERS_CHANGED = L(
    "  {name}: {before} -> {after} members", "  {name} : {before} -> {after} membres"
)
POLICY = L(
    "Granite's approval policy for {operation}: {approvals} distinct managers above {amount} "
    "(set by command: countersign policy set).",
    "La règle d'approbation de Granite pour {operation} : {approvals} responsables distincts "
    "au-delà de {amount} (fixée par la commande countersign policy set).",
)
AVA_EDITS = L(
    "Ava edits it: account credit instead of the card. The whole contract ran again on the "
    "edited request; the first proposal is superseded in the same commit.\n",
    "Ava la modifie : un crédit de compte au lieu de la carte. Tout le contrat s'est exécuté "
    "de nouveau sur la demande modifiée ; la première proposition est remplacée dans la même "
    "transaction.\n",
)
APPROVING_THE_FIRST = L("Approving the first one now:\n", "Approuver maintenant la première :\n")
APPROVES = L("{who} approves:\n", "{who} approuve :\n")
TEST_ADDRESS = L(
    "The club's e-mail test address, {address}, joins Thursday Seniors: the e-mail sandbox "
    "delivers to it, then loses its answer.",
    "L'adresse e-mail de test du club, {address}, rejoint Thursday Seniors : le bac à sable "
    "d'e-mail lui livre le message, puis perd sa réponse.",
)
MODEL_CHOOSES_NOTHING = L(
    "The model chooses nothing: the application froze the applied draft with its counted "
    "audience and every address.\n",
    "Le modèle ne choisit rien : l'application a figé le brouillon appliqué avec son audience "
    "comptée et chaque adresse.\n",
)
SERVICE_RECEIVED = L(
    "The service did receive it: {requests} request. Nobody sends it again.",
    "Le service l'a bien reçu : {requests} demande. Personne ne le renvoie.",
)
RECONCILE_COMMAND = L(
    "countersign reconcile looks the original idempotency key up:",
    "countersign reconcile consulte la clé d'idempotence d'origine :",
)
SANDBOX_HOLDS = L(
    "What the e-mail sandbox holds (countersign provider deliveries): {deliveries}. Exactly "
    "one delivery.",
    "Ce que contient le bac à sable d'e-mail (countersign provider deliveries) : "
    "{deliveries}. Exactement un envoi.",
)
DELIVERY = L(
    "{recipients} recipients, {status}, {requests} request(s)",
    "{recipients} destinataires, {status}, {requests} demande(s)",
)
ONCE_EVER = L(
    "\n  One send per applied draft, ever.",
    "\n  Un seul envoi par brouillon appliqué, pour toujours.",
)
NO_SCENE = L(
    "{title}: its contract declares no demo scene (demo_scene).",
    "{title} : son contrat ne déclare aucune scène de démonstration (demo_scene).",
)
#: The demo's last line: what became of the throwaway database (``story.throwaway_database``).
DATABASE_REMOVED = L(
    "The demo's database was removed with its folder ({folder}). To keep it (to look at it, or "
    "serve it again), run the demo with --keep.",
    "La base de données de la démo a été supprimée avec son dossier ({folder}). Pour la garder "
    "(pour l'examiner, ou la servir de nouveau), lancez la démo avec --keep.",
)
DATABASE_KEPT = L(
    "The demo's database is kept (--keep): {database}. Serve it with `countersign serve "
    "--database {database}` and sign in as ava@granite.example with ava-demo-password (the "
    "demo's people and passwords: `countersign seed --database {database}`); remove its "
    "folder {folder} when you are done with it.",
    "La base de données de la démo est gardée (--keep) : {database}. Servez-la avec "
    "`countersign serve --database {database}` et connectez-vous en tant que "
    "ava@granite.example avec ava-demo-password (les personnes de la démo et leurs mots de "
    "passe : `countersign seed --database {database}`) ; supprimez son dossier {folder} quand "
    "vous n'en avez plus besoin.",
)
