"""A contract's rules and what they find: one vocabulary for proposing and for approving.

A rule is one function that checks the facts and raises ``RuleBrokenError`` with its
``Finding``. The same rule runs when a request is proposed and when the proposal is approved;
``OperationContract`` says the finding the right way for each: a request problem (the model's
``field`` and ``message``, and the contract's ``request_problems`` sentence for people) when
proposing, a revision reason (``code`` and ``params``, as stored) when approving.
"""

from __future__ import annotations

from collections.abc import Mapping

from countersign.domain.contracts.presentation import Localized
from countersign.domain.errors import CountersignError
from countersign.domain.money import format_money

Param = str | int | bool


class Finding:
    """What one rule found that stops the operation.

    ``code`` is the revision reason stored when approving and names the sentence people read
    when proposing (``problem`` names another one, where two refusals are one reason);
    ``params`` fill both sentences (``_cents`` ones read as money in ``currency``); ``field``
    and ``message`` tell the model what to correct.

    ``already_so``: what the finding says is that what the proposal asks for already holds
    (the member to take out of a league no longer plays in it), so nothing is owed. Approving
    then stores it in the revision-required outcome (``RevisionRequired.already_so``), and
    the proposal needs nobody's attention. Only where it is exactly true: a finding that
    leaves part of what was asked undone (a refund not given back) is not.
    """

    def __init__(
        self,
        code: str,
        field: str = "request",
        message: str = "",
        *,
        problem: str = "",
        already_so: bool = False,
        **params: Param,
    ) -> None:
        self.code = code
        self.field = field
        self.message = message or code.replace("_", " ")
        self.problem = problem or code
        self.already_so = already_so
        self.params = params

    def for_people(self, sentences: Mapping[str, Localized]) -> Localized:
        """The proposing sentence, filled in every language (amounts as money). A problem the
        contract gives no sentence for reads as the finding's own message, in every language
        (a plug-in that forgot one answered an internal error, not a refusal the model could
        correct)."""
        currency = str(self.params.get("currency", ""))
        sentence = sentences.get(self.problem)
        if sentence is None:
            return Localized(self.message, self.message)
        return sentence.filled(
            **{
                name: _money(value, currency)
                if name.endswith("_cents") and isinstance(value, int)
                else value
                for name, value in self.params.items()
            }
        )


def _money(cents: int, currency: str) -> Localized:
    return Localized(format_money(cents, currency, "en"), format_money(cents, currency, "fr"))


class RuleBrokenError(CountersignError):
    """Raised by a contract's rule when the facts break it; carries its findings (several when
    one rule finds several things wrong in one request)."""

    def __init__(self, *findings: Finding) -> None:
        super().__init__(", ".join(finding.code for finding in findings))
        self.findings = findings
