"""What a process counts for its metrics: how long each approval took, and every call to an
effect provider, by what came back.

The counting is wired in every process (``bootstrap``), but it records nothing until a meter
is installed, which only a process that serves its metrics does (``metrics.enable``: the
pages' server mounting ``/metrics``, the worker with ``--metrics-port``). A command, a
projection runner or an application embedding countersign through its Python API never
scrapes its own counters, so it neither keeps them nor imports the Prometheus client (about
7 MB) for them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any, Protocol

from countersign.application.authorization import Caller
from countersign.application.ports import EffectProvider, EffectResponseLostError
from countersign.application.proposals import ProposalService
from countersign.application.reports import ApprovalReport
from countersign.domain.ports import EffectResponse
from countersign.domain.proposal import Proposal


class Meter(Protocol):
    """Where counted figures go (``metrics.PrometheusMeter``)."""

    def approval(self, result: str, seconds: float) -> None: ...

    def provider_call(self, provider: str, call: str, result: str) -> None: ...


_meter: Meter | None = None
log = logging.getLogger("countersign.metrics")
_failures = 0


def _uncounted(what: str, error: Exception) -> None:
    """A figure that could not be counted (the metrics' directory gone, a disk full): logged,
    the first time and then every thousandth, and never the caller's failure. Counting into a
    directory that did not exist had answered approvals 500 and sent them to reconciliation
    after the provider had moved the money."""
    global _failures
    _failures += 1
    if _failures == 1 or _failures % 1000 == 0:
        log.warning(
            "metrics: %s not counted (%s: %s); %d not counted so far",
            what,
            type(error).__name__,
            error,
            _failures,
        )


def install(meter: Meter) -> None:
    """Count from now on into ``meter`` (once per process: the metrics it feeds are global)."""
    global _meter
    _meter = meter


def installed() -> Meter | None:
    return _meter


class MeteredProposalService(ProposalService):
    """The proposal service, timing every approval into the meter, if one is installed."""

    def approve(
        self,
        proposal_id: str,
        actor: str | Caller,
        passkey_assertion: Mapping[str, Any] | None = None,
        *,
        seen: Proposal | None = None,
    ) -> ApprovalReport:
        meter = _meter
        if meter is None:
            return super().approve(proposal_id, actor, passkey_assertion, seen=seen)
        started = time.perf_counter()
        result = "error"
        try:
            report = super().approve(proposal_id, actor, passkey_assertion, seen=seen)
            result = report.result
            return report
        finally:
            try:
                meter.approval(result, time.perf_counter() - started)
            except Exception as error:
                _uncounted("an approval", error)


class CountedProvider:
    """An effect provider whose every call is counted, if a meter is installed; anything else
    is the wrapped provider's own (the sandboxes' ``held()``, for example)."""

    def __init__(self, name: str, inner: EffectProvider) -> None:
        self.name = name
        self.inner = inner

    def perform(self, key: str, request: Mapping[str, Any]) -> EffectResponse:
        with _Counting(self.name, "perform") as answer:
            response = self.inner.perform(key, request)
            answer.append(response.status)
            return response

    def lookup(self, key: str) -> EffectResponse | None:
        with _Counting(self.name, "lookup") as answer:
            response = self.inner.lookup(key)
            answer.append("none" if response is None else "found")
            return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _Counting:
    """Counts one call once, by the result the block appended (or how it failed)."""

    def __init__(self, provider: str, call: str) -> None:
        self.provider = provider
        self.call = call
        self.result: list[str] = []

    def __enter__(self) -> list[str]:
        return self.result

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        meter = _meter
        if meter is None:
            return
        if kind is None:
            result = self.result[0] if self.result else "error"
        elif issubclass(kind, EffectResponseLostError):
            result = "lost"
        else:
            result = "error"
        try:
            meter.provider_call(self.provider, self.call, result)
        except Exception as error:
            _uncounted(f"a {self.provider} {self.call}", error)


def counted(providers: Mapping[str, EffectProvider]) -> dict[str, EffectProvider]:
    """Every provider wrapped so that its calls are counted under its registered name."""
    return {name: CountedProvider(name, provider) for name, provider in providers.items()}
