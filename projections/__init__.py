"""Read models built from the one event stream; they depend on domain events only.

``PROJECTIONS`` (name -> projection) is built on first use, so that importing a module of
this package (``projections.base``, say, in the projection writer process) does not import
every projection and the domain with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from countersign.projections.base import Projection

    PROJECTIONS: dict[str, Projection]


def _registry() -> dict[str, Projection]:
    from countersign.projections.analytics import Analytics
    from countersign.projections.attention import Attention
    from countersign.projections.audit_trail import AuditTrail
    from countersign.projections.browser_view import BrowserView
    from countersign.projections.handback import Handback
    from countersign.projections.notifications import Notifications
    from countersign.projections.open_work import OpenWork

    return {
        projection.name: projection
        for projection in (
            BrowserView(),
            Handback(),
            AuditTrail(),
            Analytics(),
            OpenWork(),
            Attention(),
            Notifications(),
        )
    }


def __getattr__(name: str) -> Any:
    if name == "PROJECTIONS":
        registry = globals()["PROJECTIONS"] = _registry()
        return registry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
