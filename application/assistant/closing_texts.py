"""The application's own closing words of an assistant turn (``service.AssistantService``),
in English and French: what the manager reads when the turn proposed something, ran out of
rounds, met the proposal limit or a proposal held for people, or found the model unavailable
(or its club's assistants all busy). The model never writes these.
"""

from __future__ import annotations

from typing import Any

from countersign.application.assistant.turn_limits import Busy
from countersign.application.errors import HeldForPeopleError
from countersign.domain.contracts.presentation import Localized
from countersign.domain.contracts.problems import Problem, explain
from countersign.domain.messages import shows_amounts
from countersign.domain.times import seconds_wait

#: The line of a section's instructions that tells the model which language the manager
#: reads countersign in (the page's, or the chat command's ``--language``): a real model
#: writes in it, and the offline stand-in reads it as a model would.
WRITE_TO_THE_MANAGER = {
    "en": "Write to the manager in English, the language they read countersign in.",
    "fr": "Write to the manager in French (français), the language they read countersign in.",
}

#: What a person reads about a message refused before any turn (the line under it, for the
#: model and the API, says it precisely): nothing written, or past ``MAX_MESSAGE``.
MESSAGE_BLANK = Localized(
    "Write a message first: this one shows nothing; nothing was sent.",
    "Écrivez d'abord un message : celui-ci ne montre rien ; rien n'a été envoyé.",
)
MESSAGE_TOO_LONG = Localized(
    "A message holds at most {limit} characters; nothing was sent. Shorten it, or send it in "
    "parts.",
    "Un message compte au plus {limit} caractères ; rien n'a été envoyé. Raccourcissez-le, ou "
    "envoyez-le en plusieurs fois.",
)

PROPOSED = Localized(
    "I prepared a proposal for your review. The card shows exactly what approval will do, "
    "with every amount computed by the application. Nothing changes until you approve it.",
    "J'ai préparé une proposition à votre intention. La carte montre exactement ce que fera "
    "l'approbation, chaque montant calculé par l'application. Rien ne change tant que vous ne "
    "l'approuvez pas.",
)
PROPOSED_NO_AMOUNTS = Localized(
    "I prepared a proposal for your review. The card shows exactly what approval will do. "
    "Nothing changes until you approve it.",
    "J'ai préparé une proposition à votre intention. La carte montre exactement ce que fera "
    "l'approbation. Rien ne change tant que vous ne l'approuvez pas.",
)
"""What a turn that proposed something without an amount (a draft, a move) ends with."""
REPLACES = Localized(
    "It replaces an earlier proposal that was awaiting approval, which can no longer be approved.",
    "Elle remplace une proposition antérieure qui attendait une approbation et qui ne peut "
    "plus être approuvée.",
)
"""Added when the proposal superseded a pending one (the same record, or the same subject of
it: the same member in the same league of the roster), which its card elsewhere shows as
replaced."""
ROUND_LIMIT = Localized(
    "I could not prepare a valid proposal this time. {why}Nothing was changed. Rephrase the "
    "request, or use the ordinary interface.",
    "Je n'ai pas pu préparer de proposition valable cette fois. {why}Rien n'a été modifié. "
    "Reformulez la demande, ou passez par l'interface habituelle.",
)
"""The closing text of a turn that ran out of rounds; ``{why}`` is the last refusal in the
manager's words (``Problem.for_people``) followed by a space, or nothing."""
RATE_LIMITED = Localized(
    "You have made many proposals in a short time, so I cannot prepare another one now. "
    "Nothing was changed; try again in {wait}.",
    "Vous avez fait beaucoup de propositions en peu de temps : je ne peux pas en préparer une "
    "autre maintenant. Rien n'a été modifié ; réessayez dans {wait}.",
)
HELD_FOR_PEOPLE = Localized(
    "A proposal for this is already waiting for a decision ({why}), so I did not replace it. "
    "Nothing was changed: open it from the inbox to approve, edit or decline it.",
    "Une proposition pour ceci attend déjà une décision ({why}) : je ne l'ai pas remplacée. "
    "Rien n'a été modifié ; ouvrez-la depuis « À traiter » pour l'approuver, la modifier ou "
    "la refuser.",
)
#: Why a pending proposal was held for people (``HeldForPeopleError.reason``), in words.
HELD_WHY = {
    HeldForPeopleError.REQUESTED_BY_ANOTHER: Localized(
        "another member asked for it", "un autre membre l'a demandée"
    ),
    HeldForPeopleError.APPROVED: Localized(
        "someone has already approved it", "quelqu'un l'a déjà approuvée"
    ),
    HeldForPeopleError.REQUESTED_ELSEWHERE: Localized(
        "it was asked for directly or through another agent",
        "elle a été demandée directement ou par un autre agent",
    ),
}
UNAVAILABLE = Localized(
    "The assistant is unavailable right now. Nothing was changed; try again shortly.",
    "L'assistant est indisponible pour le moment. Rien n'a été modifié ; réessayez bientôt.",
)
CLUB_BUSY = Localized(
    "Your club's assistants are all busy right now. Nothing was changed; try again shortly.",
    "Les assistants de votre club sont tous occupés pour le moment. Rien n'a été modifié ; "
    "réessayez bientôt.",
)
"""What a turn ends with when its club holds what it may of the turns waiting on the model:
its whole share, or the turns it has while the clubs' extra turns (past each one's first) are
all taken (``turn_limits.TurnSlots``)."""


def closing_text(
    ended: str,
    refused: list[Problem],
    language: str,
    limited: list[int],
    proposal: dict[str, Any] | None = None,
    held: list[str] | None = None,
    busy: Busy | None = None,
) -> str | None:
    """The application's own closing text of a turn that ``ended`` so, in ``language``;
    ``busy``: why it got no slot to wait on the model, if it got none."""
    if ended == "proposal":
        made = proposal or {}
        with_amounts = shows_amounts(str(made.get("operation")), dict(made.get("preview") or {}))
        said = (PROPOSED if with_amounts else PROPOSED_NO_AMOUNTS).text(language)
        return f"{said} {REPLACES.text(language)}" if made.get("supersedes") else said
    if ended == "rate_limited":
        return RATE_LIMITED.text(language, wait=seconds_wait(limited[-1], language))
    if ended == "held_for_people" and held:
        return HELD_FOR_PEOPLE.text(language, why=HELD_WHY[held[-1]].text(language))
    if ended == "round_limit":
        why = explain(refused, language)
        return ROUND_LIMIT.text(language, why=f"{why} " if why else "")
    if ended == "model_unavailable":
        return (CLUB_BUSY if busy is Busy.CLUB else UNAVAILABLE).text(language)
    return None
