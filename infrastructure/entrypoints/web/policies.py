"""The approval policies page ``/policies``: which operations need how many approvals, above
which amount, whether a requester may approve their own, whether a passkey signs each one.

Read-only: a member holding ``policies.manage`` changes policies through the JSON API, the
operator with ``countersign policy set``. Which policies a member sees is the application's
(``PolicyService.readable``): every one with ``policies.manage``, else those of the
operations whose proposals they may read; someone who may see none gets the forbidden page.
"""

from __future__ import annotations

from typing import Any

from countersign.domain.messages import operation_title
from countersign.domain.money import CLUB_CURRENCY
from countersign.infrastructure.entrypoints.web.site import Site
from countersign.infrastructure.entrypoints.web.views import Translate, money
from countersign.infrastructure.entrypoints.web.visits import Visit
from starlette.responses import Response


class PolicyPages:
    """The handler of ``/policies``."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.cs = site.cs

    def page(self, visit: Visit) -> Response:
        user = visit.signed_in
        policies = self.cs.policies.readable(user.organization, user.caller)
        return self.site.render(
            visit,
            "policies.html",
            policies=[policy_row(p, visit.t, visit.language) for p in policies],
            nav="policies",
        )


def policy_row(policy: dict[str, Any], t: Translate, language: str) -> dict[str, str]:
    """One operation's policy in force, as the page's table shows it."""
    approvals = int(policy.get("approvals") or 1)
    above = policy.get("above_cents")
    return {
        "operation": str(policy["operation"]),
        "title": operation_title(str(policy["operation"]), language),
        "applies": t("policies.every")
        if above is None
        else t("policies.above", amount=money(above, CLUB_CURRENCY, language)),
        "approvals": t("policies.many", count=approvals) if approvals > 1 else t("policies.one"),
        "requester": t(
            "policies.may_approve"
            if policy.get("requester_may_approve", True)
            else "policies.may_not_approve"
        ),
        "passkey": t(
            "policies.passkey_required"
            if policy.get("require_passkey")
            else "policies.passkey_not_required"
        ),
    }
