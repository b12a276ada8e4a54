"""Approval policies from the command line: ``policy set`` and ``policy show``.

The command line is the operator's: it sets a club's policy without naming a member (the
event records ``set_by`` "operator"). A policy binds the proposals frozen after it; an open
proposal keeps the one it was frozen under, unless the new one asks more of it: its next
approval then fails closed (``policy_raised``). ``--above-cents`` takes cents; what is printed
reads the threshold in the club's currency, as the approval policies page does (a policy
stores no currency of its own: ``domain.money.CLUB_CURRENCY``).

Bad values are refused by argparse itself (its one-line error, exit 2), before anything is
read or written: the types below say what each option takes.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Final

from countersign.domain.approval_policy import MAX_APPROVALS, PolicyError
from countersign.domain.contracts.presentation import Localized
from countersign.domain.money import CLUB_CURRENCY
from countersign.infrastructure.entrypoints.cli.common import Result, UsageError

if TYPE_CHECKING:
    from countersign.infrastructure.bootstrap import Countersign

#: ``--above-cents`` left out (its default): the threshold in force is kept. Not a string,
#: so argparse never hands it to ``cents``.
LEFT_OUT: Final = object()

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def approvals_count(value: str) -> int:
    """``--approvals``: a whole number of distinct approvers, 1 to MAX_APPROVALS."""
    text = value.strip()
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_APPROVALS:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {MAX_APPROVALS}")
    return int(text)


#: What ``--above-cents`` takes for "no threshold: every proposal".
EVERY = "none"


def cents(value: str) -> int | None:
    """``--above-cents``: an amount in cents, zero or more (12800 is $128.00), or ``none``
    (every proposal, whatever its amount)."""
    text = value.strip()
    if text.lower() == EVERY:
        return None
    if not (text.isascii() and text.isdigit()) or len(text) > 15:
        raise argparse.ArgumentTypeError(
            f"must be a whole number of cents, zero or more, or {EVERY} (every proposal)"
        )
    return int(text)


def true_or_false(value: str) -> bool:
    """``--requester-may-approve``: true or false (also yes/no, on/off, 1/0)."""
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise argparse.ArgumentTypeError("must be true or false")


def cmd_policy_set(cs: Countersign, args: argparse.Namespace) -> Result:
    from countersign.application.policies import KEPT
    from countersign.infrastructure.entrypoints.cli.policy_words import describe_policy

    try:
        policy = cs.policies.set(
            args.org,
            args.operation,
            args.approvals,
            above_cents=KEPT if args.above_cents is LEFT_OUT else args.above_cents,
            requester_may_approve=args.requester_may_approve,
            require_passkey=args.require_passkey,
        )
    except PolicyError as error:  # the domain's own bounds, should argparse's ever differ
        raise UsageError(str(error)) from None
    document = {"organization": args.org.strip().lower(), **policy}
    text = _SET[policy["changed"]].text(
        args.language,
        organization=document["organization"],
        operation=policy["operation"],
        rule=describe_policy(policy, CLUB_CURRENCY, args.language),
    )
    return document, text


_SET = {
    True: Localized(
        "{organization}: new {operation} proposals now need {rule}. An open proposal this "
        "asks more of stops at its next approval, to be proposed again; the others keep the "
        "policy they were frozen under.",
        "{organization} : les nouvelles propositions {operation} demandent désormais {rule}. "
        "Une proposition ouverte à laquelle elle en demande davantage s'arrête à sa prochaine "
        "approbation, pour être proposée de nouveau ; les autres gardent la règle sous "
        "laquelle elles ont été figées.",
    ),
    False: Localized(
        "{organization}: new {operation} proposals already needed {rule}. Open proposals "
        "keep the policy they were frozen under.",
        "{organization} : les nouvelles propositions {operation} demandaient déjà {rule}. "
        "Les propositions ouvertes gardent la règle sous laquelle elles ont été figées.",
    ),
}
_POLICIES_OF = Localized(
    "Approval policies of {organization} (for proposals frozen from now on):",
    "Règles d'approbation de {organization} (pour les propositions figées à partir de "
    "maintenant) :",
)
_SET_BY = Localized(" (set by {who})", " (fixée par {who})")


def cmd_policy_show(cs: Countersign, args: argparse.Namespace) -> Result:
    from countersign.infrastructure.entrypoints.cli.policy_words import describe_policy

    organization = args.org.strip().lower()
    policies = cs.policies.in_force(organization)
    document: dict[str, Any] = {"organization": organization, "policies": policies}
    lines = [_POLICIES_OF.text(args.language, organization=organization)]
    width = max((len(p["operation"]) for p in policies), default=0)
    for policy in policies:
        by = policy.get("set_by")
        source = _SET_BY.text(args.language, who=by) if by else ""
        rule = describe_policy(policy, CLUB_CURRENCY, args.language)
        lines.append(f"  {policy['operation']:<{width}}  {rule}{source}")
    return document, "\n".join(lines)
