"""How many changes a member may make to their passkeys in a while (adding, naming, removing
one), whatever the page: ``COUNTERSIGN_PASSKEY_CHANGE_LIMIT``, counted per member and club as
the proposal limit counts proposals (``proposal_limit.take``), by ``passkeys.PasskeyService``.

Apart from the service so that the settings read the default without importing the domain's
proposals (the command line's help imports neither them nor pydantic).
"""

from __future__ import annotations

from countersign.application.proposal_limit import RateLimit, member_key
from countersign.domain.errors import CountersignError
from countersign.domain.times import seconds_wait

DEFAULT_PASSKEY_CHANGE_LIMIT = RateLimit(20, 3600)
"""Adding, naming and removing passkeys, together: more than a person setting up their devices
needs in an hour, and a script renaming one in a loop stops at the twentieth."""


class TooManyPasskeyChangesError(CountersignError):
    """The member changed their passkeys as often as the limit allows for now."""

    def __init__(self, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(
            "too many changes to passkeys in a short time; try again in "
            f"{seconds_wait(retry_after)}"
        )


def passkey_budget(organization: str, member: str) -> str:
    """Whose passkey changes are counted together: one member's ring in one club."""
    return f"{member_key(organization, member)}/passkeys"
