"""Read models built from the one event stream; they depend on domain events only."""

from __future__ import annotations

from projections.analytics import Analytics
from projections.audit_trail import AuditTrail
from projections.base import Projection
from projections.browser_view import BrowserView
from projections.handback import Handback
from projections.operations import OpenWork

PROJECTIONS: dict[str, Projection] = {
    projection.name: projection
    for projection in (BrowserView(), Handback(), AuditTrail(), Analytics(), OpenWork())
}
