"""``countersign --help`` in French (``--language fr``): every command's and option's help, and
argparse's own headings, said by ``FrenchHelpFormatter``. Imported only when a French help or
usage is shown: the English grammar (``parser.py``) stays the one source of the commands, and
a help string missing here shows in English (tests/test_cli_help_language.py lists none)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

#: argparse's headings (it writes a colon right after each: French puts a space before it)
#: and usage prefix.
HEADINGS = {
    "positional arguments": "arguments positionnels ",
    "options": "options ",
    "optional arguments": "options ",
}
USAGE = "utilisation : "

#: Each help string of the grammar (parser.py, grammar_services.py), in French.
HELP_FR = {
    "AI assistants propose; people approve; the application executes.": (
        "Les assistants IA proposent ; les personnes approuvent ; l'application exécute."
    ),
    "show this help message and exit": "afficher cette aide et quitter",
    "show program's version number and exit": "afficher la version du programme et quitter",
    "create the demo club data (idempotent)": (
        "créer les données des clubs de démonstration (sans effet si elles existent)"
    ),
    "every registered operation and its request schema": (
        "chaque opération enregistrée et le schéma de sa demande"
    ),
    "the club's own settings": "les réglages propres au club",
    "approval policies: who and how many approve": (
        "règles d'approbation : qui approuve, et combien de personnes"
    ),
    "the club's members": "les membres du club",
    "where a club's notifications are POSTed": (
        "où les notifications d'un club sont envoyées (POST)"
    ),
    "deliver the notifications (webhooks and e-mail)": (
        "livrer les notifications (webhooks et e-mails)"
    ),
    "order investigations and manual refunds": (
        "enquêtes sur les commandes et remboursements manuels"
    ),
    "leagues and members": "ligues et membres",
    "turn a model-facing request into a proposal": (
        "transformer une demande faite pour le modèle en proposition"
    ),
    "edit a proposal: a new revision of it from an edited request": (
        "modifier une proposition : une nouvelle révision à partir d'une demande modifiée"
    ),
    "approve a proposal by its id": "approuver une proposition par son identifiant",
    "decline a proposal by its id": "refuser une proposition par son identifiant",
    "a proposal's review card": "la fiche d'examen d'une proposition",
    "a proposal's full event history (auditors)": (
        "l'historique complet des événements d'une proposition (pour les auditeurs)"
    ),
    "one reconciliation pass over uncertain executions": (
        "un passage de rapprochement sur les exécutions incertaines"
    ),
    "one pass recording Expired for overdue proposals": (
        "un passage qui enregistre Expired pour les propositions échues"
    ),
    "the providers' sandboxes": "les bacs à sable des fournisseurs",
    "talk to a section assistant (interactive, or one --message)": (
        "parler à l'assistant d'une section (en interactif, ou un seul --message)"
    ),
    "pending proposals awaiting approval, newest first": (
        "les propositions en attente d'approbation, les plus récentes d'abord"
    ),
    "app-authored messages of one conversation": (
        "les messages écrits par l'application dans une conversation"
    ),
    "run, rebuild and inspect read models": (
        "exécuter, reconstruire et examiner les modèles de lecture"
    ),
    "export and verify the audit trail": "exporter et vérifier la piste d'audit",
    "people's sign-in credentials": "les identifiants de connexion des personnes",
    "serve the web pages and the JSON API": "servir les pages web et l'API JSON",
    "run the sweepers (reconcile, expire, notify) on a schedule until SIGTERM or Ctrl-C": (
        "exécuter les balayeurs (reconcile, expire, notify) à intervalles réguliers jusqu'à "
        "SIGTERM ou Ctrl-C"
    ),
    "serve the propose-only MCP server (stdio, or --http with tokens)": (
        "servir le serveur MCP qui ne fait que proposer (stdio, ou --http avec des jetons)"
    ),
    "API tokens for application services": "jetons d'API pour les services applicatifs",
    "the guided story, on a fresh SQLite file unless --database is given": (
        "l'histoire guidée, sur un nouveau fichier SQLite sauf si --database est donné"
    ),
    "print one JSON document": "afficher un seul document JSON",
    "sqlite:///file.db or postgresql://...": "sqlite:///fichier.db ou postgresql://...",
    "the language countersign answers in: en (the default) or fr": (
        "la langue dans laquelle countersign répond : en (par défaut) ou fr"
    ),
    "create countersign's tables (and a SQLite file) if the database has none; only seed, "
    "demo and org create do without it": (
        "créer les tables de countersign (et un fichier SQLite) si la base de données n'en a "
        "pas ; seuls seed, demo et org create s'en passent"
    ),
    "show the club's times in a time zone": "afficher les heures du club dans un fuseau horaire",
    "register a new club (then add its first manager with members add)": (
        "enregistrer un nouveau club (puis ajouter son premier responsable avec members add)"
    ),
    "e.g. America/Toronto": "par exemple Europe/Paris",
    "the club's id for good: granite": "l'identifiant définitif du club : granite",
    "the club's name as people read it": "le nom du club tel que les gens le lisent",
    "where its people read times": "où ses membres lisent les heures",
    "how many distinct people approve an operation's proposals": (
        "combien de personnes distinctes approuvent les propositions d'une opération"
    ),
    "every operation's policy in force": "la règle en vigueur pour chaque opération",
    "only proposals above this amount in cents; none: every proposal (default: as it is)": (
        "seulement les propositions au-delà de ce montant en centimes ; none : toutes les "
        "propositions (par défaut : inchangé)"
    ),
    "may the person who requested a proposal approve it (default: as it is)": (
        "la personne qui a demandé une proposition peut-elle l'approuver (par défaut : inchangé)"
    ),
    "must each approval be signed with the approver's passkey (default: as it is)": (
        "chaque approbation doit-elle être signée avec la clé d'accès de la personne qui "
        "approuve (par défaut : inchangé)"
    ),
    "the language countersign writes to a member in (its e-mails)": (
        "la langue dans laquelle countersign écrit à un membre (ses e-mails)"
    ),
    "add a person to the club, with exactly these permissions": (
        "ajouter une personne au club, avec exactement ces permissions"
    ),
    "take a person off the club (never its last holder of members.manage)": (
        "retirer une personne du club (jamais le dernier détenteur de members.manage)"
    ),
    "give a member exactly these permissions (the ones not named are withdrawn)": (
        "donner à un membre exactement ces permissions (celles qui ne sont pas nommées sont "
        "retirées)"
    ),
    "the member's language: en or fr": "la langue du membre : en ou fr",
    "as the pages show them": "tel que les pages l'affichent",
    "manager, treasurer, coach...": "responsable, trésorier, entraîneur...",
    "permission names separated by commas (none if left out)": (
        "noms de permissions séparés par des virgules (aucune si l'option est omise)"
    ),
    "permission names separated by commas; an empty value withdraws them all": (
        "noms de permissions séparés par des virgules ; une valeur vide les retire toutes"
    ),
    "register an endpoint (prints its secret once)": (
        "enregistrer un point de terminaison (affiche son secret une seule fois)"
    ),
    "a club's endpoints": "les points de terminaison d'un club",
    "stop posting to an endpoint": "cesser d'envoyer à un point de terminaison",
    "a club's deliveries, newest first, each attempt with its result and next try": (
        "les livraisons d'un club, les plus récentes d'abord, chaque tentative avec son "
        "résultat et le prochain essai"
    ),
    "put dead letters back in line": "remettre les lettres mortes dans la file",
    "https://... (or http://)": "https://... (ou http://)",
    "only the dead letters": "seulement les lettres mortes",
    "the next page: the deliveries listed after this one (the last line's id)": (
        "la page suivante : les livraisons listées après celle-ci (l'identifiant de la "
        "dernière ligne)"
    ),
    "every dead letter of the club": "toutes les lettres mortes du club",
    "deliver the outbox, pass after pass (stops cleanly on SIGTERM or Ctrl-C)": (
        "livrer la boîte d'envoi, passage après passage (s'arrête proprement sur SIGTERM ou Ctrl-C)"
    ),
    "one pass, then exit": "un passage, puis quitter",
    "the order investigation": "l'enquête sur la commande",
    "a manual refund": "un remboursement manuel",
    "leagues and member counts": "les ligues et leur nombre de membres",
    "add a member to a league": "ajouter un membre à une ligue",
    "the club's short name (granite)": "le nom court du club (granite)",
    "the member who requests it": "le membre qui la demande",
    "the operation's kind; `countersign operations` lists them and their requests": (
        "le type de l'opération ; `countersign operations` les liste avec leurs demandes"
    ),
    "the order: its number, as the registration system shows it (refund-ok), or its id; left "
    "out for the club's own roster or broadcast form; another section's record by its id or "
    "key": (
        "la commande : son numéro, tel que le système d'inscription l'affiche (refund-ok), ou "
        "son identifiant ; omise pour la liste des membres du club ou son formulaire de "
        "diffusion ; l'enregistrement d'une autre section par son identifiant ou sa clé"
    ),
    "the operation's request as a JSON object, or @ and a file holding it": (
        "la demande de l'opération sous forme d'objet JSON, ou @ suivi d'un fichier qui la contient"
    ),
    "the member acting, by email; they must belong to the proposal's club": (
        "le membre qui agit, par son e-mail ; il doit appartenir au club de la proposition"
    ),
    "the whole edited request as a JSON object, or @ and a file holding it": (
        "toute la demande modifiée sous forme d'objet JSON, ou @ suivi d'un fichier qui la contient"
    ),
    "a version, or an ISO time, which holds the whole of its last unit (a time as history "
    "shows it, to the millisecond, holds the events shown at it)": (
        "une version, ou une heure ISO, qui comprend toute sa dernière unité (une heure telle "
        "que history l'affiche, à la milliseconde, comprend les événements affichés à cette "
        "heure)"
    ),
    "refunds the payment sandbox holds": (
        "les remboursements que contient le bac à sable de paiement"
    ),
    "deliveries the e-mail sandbox holds": "les envois que contient le bac à sable d'e-mail",
    "one turn, then exit": "un seul échange, puis quitter",
    "continue this conversation": "poursuivre cette conversation",
    "follow the log (stops cleanly on SIGTERM or Ctrl-C)": (
        "suivre le journal (s'arrête proprement sur SIGTERM ou Ctrl-C)"
    ),
    "drop and rebuild from the whole log": "supprimer et reconstruire à partir de tout le journal",
    "position and lag of each projection": "la position et le retard de chaque projection",
    "pass one event that cannot be read, in every projection, recorded with a reason": (
        "passer un événement illisible, dans chaque projection, en enregistrant une raison"
    ),
    "the event's notification id": "l'identifiant de notification de l'événement",
    "why (kept, and shown by status)": "pourquoi (conservé, et affiché par status)",
    "stream the audit trail": "diffuser la piste d'audit",
    "prove no proposal event was altered or removed": (
        "prouver qu'aucun événement de proposition n'a été altéré ni retiré"
    ),
    "write where every stream stood, to keep outside the database (verify --anchor)": (
        "écrire où en était chaque flux, à garder hors de la base de données (verify --anchor)"
    ),
    "one club's rows (its slug)": "les lignes d'un club (son nom court)",
    "one proposal's rows": "les lignes d'une proposition",
    "the rows of one actor (or countersign)": "les lignes d'un acteur (ou de countersign)",
    "rows at or after this ISO time": "les lignes à cette heure ISO ou après",
    "rows before this ISO time": "les lignes avant cette heure ISO",
    "with seal keys configured: a proposal without a seal fails the check too (for a "
    "deployment that held its keys from its start; COUNTERSIGN_SEALS_REQUIRED=true says it "
    "for every check)": (
        "avec des clés de scellement configurées : une proposition sans sceau fait aussi "
        "échouer la vérification (pour un déploiement qui a eu ses clés dès le début ; "
        "COUNTERSIGN_SEALS_REQUIRED=true le dit pour chaque vérification)"
    ),
    "also check the store against an anchor `audit anchor` wrote: every stream it holds "
    "(the proposals, the clubs, members, orders, forms, policies...) must still have each "
    "anchored event (none removed, changed or cut back); the events recorded after it, which "
    "it does not cover, are counted (an anchor of an earlier release covers the proposals "
    "only, and is said to)": (
        "vérifier aussi le stockage par rapport à une ancre écrite par `audit anchor` : chaque "
        "flux qu'elle contient (les propositions, les clubs, membres, commandes, formulaires, "
        "règles...) doit avoir encore chaque événement ancré (aucun supprimé, modifié ou "
        "tronqué) ; les événements enregistrés après elle, qu'elle ne couvre pas, sont comptés "
        "(une ancre d'une version antérieure ne couvre que les propositions, et le dit)"
    ),
    "with --anchor: refuse an unsigned anchor (exit status 2, as for any anchor that cannot "
    "be trusted), whatever the deployment requires of seals": (
        "avec --anchor : refuser une ancre non signée (code de sortie 2, comme pour toute ancre "
        "à laquelle on ne peut se fier), quoi que le déploiement exige des sceaux"
    ),
    "with --anchor: fail the check (exit status 5) when more than N of the proposals' events "
    "were recorded after the anchor (it is older than the deployment's anchors should be)": (
        "avec --anchor : faire échouer la vérification (code de sortie 5) quand plus de N "
        "événements de propositions ont été enregistrés après l'ancre (elle est plus ancienne "
        "que les ancres du déploiement ne devraient l'être)"
    ),
    "a new file to write it to (default: stdout)": (
        "un nouveau fichier où l'écrire (par défaut : la sortie standard)"
    ),
    "set a person's password (read from stdin or a prompt) and end their browser sessions": (
        "définir le mot de passe d'une personne (lu sur l'entrée standard ou demandé) et "
        "terminer ses sessions de navigateur"
    ),
    "server processes sharing the port (default 1); the projection runner runs as its own "
    "service": (
        "processus serveurs partageant le port (1 par défaut) ; l'exécutant des projections "
        "tourne comme un service à part"
    ),
    "run the sweepers (reconcile, expire, notify) in this process, once however many "
    "workers; default: on for SQLite, off for PostgreSQL, where countersign worker runs them": (
        "exécuter les balayeurs (reconcile, expire, notify) dans ce processus, une seule fois "
        "quel que soit le nombre de workers ; par défaut : activé pour SQLite, désactivé pour "
        "PostgreSQL, où countersign worker les exécute"
    ),
    "pause between passes": "pause entre les passages",
    "one pass of each sweeper, then stop": "un passage de chaque balayeur, puis s'arrêter",
    "serve its metrics": "servir ses métriques",
    "stdio: the club the member acts in": "stdio : le club dans lequel le membre agit",
    "stdio: the member": "stdio : le membre",
    "streamable HTTP, API tokens as bearer": "HTTP diffusable, jetons d'API en bearer",
    "issue a token (shown once)": "émettre un jeton (montré une seule fois)",
    "revoke a token at once": "révoquer un jeton immédiatement",
    "tokens of an organization": "les jetons d'une organisation",
    "the member the service acts as": "le membre au nom duquel le service agit",
    "comma-separated, e.g. orders.refund,email_broadcasts.prepare": (
        "séparées par des virgules, par exemple orders.refund,email_broadcasts.prepare"
    ),
    "an approver token, for a service that acts for this person after they decided in its "
    "own interface (it may approve, decline and edit; MCP refuses it). Without it: an agent "
    "token, which reads and proposes and never decides": (
        "un jeton d'approbation, pour un service qui agit pour cette personne après qu'elle a "
        "décidé dans sa propre interface (il peut approuver, refuser et modifier ; MCP le "
        "refuse). Sans lui : un jeton d'agent, qui lit et propose et ne décide jamais"
    ),
    "keep the demo's fresh SQLite file (its path is printed last) instead of removing it when "
    "the demo ends": (
        "garder le fichier SQLite neuf de la démo (son chemin est affiché en dernier) au lieu "
        "de le supprimer à la fin de la démo"
    ),
    "then serve the pages over the demo's data, and print the address and sign-ins": (
        "puis servir les pages sur les données de la démo, et afficher l'adresse et les "
        "identifiants de connexion"
    ),
}


def french(text: str | None) -> str | None:
    """``text`` in French, if the grammar's help strings have it (as it is otherwise)."""
    return HELP_FR.get(text, text) if text else text


class FrenchHelpFormatter(argparse.HelpFormatter):
    """argparse's help and usage, in French: its headings, its usage prefix, and every
    description and help string ``HELP_FR`` has."""

    def add_usage(
        self,
        usage: str | None,
        actions: Iterable[argparse.Action],
        groups: Iterable[Any],
        prefix: str | None = None,
    ) -> None:
        super().add_usage(usage, actions, groups, USAGE if prefix is None else prefix)

    def start_section(self, heading: str | None) -> None:
        super().start_section(HEADINGS.get(heading, heading) if heading else heading)

    def add_text(self, text: str | None) -> None:
        super().add_text(french(text))

    def _get_help_string(self, action: argparse.Action) -> str | None:
        return french(action.help)
