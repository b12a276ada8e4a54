"""The conformance suite: every contract a ``Conformance`` names, on every backend, behaves alike.

Each contract is checked for: a strict request (unknown fields, control characters and wrong
types refused; a strict, described propose tool), expiry, stale state, replay, failure
classification (arguments that no longer decode, a digest that no longer matches), digest
stability, its texts in English and French for every outcome kind, its golden preview and, for
an external effect, a lost response reconciled to exactly one effect. After each scenario the
audit chain verifies.

A test module runs it by subclassing ``ConformanceSuite`` in a class pytest collects, naming
what it checks (``conformance.Conformance``)::

    class TestConformance(ConformanceSuite):
        conformance = Conformance(cases="my_tests.cases", golden=HERE / "golden",
                                  plugins=("acme-invoices",))

Every test is parametrized over the ``Conformance``'s kinds; the deployment fixtures (``cs``,
``seeded``, ``clock``, ``other``) are the kit's (``fixtures``), with the plug-ins enabled.
countersign's own suite is ``tests/contracts/test_conformance.py``, the same class.
"""

from __future__ import annotations

import html
import json
import logging
import re
import string
from collections.abc import Callable
from dataclasses import asdict
from functools import cache
from typing import Any, ClassVar

import pytest
from countersign.application.assistant.sections import ASSISTANTS
from countersign.application.reports import ApprovalReport, ProposalCreated
from countersign.domain.contracts import REGISTRY, AnyContract
from countersign.domain.contracts.base import UndecodableContractError
from countersign.domain.contracts.presentation import LANGUAGES
from countersign.domain.contracts.problems import InvalidRequestError, Problem
from countersign.domain.contracts.request_errors import SAFE_MESSAGES
from countersign.domain.handback import SHARED_REASONS, reason_text
from countersign.domain.hash_chain import contract_digest
from countersign.domain.messages import outcome_messages, preview_rows_of, proposal_headline
from countersign.domain.outcomes import RevisionReason
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign, enable_plugins
from countersign.infrastructure.entrypoints.cli import cards
from countersign.infrastructure.entrypoints.web.i18n import translator
from countersign.infrastructure.entrypoints.web.views import proposal_view
from countersign.infrastructure.testing.conformance import (
    Conformance,
    ConformanceCase,
    JsonPath,
    Seeded,
    assert_audit_intact,
    audit_report,
    dotted,
    nodes,
    provider_requests,
    replaced,
    rewrite_proposed,
)
from countersign.infrastructure.testing.deployment import count_events
from countersign.infrastructure.testing.fixtures import seeded_records
from countersign.infrastructure.testing.golden import check_golden
from jinja2 import Environment, PackageLoader, StrictUndefined, Template

#: An ANSI colour escape, a NUL, and the single-character C1 form of the escape.
CONTROL_CHARACTERS = ("\x1b[31m", "\x00", "\x9b31m")
LINE_BREAK = "\n"
#: ``{name}``, ``{preview.name}``, ``{amount:>8}``: a template field left unformatted.
PLACEHOLDER = re.compile(r"\{[A-Za-z_][^{}\s]*\}")
EXAMPLE: Any = object()
"""``_propose``'s default request: the case's example."""


# -- helpers ---------------------------------------------------------------------------------


