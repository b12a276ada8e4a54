"""What is wrong with a request, said twice: precisely for the model that corrects its call
(``field``, ``message``), and plainly for the manager (``for_people``, in every language)."""

from __future__ import annotations

from collections.abc import Iterable

from countersign.domain.contracts.presentation import Localized
from countersign.domain.errors import CountersignError
from pydantic import BaseModel, ConfigDict, Field


class RequestValueError(ValueError):
    """Raised by a request model's own validators; its message is the application's own
    words (never the input), so a problem may show it as it is."""


UNFIT_REQUEST = Localized(
    "The request did not fit this record, so nothing was prepared.",
    "La demande ne correspondait pas à ce dossier : rien n'a été préparé.",
)
"""What people read about a problem its raiser gave no sentence of its own."""


class Problem(BaseModel):
    """One safe, model-correctable problem with a request.

    ``field`` and ``message`` are precise, for the model that corrects its call and for the
    application services that read problem documents; ``for_people`` says the same to a
    manager, in every language, without field names, references or codes ("This payment was
    made in cash, so it can only go back as club account credit."). It is never dumped: the
    machine-facing answers keep exactly their two fields.
    """

    model_config = ConfigDict(frozen=True)

    field: str
    message: str
    for_people: Localized = Field(default=UNFIT_REQUEST, exclude=True)

    def explain(self, language: str = "en") -> str:
        """The problem for people, in ``language``."""
        return self.for_people.text(language)


def explain(problems: Iterable[Problem], language: str = "en") -> str:
    """Problems for people, in ``language``: each distinct sentence once, in order."""
    return " ".join(dict.fromkeys(problem.explain(language) for problem in problems))


#: A request's problems are reported up to this many; the rest are only counted.
MAX_PROBLEMS = 20


class InvalidRequestError(CountersignError):
    """Raised when a model request fails validation; carries safe problems only.

    At most MAX_PROBLEMS problems are kept, in order; ``more_problems`` counts the others
    (``more_problems`` passed in counts problems the caller already left out).
    """

    def __init__(self, problems: list[Problem], more_problems: int = 0) -> None:
        kept = problems[:MAX_PROBLEMS]
        super().__init__("; ".join(f"{p.field}: {p.message}" for p in kept))
        self.problems = kept
        self.more_problems = more_problems + len(problems) - len(kept)

    @classmethod
    def one(
        cls, field: str, message: str, for_people: Localized = UNFIT_REQUEST
    ) -> InvalidRequestError:
        return cls([Problem(field=field, message=message, for_people=for_people)])
