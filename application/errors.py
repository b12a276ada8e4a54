"""Application errors: what a caller of a use case can be told."""

from __future__ import annotations

from domain.errors import CountersignError


class ForbiddenError(CountersignError):
    """Raised when a member lacks the permission an operation needs."""


class UnknownOperationError(CountersignError):
    """Raised when a request names an operation kind that has no contract."""


class CorruptRecordError(CountersignError):
    """Raised when a stored record cannot be read; carries a correlation id for the logs."""

    def __init__(self, correlation_id: str) -> None:
        super().__init__(f"a stored record could not be read (reference {correlation_id})")
        self.correlation_id = correlation_id