def _propose(
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


def _events(cs: Countersign, proposal_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = cs.audit.history(proposal_id)["events"]
    return events


def _types(cs: Countersign, proposal_id: str) -> list[str]:
    return [event["type"] for event in _events(cs, proposal_id)]


def _proposed(cs: Countersign, proposal_id: str) -> dict[str, Any]:
    proposed = _events(cs, proposal_id)[0]
    assert proposed["type"] == "Proposed"
    return proposed


def _is_external(contract: AnyContract, proposed: dict[str, Any]) -> bool:
    return bool(contract.is_external(contract.decode_arguments(proposed["arguments"])))


def _same_bytes(one: Any, other: Any) -> bool:
    return json.dumps(one, ensure_ascii=False) == json.dumps(other, ensure_ascii=False)


def _names(problems: list[Problem], path: JsonPath) -> bool:
    """A problem names the field at ``path``, or a field that encloses it."""
    field = dotted(path)
    return any(p.field == field or field.startswith(p.field + ".") for p in problems)


def _accepted(contract: AnyContract, request: Any) -> bool:
    try:
        contract.parse_request(request)
    except InvalidRequestError:
        return False
    return True


def _decodes(contract: AnyContract, arguments: Any) -> bool:
    try:
        contract.decode_arguments(arguments)
    except UndecodableContractError:
        return False
    return True


def _wrong_types(value: Any) -> list[Any]:
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


def _assert_terminal_failure(report: ApprovalReport, logged: str) -> str:
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


def _assert_tampering_shows(cs: Countersign, proposal_id: str) -> None:
    """The edited event no longer matches its hash-chain link: ``audit verify`` names it."""
    report = audit_report(cs)
    assert not report.ok
    assert (report.broken[0]["proposal_id"], report.broken[0]["version"]) == (proposal_id, 1)


def _approve_tampered(
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
    _assert_terminal_failure(report, caplog.text)
    failed = _events(other, proposal_id)[-1]
    assert (failed["type"], failed["error_class"]) == ("Failed", error_class)
    assert provider_requests(cs) == {}
    _assert_tampering_shows(other, proposal_id)
    return report


@cache
def _card_template() -> Template:
    templates = Environment(
        loader=PackageLoader("countersign.infrastructure.entrypoints.web", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
    )
    return templates.get_template("_card.html")


def _reason_params(sentences: list[str]) -> dict[str, str | int]:
    """Parameters for every placeholder of a reason's sentences, money ones as cents."""
    fields = [field for sentence in sentences for field in string.Formatter().parse(sentence)]
    names = {name for _, name, _, _ in fields if name}
    params: dict[str, str | int] = {"currency": "CAD"}
    for name in names:
        params[name] = 2500 if name.endswith(("_cents", "_count")) else f"<{name}>"
    return params


# -- enrolment -------------------------------------------------------------------------------


def _is_object_schema(node: Any) -> bool:
    return isinstance(node, dict) and node.get("type") == "object"


def _assert_conforms(value: Any, schema: dict[str, Any], path: str = "request") -> None:
    """The strict-mode subset of JSON Schema the propose tools use."""
    if "anyOf" in schema:
        errors = []
        for option in schema["anyOf"]:
            try:
                _assert_conforms(value, option, path)
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
            _assert_conforms(item, schema["properties"][key], f"{path}.{key}")
    elif kind == "array":
        assert isinstance(value, list), path
        for index, item in enumerate(value):
            _assert_conforms(item, schema["items"], f"{path}.{index}")
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


# -- 9. external effects ---------------------------------------------------------------------


class ConformanceSuite:
    """The conformance checks, for the contracts ``conformance`` names. Subclass it as
    ``Test…`` with ``conformance`` set; the subclass's tests are these, once per kind."""

    conformance: ClassVar[Conformance]

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "kind" in metafunc.fixturenames:
            kinds = self.conformance.kinds()
            metafunc.parametrize("kind", [pytest.param(kind, id=kind) for kind in kinds])

    @pytest.fixture
    def countersign_plugins(self) -> tuple[str, ...]:
        return self.conformance.plugins

    @pytest.fixture
    def seeded(self, request: pytest.FixtureRequest, cs: Countersign, kind: str) -> Seeded:
        """The demo records, brought to the state the kind's example needs (its case's
        ``arrange``); ``other`` reads the same."""
        data = seeded_records(request, cs)
        case = self.conformance.all_cases().get(kind)
        if case is not None and case.arrange is not None:
            case.arrange(cs, data)
        return data

    def _contract(self, kind: str) -> tuple[ConformanceCase, AnyContract]:
        case = self.conformance.case_for(kind)
        enable_plugins(self.conformance.plugins)  # a test without ``cs`` reads them too
        return case, REGISTRY[kind]

    def test_every_registered_contract_has_a_conformance_case(self, kind: str) -> None:
        case, contract = self._contract(kind)
        assert case.stale_reason in contract.revision_reasons, (
            f"{self.conformance.case_module(kind)}: stale_reason {case.stale_reason!r} is not "
            f"one of {kind}'s revision_reasons {sorted(contract.revision_reasons)}"
        )
        assert _accepted(contract, json.loads(json.dumps(case.request))), "the example is invalid"

    def test_every_conformance_case_and_golden_file_is_of_a_checked_contract(self) -> None:
        kinds = set(self.conformance.kinds())
        cases = set(self.conformance.all_cases())
        assert cases <= kinds, f"cases of kinds not checked here: {sorted(cases - kinds)}"
        golden = {path.stem for path in self.conformance.golden.glob("*.json")}
        assert golden <= kinds, f"golden previews of kinds not checked here: {golden - kinds}"

    def test_a_request_is_parsed_strictly(self, kind: str, cs: Countersign, seeded: Seeded) -> None:
        case, contract = self._contract(kind)
        example = json.loads(json.dumps(case.request))
        stored = count_events(cs, "Proposal.Proposed")  # the case's arrange may have proposed

        def problems(request: Any) -> list[Problem]:
            with pytest.raises(InvalidRequestError) as refused:
                _propose(cs, case, seeded, request=request)
            return refused.value.problems

        # An unknown field, at the top and in every nested object, is named and refused.
        objects: list[JsonPath] = [(), *(p for p, v in nodes(example) if isinstance(v, dict))]
        for path in objects:
            unknown = (*path, "unexpected_field")
            found = problems(replaced(example, unknown, "x"))
            assert [(p.field, p.message) for p in found] == [
                (dotted(unknown), SAFE_MESSAGES["extra_forbidden"])
            ]

        # A control character in any text is refused; a line break unless the field is multi-line.
        for path, value in [(p, v) for p, v in nodes(example) if isinstance(v, str)]:
            single_line = path[0] not in contract.Request.multiline_fields
            # Free text takes any printable character; a reference or a choice refuses one anyway.
            free_text = _accepted(contract, replaced(example, path, value[:1] + "x" + value[1:]))
            for control in CONTROL_CHARACTERS + ((LINE_BREAK,) if single_line else ()):
                tampered = value[:1] + control + value[1:]
                found = problems(replaced(example, path, tampered))
                assert _names(found, path), (path, control, found)
                assert not any(control in p.field + p.message for p in found), "input echoed"
                if free_text:  # refused for the control character itself, and saying so
                    assert any("control characters" in p.message for p in found), (path, found)

        # A value of the wrong JSON type anywhere is named and refused.
        for path, value in nodes(example):
            for wrong in _wrong_types(value):
                found = problems(replaced(example, path, wrong))
                assert _names(found, path), (path, wrong, found)
        for not_an_object in ("text", [example], None):
            assert [p.field for p in problems(not_an_object)] == ["request"]

        assert count_events(cs, "Proposal.Proposed") == stored  # nothing refused was stored

    def test_the_propose_tool_is_strict_and_every_field_described(self, kind: str) -> None:
        case, contract = self._contract(kind)
        assistant = ASSISTANTS[contract.section]
        tools = {tool["function"]["name"]: tool["function"] for tool in assistant.tools()}
        tool = tools[contract.tool_name]
        assert tool["strict"] is True
        assert tool["description"].strip()
        schema = tool["parameters"]
        assert set(schema["properties"]) == set(contract.Request.model_fields)
        assert "$ref" not in json.dumps(schema)
        objects = [((), schema), *((p, n) for p, n in nodes(schema) if _is_object_schema(n))]
        for path, node in objects:
            assert node["additionalProperties"] is False, path
            assert sorted(node["required"]) == sorted(node["properties"]), path
            for name, field in node["properties"].items():
                description = field.get("description")
                assert isinstance(description, str), (path, name)
                assert description.strip(), (path, name)
        _assert_conforms(case.request, schema)  # the example is a call the model could make

    def test_an_expired_proposal_executes_nothing(
        self, kind: str, cs: Countersign, seeded: Seeded, clock: FakeClock
    ) -> None:
        case, _ = self._contract(kind)
        resource = case.resource(seeded)
        approved_late = _propose(cs, case, seeded)
        before = case.observe(cs, resource)
        clock.advance(seconds=(approved_late.expires_at - clock.now()).total_seconds() + 1)

        report = cs.proposals.approve(approved_late.proposal_id, case.actor)

        assert (report.result, report.reason, report.status) == (
            "not_approvable",
            "expired",
            "expired",
        )
        assert report.outcome is None
        assert _types(cs, approved_late.proposal_id) == ["Proposed", "Expired"]
        assert cs.proposals.approve(approved_late.proposal_id, case.actor).reason == "expired"
        # The sweeper records the next one (nothing pending for it to supersede) once it is
        # overdue; it cannot be approved either.
        swept = _propose(cs, case, seeded)
        clock.advance(seconds=(swept.expires_at - clock.now()).total_seconds() + 1)
        assert [s.proposal_id for s in cs.sweepers.expire_due()] == [swept.proposal_id]
        assert _types(cs, swept.proposal_id) == ["Proposed", "Expired"]
        assert cs.proposals.approve(swept.proposal_id, case.actor).reason == "expired"
        assert cs.cards.card(swept.proposal_id, case.actor).status == "expired"
        assert case.observe(cs, resource) == before
        assert provider_requests(cs) == {}
        assert_audit_intact(cs)

    def test_a_changed_fact_requires_revision_and_executes_nothing(
        self, kind: str, cs: Countersign, seeded: Seeded
    ) -> None:
        case, contract = self._contract(kind)
        resource = case.resource(seeded)
        created = _propose(cs, case, seeded)
        case.make_stale(cs, resource)
        before = case.observe(cs, resource)

        report = cs.proposals.approve(created.proposal_id, case.actor)

        assert (report.result, report.status) == ("executed", "revision_required")
        assert report.outcome is not None
        assert report.outcome["kind"] == "revision_required"
        assert report.outcome["reason"]["code"] == case.stale_reason
        assert case.stale_reason in contract.revision_reasons
        assert report.message
        assert _types(cs, created.proposal_id) == [
            "Proposed",
            "Approved",
            "Claimed",
            "RevisionRequired",
        ]
        again = cs.proposals.approve(created.proposal_id, case.actor)
        assert again.result == "already_completed"
        assert _same_bytes(again.outcome, report.outcome)
        assert case.observe(cs, resource) == before
        assert provider_requests(cs) == {}
        assert_audit_intact(cs)

    def test_approving_again_returns_the_stored_outcome_and_executes_once(
        self, kind: str, cs: Countersign, seeded: Seeded, other: Countersign
    ) -> None:
        case, contract = self._contract(kind)
        resource = case.resource(seeded)
        created = _propose(cs, case, seeded)
        external = _is_external(contract, _proposed(cs, created.proposal_id))
        before = case.observe(cs, resource)

        first = cs.proposals.approve(created.proposal_id, case.actor)
        assert (first.result, first.status) == ("executed", "succeeded"), first
        assert first.outcome is not None
        assert first.outcome["kind"] == "succeeded"
        after = case.observe(cs, resource)
        assert after != before, "the example's success changed nothing the case observes"

        again = cs.proposals.approve(created.proposal_id, case.actor)
        elsewhere = other.proposals.approve(created.proposal_id, case.actor)  # another process

        for answer in (again, elsewhere):
            assert (answer.result, answer.status) == ("already_completed", "succeeded")
            assert _same_bytes(answer.outcome, first.outcome)
            assert answer.message == first.message
        assert case.observe(cs, resource) == after
        effects = provider_requests(cs)
        if external:
            assert effects == provider_requests(cs, created.proposal_id)
            assert list(effects.values()) == [1]  # one key, one request
        else:
            assert effects == {}
        types = _types(cs, created.proposal_id)
        assert (types.count("Claimed"), types.count("Succeeded"), types[-1]) == (1, 1, "Succeeded")
        assert_audit_intact(cs)

    def test_arguments_that_no_longer_decode_are_a_terminal_failure(
        self,
        kind: str,
        cs: Countersign,
        seeded: Seeded,
        other: Countersign,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        case, contract = self._contract(kind)
        resource = case.resource(seeded)
        created = _propose(cs, case, seeded)
        arguments = _proposed(cs, created.proposal_id)["arguments"]
        required = next(n for n, f in contract.Arguments.model_fields.items() if f.is_required())
        tampered = {key: value for key, value in arguments.items() if key != required}
        assert not _decodes(contract, tampered)
        before = case.observe(cs, resource)

        def corrupt(state: dict[str, Any]) -> None:
            state["arguments"] = tampered

        report = _approve_tampered(
            case, cs, other, caplog, created.proposal_id, corrupt, "UndecodableContractError"
        )

        again = other.proposals.approve(created.proposal_id, case.actor)
        assert again.result == "already_completed"
        assert _same_bytes(again.outcome, report.outcome)
        assert case.observe(other, resource) == before

    def test_arguments_changed_behind_the_digest_are_a_terminal_failure(
        self,
        kind: str,
        cs: Countersign,
        seeded: Seeded,
        other: Countersign,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        case, contract = self._contract(kind)
        resource = case.resource(seeded)
        created = _propose(cs, case, seeded)
        proposed = _proposed(cs, created.proposal_id)
        # Something that still decodes, so only the digest stands between it and execution:
        # a text of the arguments if one can change, else a text of the preview.
        part, path = "arguments", None
        for candidate, value in nodes(proposed["arguments"]):
            altered = replaced(proposed["arguments"], candidate, f"{value} (altered)")
            if isinstance(value, str) and _decodes(contract, altered):
                path = candidate
                break
        if path is None:
            part = "preview"
            path = next(p for p, v in nodes(proposed["preview"]) if isinstance(v, str))
        before = case.observe(cs, resource)

        def alter(state: dict[str, Any]) -> None:
            text = state[part]
            for key in path[:-1]:
                text = text[key]
            text[path[-1]] += " (altered)"

        _approve_tampered(
            case, cs, other, caplog, created.proposal_id, alter, "ContractDigestMismatch"
        )

        assert case.observe(other, resource) == before

    def test_the_digest_is_stable(
        self, kind: str, cs: Countersign, seeded: Seeded, other: Countersign, clock: FakeClock
    ) -> None:
        case, contract = self._contract(kind)
        first = _propose(cs, case, seeded)
        clock.advance(minutes=5)
        second = _propose(cs, case, seeded)  # the same request on the same state, later

        proposed = _proposed(cs, first.proposal_id)
        digest = proposed["digest"]
        assert re.fullmatch(r"[0-9a-f]{64}", digest)
        assert (proposed["kind"], proposed["contract_version"]) == (kind, contract.contract_version)
        assert digest == contract_digest(
            kind, proposed["contract_version"], proposed["arguments"], proposed["preview"]
        )
        assert _proposed(cs, second.proposal_id)["digest"] == digest

        reloaded = _proposed(other, second.proposal_id)  # a second process reads it back
        assert reloaded["digest"] == digest
        assert digest == contract_digest(
            kind, reloaded["contract_version"], reloaded["arguments"], reloaded["preview"]
        )
        # ... and its own check at approval agrees: it executes (the newer of the two; the
        # first, superseded by it, cannot be approved).
        assert other.proposals.approve(second.proposal_id, case.actor).status == "succeeded"
        assert other.proposals.approve(first.proposal_id, case.actor).reason == "superseded"
        assert_audit_intact(cs)

    def test_every_outcome_reads_in_english_and_in_french(
        self, kind: str, cs: Countersign, seeded: Seeded, clock: FakeClock
    ) -> None:
        case, contract = self._contract(kind)
        created = _propose(cs, case, seeded)
        proposal_id = created.proposal_id
        report = cs.proposals.approve(proposal_id, case.actor)
        assert report.status == "succeeded"
        assert report.outcome is not None

        outcomes: dict[str, dict[str, Any]] = {
            "succeeded": report.outcome,  # the example's real result
            "needs_reconciliation": {"kind": "needs_reconciliation"},
            "terminal_failure": {
                "kind": "terminal_failure",
                "correlation_id": "cs-0123456789abcdef",
            },
        }
        reasons: dict[str, tuple[str, ...]] = {}  # outcome name -> the reason in each language
        unknown = tuple(
            reason_text(RevisionReason(code="no_such_code"), lang) for lang in LANGUAGES
        )
        for code, sentence in {**contract.revision_reasons, **SHARED_REASONS}.items():
            reason = RevisionReason(code=code, params=_reason_params([sentence.en, sentence.fr]))
            name = f"revision_required {code}"
            outcomes[name] = {"kind": "revision_required", "reason": reason.model_dump(mode="json")}
            reasons[name] = tuple(reason_text(reason, language) for language in LANGUAGES)
            assert reasons[name] != unknown, f"{code} reads as an unknown reason"

        seen: dict[tuple[str, ...], str] = {}
        for name, outcome in outcomes.items():
            messages = outcome_messages(kind, created.preview, outcome, LANGUAGES)
            # The reason sentence on its own too: the message around it reads in both anyway.
            for texts in [messages, *([reasons[name]] if name in reasons else [])]:
                assert all(text.strip() for text in texts), (name, texts)
                assert len(set(texts)) == len(texts), f"{name} reads the same in two languages"
                for text in texts:
                    assert not PLACEHOLDER.search(text), (name, text)
                assert texts not in seen, f"{name} reads like {seen.get(texts)}"
                seen[texts] = name
            for message, reason_sentence in zip(messages, reasons.get(name, messages), strict=True):
                assert reason_sentence in message, name
        succeeded = outcome_messages(kind, created.preview, report.outcome, LANGUAGES)
        assert report.message == succeeded[0]

        # The card, in the terminal and in the browser, in both languages.
        pages = []
        for language, message in zip(LANGUAGES, succeeded, strict=True):
            card = cs.cards.card(proposal_id, case.actor, language)
            assert card.message == message
            terminal = cards.render_card(card.to_json(), language)
            for label, _ in cards.preview_rows(kind, card.preview, language):
                assert f"│ {label} " in terminal, (language, label)
            t = translator(language)
            view = proposal_view(asdict(card), t, language, clock.now())
            page = html.unescape(_card_template().render(p=view, t=t))
            assert contract.title.text(language) in page
            assert proposal_headline(kind, card.preview, language) in page
            assert message in page
            pages.append(page)
        assert len(set(pages)) == len(LANGUAGES)
        assert_audit_intact(cs)

    def test_the_preview_matches_its_golden_file(
        self, kind: str, cs: Countersign, seeded: Seeded
    ) -> None:
        case, _ = self._contract(kind)
        created = _propose(cs, case, seeded)
        proposed = _proposed(cs, created.proposal_id)
        shown = {
            language: {
                "headline": proposal_headline(kind, created.preview, language),
                "rows": [
                    {"label": row.label, "value": row.value}
                    | {flag: True for flag in ("emphasis", "alert") if getattr(row, flag)}
                    for row in preview_rows_of(kind, created.preview, language)
                ],
            }
            for language in LANGUAGES
        }
        document = {
            "kind": kind,
            "contract_version": proposed["contract_version"],
            "request": case.request,
            "preview": created.preview,
            "shown": shown,
            "arguments": proposed["arguments"],
            "digest": proposed["digest"],
        }
        check_golden(
            self.conformance.golden / f"{kind}.json",
            document,
            advice=" (a changed shape of the arguments or the digest needs a new contract_version)",
        )

    def test_a_lost_response_is_reconciled_to_exactly_one_effect(
        self, kind: str, cs: Countersign, seeded: Seeded
    ) -> None:
        case, contract = self._contract(kind)
        if case.lost_response_resource is None and case.lose_response is None:
            # A local operation: approval settles without the provider; nothing to reconcile.
            created = _propose(cs, case, seeded)
            assert not _is_external(contract, _proposed(cs, created.proposal_id)), (
                f"{kind}'s example is an external effect: "
                f"{self.conformance.case_module(kind)} must name a lost_response_resource or say "
                "how to lose_response"
            )
            assert cs.proposals.approve(created.proposal_id, case.actor).status == "succeeded"
            assert "Reconciling" not in _types(cs, created.proposal_id)
            assert cs.sweepers.reconcile() == []
            assert provider_requests(cs) == {}
            assert_audit_intact(cs)
            return

        resource = (case.lost_response_resource or case.resource)(seeded)
        if case.lose_response is not None:
            case.lose_response(cs, resource)
        created = _propose(cs, case, seeded, resource)
        proposal_id = created.proposal_id
        assert _is_external(contract, _proposed(cs, proposal_id))
        before = case.observe(cs, resource)

        report = cs.proposals.approve(proposal_id, case.actor)

        assert (report.result, report.status) == ("executed", "reconciling")
        assert report.outcome is not None
        assert report.outcome["kind"] == "needs_reconciliation"
        assert "status_path" not in report.outcome  # a route is no fact: the API builds it
        assert report.message
        held = provider_requests(cs, proposal_id)
        assert list(held.values()) == [1]
        assert provider_requests(cs, proposal_id, provider=contract.provider) == held, (
            f"{kind} called a provider other than the one it declares ({contract.provider!r})"
        )
        assert provider_requests(cs) == held  # nothing under any other key
        reconciling = _events(cs, proposal_id)[-1]
        assert reconciling["type"] == "Reconciling"
        assert list(held) == [reconciling["idempotency_key"]]
        again = cs.proposals.approve(proposal_id, case.actor)
        assert again.result == "already_completed"
        assert _same_bytes(again.outcome, report.outcome)
        assert provider_requests(cs) == held  # the repeat called nobody

        swept = cs.sweepers.reconcile()

        assert [(s.proposal_id, s.status) for s in swept] == [(proposal_id, "succeeded")]
        assert swept[0].outcome is not None
        assert swept[0].outcome["kind"] == "succeeded"
        assert provider_requests(cs) == held  # found under the same key, not asked again
        settled = cs.proposals.approve(proposal_id, case.actor)
        assert (settled.result, settled.status) == ("already_completed", "succeeded")
        assert _same_bytes(settled.outcome, swept[0].outcome)
        assert case.observe(cs, resource) != before  # the effect is recorded in the domain
        types = _types(cs, proposal_id)
        assert (types.count("Succeeded"), types[-2:]) == (1, ["Reconciling", "Succeeded"])
        assert cs.sweepers.reconcile() == []
        assert provider_requests(cs) == held
        assert_audit_intact(cs)
