"""Why people are notified: the reasons a notification names, in the domain's words.

The ``notifications`` projection makes one notification per proposal event that needs a
person; the application decides who receives each, by its reason.
"""

from __future__ import annotations

AWAITING_APPROVAL = "awaiting_approval"
"""A proposal was made (``Proposed``): the members who may approve it are told."""
NEEDS_RECONCILIATION = "needs_reconciliation"
"""An execution's result is uncertain (``Reconciling``): its requester and approvers are told."""
FAILED = "failed"
"""An execution failed for good (``Failed``): its requester and approvers are told."""
REASONS = (AWAITING_APPROVAL, NEEDS_RECONCILIATION, FAILED)
