"""What the conformance suite's checks share (``suite.py``): proposing a case, reading its
events back, tampering with a stored proposal, reaching a resource from another organization,
and the schema and template checks."""

from __future__ import annotations

import json
import logging
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any
from uuid import UUID, uuid4

import pytest
from countersign.application.reports import ApprovalReport, ProposalCreated
from countersign.domain.contracts import PERMISSIONS, AnyContract
from countersign.domain.contracts.base import UndecodableContractError
from countersign.domain.contracts.problems import InvalidRequestError, Problem
from countersign.domain.contracts.request_errors import SAFE_REQUEST_MESSAGES
from countersign.domain.errors import NotFoundError
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.testing.conformance import (
    ConformanceCase,
    JsonPath,
    Seeded,
    audit_report,
    dotted,
    provider_requests,
    rewrite_proposed,
)
from jinja2 import Environment, PackageLoader, StrictUndefined, Template

#: An ANSI colour escape, a NUL, and the single-character C1 form of the escape.
CONTROL_CHARACTERS = ("\x1b[31m", "\x00", "\x9b31m")
LINE_BREAK = "\n"
#: ``{name}``, ``{preview.name}``, ``{amount:>8}``: a template field left unformatted.
PLACEHOLDER = re.compile(r"\{[A-Za-z_][^{}\s]*\}")
EXAMPLE: Any = object()
"""``propose_case``'s default request: the case's example."""


# -- helpers ---------------------------------------------------------------------------------


def propose_case(
    cs: Countersign,
    case: ConformanceCase,
    seeded: Seeded,
    resource_id: str | None = None,
    request: Any = EXAMPLE,
) -> ProposalCreated:
    return cs.proposals.propose(
        organization=case.organization,
        actor=case.actor,
        operation=case.kind,
        resource_id=resource_id or case.resource(seeded),
        request=json.loads(json.dumps(case.request if request is EXAMPLE else request)),
    )


@dataclass(frozen=True)
class Stranger:
    """A manager of another seeded organization than a case's, holding every permission there
    is (each contract's and each enabled plug-in's): only the organization can refuse them."""

    organization: str
    organization_id: UUID
    actor: str


def stranger(cs: Countersign, case: ConformanceCase, seeded: Seeded) -> Stranger:
    """Another organization of the seed than ``case.organization``, and its first manager,
    granted every permission (the demo clubs: Maple's Mia for a case of Granite's)."""
    other = next(o for o in seeded["organizations"] if o["slug"] != case.organization)
    actor = next(
        user["email"]
        for user in seeded["users"]
        if user["organization"] == other["slug"] and user["role"] == "manager"
    )
    cs.club.set_permissions(other["slug"], actor, sorted(PERMISSIONS))
    return Stranger(other["slug"], UUID(other["id"]), actor)


def unknown_resource(contract: AnyContract, resource: str) -> str:
    """A resource nobody has, named as the contract names its resources (a key or an id)."""
    if contract.resource_namespace is not None:
        return f"{resource}-{uuid4().hex[:12]}"
    return str(uuid4())


def ways_in(
    cs: Countersign, case: ConformanceCase, contract: AnyContract, who: Stranger, resource: str
) -> dict[str, Callable[[], Any]]:
    """Every way ``who`` may reach ``resource`` through the contract, by what it is."""
    return {
        "proposing the case's example on it": lambda: cs.proposals.propose(
            organization=who.organization,
            actor=who.actor,
            operation=case.kind,
            resource_id=resource,
            request=json.loads(json.dumps(case.request)),
        ),
        "the contract's load, on their organization's scope": lambda: contract.load(
            contract.scope(who.organization_id, resource), cs.store
        ),
        "opening a conversation on it with the section's assistant": lambda: cs.assistant.turn(
            organization=who.organization,
            actor=who.actor,
            section=str(contract.section),
            resource_id=resource,
            message="What can you tell me about this?",
        ),
    }


def not_refused_as_unknown(ways: dict[str, Callable[[], Any]]) -> list[str]:
    """What each way that did not raise NotFoundError answered, a sentence each."""
    answered = []
    for what, way in ways.items():
        try:
            way()
        except NotFoundError:
            continue
        except Exception as error:  # any other answer tells it apart from an unknown one
            answered.append(f"{what} raised {type(error).__name__} ({str(error)[:200]})")
        else:
            answered.append(f"{what} succeeded")
    return answered


def history_of(cs: Countersign, proposal_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = cs.audit.history(proposal_id)["events"]
    return events


def event_types(cs: Countersign, proposal_id: str) -> list[str]:
    return [event["type"] for event in history_of(cs, proposal_id)]


def proposed_event(cs: Countersign, proposal_id: str) -> dict[str, Any]:
    proposed = history_of(cs, proposal_id)[0]
    assert proposed["type"] == "Proposed"
    return proposed


def is_external(contract: AnyContract, proposed: dict[str, Any]) -> bool:
    return bool(contract.is_external(contract.decode_arguments(proposed["arguments"])))


def same_bytes(one: Any, other: Any) -> bool:
    return json.dumps(one, ensure_ascii=False) == json.dumps(other, ensure_ascii=False)


def names_path(problems: list[Problem], path: JsonPath) -> bool:
    """A problem names the field at ``path``, or a field that encloses it."""
    field = dotted(path)
    return any(p.field == field or field.startswith(p.field + ".") for p in problems)


#: How a request's pattern mismatch reads to the model: every request pattern is taken for a
#: reference to a part of the record (the order's payments "P1").
_AS_REFERENCE = SAFE_REQUEST_MESSAGES["string_pattern_mismatch"]


def control_character_refusal(path: JsonPath, problems: list[Problem]) -> str:
    """Why the strict-request check fails for a free-text field at ``path`` whose control
    character was refused, but not for itself (``problems``): the cause, when it is a
    ``pattern=``, and what to write instead."""
    field = dotted(path)
    said = "; ".join(f'"{p.message}"' for p in problems if names_path([p], path))
    why = (
        f"{field} takes free text, but a line break or control character in it was refused "
        f"as {said}"
    )
    if any(p.message == _AS_REFERENCE for p in problems):
        return (
            f"{why}: its pattern= refused it first, and a request's pattern is read as one "
            "of the record's references (P1, L2): the model is told it is not one, the "
            "manager that the request names something not in the record. For free text (an "
            "email), drop pattern= and check its form with a rule in resolve (a Finding)."
        )
    return f"{why}, not as a control character (ContractRequest refuses those by itself)"


def accepted(contract: AnyContract, request: Any) -> bool:
    try:
        contract.parse_request(request)
    except InvalidRequestError:
        return False
    return True


def decodes(contract: AnyContract, arguments: Any) -> bool:
    try:
        contract.decode_arguments(arguments)
    except UndecodableContractError:
        return False
    return True


def wrong_types(value: Any) -> list[Any]:
    """Values of another JSON type than ``value``'s: a string where a list or an object is
    expected, a list or an object where a string is, and so on."""
    if isinstance(value, dict):
        return ["text", ["text"]]
    if isinstance(value, list):
        return ["text", {"key": "text"}]
    if isinstance(value, str):
        return [["text"], {"key": "text"}, 7]
    if isinstance(value, bool):
        return ["true", 1]
    if isinstance(value, int | float):
        return [str(value), [value]]
    return ["text"]


def assert_terminal_failure(report: ApprovalReport, logged: str) -> str:
    assert (report.result, report.status) == ("executed", "failed"), report
    assert report.outcome is not None
    correlation_id = str(report.outcome.get("correlation_id"))
    assert report.outcome == {"kind": "terminal_failure", "correlation_id": correlation_id}
    assert re.fullmatch(r"cs-[0-9a-f]{16}", correlation_id), correlation_id
    assert correlation_id in logged  # the same reference is in the logs
    assert report.message is not None
    assert correlation_id in report.message
    assert "Traceback" not in report.message
    return correlation_id


def assert_tampering_shows(cs: Countersign, proposal_id: str) -> None:
    """The edited event no longer matches its hash-chain link: ``audit verify`` names it."""
    report = audit_report(cs)
    assert not report.ok
    assert (report.broken[0]["proposal_id"], report.broken[0]["version"]) == (proposal_id, 1)


def approve_tampered(
    case: ConformanceCase,
    cs: Countersign,
    other: Countersign,
    caplog: pytest.LogCaptureFixture,
    proposal_id: str,
    change: Callable[[dict[str, Any]], None],
    error_class: str,
) -> ApprovalReport:
    """Edit the proposal's stored ``Proposed`` event (``change``) and approve it in another
    process: a terminal failure of ``error_class``, recorded, no provider called, and the
    audit names the edited event."""
    rewrite_proposed(cs, proposal_id, change)
    with caplog.at_level(logging.ERROR, logger="countersign"):
        report = other.proposals.approve(proposal_id, case.actor)
    assert_terminal_failure(report, caplog.text)
    failed = history_of(other, proposal_id)[-1]
    assert (failed["type"], failed["error_class"]) == ("Failed", error_class)
    assert provider_requests(cs) == {}
    assert_tampering_shows(other, proposal_id)
    return report


@cache
def card_template() -> Template:
    templates = Environment(
        loader=PackageLoader("countersign.infrastructure.entrypoints.web", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
    )
    return templates.get_template("_card.html")


def reason_params(sentences: list[str]) -> dict[str, str | int]:
    """Parameters for every placeholder of a reason's sentences, money ones as cents."""
    fields = [field for sentence in sentences for field in string.Formatter().parse(sentence)]
    names = {name for _, name, _, _ in fields if name}
    params: dict[str, str | int] = {"currency": "CAD"}
    for name in names:
        params[name] = 2500 if name.endswith(("_cents", "_count")) else f"<{name}>"
    return params


# -- enrolment -------------------------------------------------------------------------------


def is_object_schema(node: Any) -> bool:
    return isinstance(node, dict) and node.get("type") == "object"


def assert_conforms(value: Any, schema: dict[str, Any], path: str = "request") -> None:
    """The strict-mode subset of JSON Schema the propose tools use."""
    if "anyOf" in schema:
        errors = []
        for option in schema["anyOf"]:
            try:
                assert_conforms(value, option, path)
                return
            except AssertionError as error:
                errors.append(str(error))
        raise AssertionError(f"{path}: matches no option: {errors}")
    if "enum" in schema:
        assert value in schema["enum"], path
    if "const" in schema:
        assert value == schema["const"], path
    kind = schema.get("type")
    if kind == "object":
        assert isinstance(value, dict), path
        assert sorted(value) == sorted(schema["properties"]), path
        for key, item in value.items():
            assert_conforms(item, schema["properties"][key], f"{path}.{key}")
    elif kind == "array":
        assert isinstance(value, list), path
        for index, item in enumerate(value):
            assert_conforms(item, schema["items"], f"{path}.{index}")
    elif kind == "string":
        assert isinstance(value, str), path
        if "pattern" in schema:
            assert re.search(schema["pattern"], value), path
    elif kind == "integer":
        assert isinstance(value, int), path
        assert not isinstance(value, bool), path
    elif kind == "number":
        assert isinstance(value, int | float), path
        assert not isinstance(value, bool), path
    elif kind == "boolean":
        assert isinstance(value, bool), path
