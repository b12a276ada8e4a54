"""The conformance suite: every contract a ``Conformance`` names, on every backend, behaves alike.

Each contract is checked for: a strict request (unknown fields, control characters and wrong
types refused; a strict, described propose tool), its resource kept within its organization
(another organization's manager is answered as for a resource nobody has), expiry, stale
state, replay, failure classification (arguments that no longer decode, a digest that no
longer matches), digest stability, its texts in English and French for every outcome kind,
its golden preview and, for an external effect, a lost response reconciled to exactly one
effect. After each scenario the audit chain verifies.

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

import json
import re
from typing import Any, ClassVar

import pytest
from countersign.application.assistant.sections import ASSISTANTS
from countersign.domain.contracts import REGISTRY, AnyContract
from countersign.domain.contracts.problems import InvalidRequestError, Problem
from countersign.domain.contracts.request_errors import SAFE_MESSAGES
from countersign.domain.hash_chain import contract_digest
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign, enable_plugins
from countersign.infrastructure.testing.conformance import (
    Conformance,
    ConformanceCase,
    JsonPath,
    Seeded,
    assert_audit_intact,
    dotted,
    nodes,
    provider_requests,
    replaced,
)
from countersign.infrastructure.testing.deployment import count_events
from countersign.infrastructure.testing.fixtures import seeded_records
from countersign.infrastructure.testing.scenarios import (
    CONTROL_CHARACTERS,
    LINE_BREAK,
    accepted,
    approve_tampered,
    assert_conforms,
    control_character_refusal,
    decodes,
    event_types,
    history_of,
    is_external,
    is_object_schema,
    names_path,
    not_refused_as_unknown,
    propose_case,
    proposed_event,
    same_bytes,
    stranger,
    unknown_resource,
    ways_in,
    wrong_types,
)
from countersign.infrastructure.testing.text_checks import TextChecks

# -- 9. external effects ---------------------------------------------------------------------


class ConformanceSuite(TextChecks):
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

    def _contract(self, kind: str, missing: str = "skip") -> tuple[ConformanceCase, AnyContract]:
        """The kind's case and contract. A kind without a case fails one check, the one that
        says what to write; each other check is skipped, pointing at it."""
        if missing == "skip" and kind not in self.conformance.all_cases():
            pytest.skip(
                f"{kind} has no conformance case: "
                "test_every_registered_contract_has_a_conformance_case says what to write"
            )
        case = self.conformance.case_for(kind)
        enable_plugins(self.conformance.plugins)  # a test without ``cs`` reads them too
        return case, REGISTRY[kind]

    def test_every_registered_contract_has_a_conformance_case(self, kind: str) -> None:
        case, contract = self._contract(kind, missing="fail")
        assert case.stale_reason in contract.revision_reasons, (
            f"{self.conformance.case_module(kind)}: stale_reason {case.stale_reason!r} is not "
            f"one of {kind}'s revision_reasons {sorted(contract.revision_reasons)}"
        )
        assert accepted(contract, json.loads(json.dumps(case.request))), "the example is invalid"

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
                propose_case(cs, case, seeded, request=request)
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
            free_text = accepted(contract, replaced(example, path, value[:1] + "x" + value[1:]))
            for control in CONTROL_CHARACTERS + ((LINE_BREAK,) if single_line else ()):
                tampered = value[:1] + control + value[1:]
                found = problems(replaced(example, path, tampered))
                assert names_path(found, path), (path, control, found)
                assert not any(control in p.field + p.message for p in found), "input echoed"
                if free_text:  # refused for the control character itself, and saying so
                    assert any("control characters" in p.message for p in found), (
                        control_character_refusal(path, found)
                    )

        # A value of the wrong JSON type anywhere is named and refused.
        for path, value in nodes(example):
            for wrong in wrong_types(value):
                found = problems(replaced(example, path, wrong))
                assert names_path(found, path), (path, wrong, found)
        for not_an_object in ("text", [example], None):
            assert [p.field for p in problems(not_an_object)] == ["request"]

        assert count_events(cs, "Proposal.Proposed") == stored  # nothing refused was stored

    def test_another_organizations_resource_is_not_found_and_nothing_is_written(
        self, kind: str, cs: Countersign, seeded: Seeded
    ) -> None:
        """The case's resource, reached by a manager of another organization holding every
        permission (proposed on, loaded, opened with the assistant), answers exactly as a
        resource nobody has, NotFoundError, and nothing is stored, changed or sent."""
        case, contract = self._contract(kind)
        resource = case.resource(seeded)
        who = stranger(cs, case, seeded)
        before = case.observe(cs, resource)
        stored = count_events(cs)

        nobodys = unknown_resource(contract, resource)
        unknown = not_refused_as_unknown(ways_in(cs, case, contract, who, nobodys))
        reached = not_refused_as_unknown(ways_in(cs, case, contract, who, resource))

        assert not unknown, f"{kind}, on a resource nobody has ({nobodys!r}): {unknown}"
        assert not reached, (
            f"{kind} lets another organization reach {case.organization}'s resource "
            f"{resource!r}: as {who.actor} of {who.organization}, {'; '.join(reached)}. A "
            "resource outside the scope's organization must answer exactly as an unknown one: "
            "the contract's load must raise NotFoundError unless the record is "
            "scope.organization_id's (a company's record must know its organization), and so "
            "must every other read of it (its section's read tools and summary). See "
            "countersign's docs/plugins.md, \"Each club's records are its own\"."
        )
        assert count_events(cs) == stored, "a refused attempt stored something"
        assert case.observe(cs, resource) == before
        assert provider_requests(cs) == {}

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
        objects = [((), schema), *((p, n) for p, n in nodes(schema) if is_object_schema(n))]
        for path, node in objects:
            assert node["additionalProperties"] is False, path
            assert sorted(node["required"]) == sorted(node["properties"]), path
            for name, field in node["properties"].items():
                description = field.get("description")
                assert isinstance(description, str), (path, name)
                assert description.strip(), (path, name)
        assert_conforms(case.request, schema)  # the example is a call the model could make

    def test_an_expired_proposal_executes_nothing(
        self, kind: str, cs: Countersign, seeded: Seeded, clock: FakeClock
    ) -> None:
        case, _ = self._contract(kind)
        resource = case.resource(seeded)
        approved_late = propose_case(cs, case, seeded)
        before = case.observe(cs, resource)
        clock.advance(seconds=(approved_late.expires_at - clock.now()).total_seconds() + 1)

        report = cs.proposals.approve(approved_late.proposal_id, case.actor)

        assert (report.result, report.reason, report.status) == (
            "not_approvable",
            "expired",
            "expired",
        )
        assert report.outcome is None
        assert event_types(cs, approved_late.proposal_id) == ["Proposed", "Expired"]
        assert cs.proposals.approve(approved_late.proposal_id, case.actor).reason == "expired"
        # The sweeper records the next one (nothing pending for it to supersede) once it is
        # overdue; it cannot be approved either.
        swept = propose_case(cs, case, seeded)
        clock.advance(seconds=(swept.expires_at - clock.now()).total_seconds() + 1)
        assert [s.proposal_id for s in cs.sweepers.expire_due()] == [swept.proposal_id]
        assert event_types(cs, swept.proposal_id) == ["Proposed", "Expired"]
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
        created = propose_case(cs, case, seeded)
        case.make_stale(cs, resource)
        before = case.observe(cs, resource)

        report = cs.proposals.approve(created.proposal_id, case.actor)

        assert (report.result, report.status) == ("executed", "revision_required")
        assert report.outcome is not None
        assert report.outcome["kind"] == "revision_required"
        assert report.outcome["reason"]["code"] == case.stale_reason
        assert case.stale_reason in contract.revision_reasons
        assert report.message
        assert event_types(cs, created.proposal_id) == [
            "Proposed",
            "Approved",
            "Claimed",
            "RevisionRequired",
        ]
        again = cs.proposals.approve(created.proposal_id, case.actor)
        assert again.result == "already_completed"
        assert same_bytes(again.outcome, report.outcome)
        assert case.observe(cs, resource) == before
        assert provider_requests(cs) == {}
        assert_audit_intact(cs)

    def test_approving_again_returns_the_stored_outcome_and_executes_once(
        self, kind: str, cs: Countersign, seeded: Seeded, other: Countersign
    ) -> None:
        case, contract = self._contract(kind)
        resource = case.resource(seeded)
        created = propose_case(cs, case, seeded)
        external = is_external(contract, proposed_event(cs, created.proposal_id))
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
            assert same_bytes(answer.outcome, first.outcome)
            assert answer.message == first.message
        assert case.observe(cs, resource) == after
        effects = provider_requests(cs)
        if external:
            assert effects == provider_requests(cs, created.proposal_id)
            assert list(effects.values()) == [1]  # one key, one request
        else:
            assert effects == {}
        types = event_types(cs, created.proposal_id)
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
        created = propose_case(cs, case, seeded)
        arguments = proposed_event(cs, created.proposal_id)["arguments"]
        required = next(n for n, f in contract.Arguments.model_fields.items() if f.is_required())
        tampered = {key: value for key, value in arguments.items() if key != required}
        assert not decodes(contract, tampered)
        before = case.observe(cs, resource)

        def corrupt(state: dict[str, Any]) -> None:
            state["arguments"] = tampered

        report = approve_tampered(
            case, cs, other, caplog, created.proposal_id, corrupt, "UndecodableContractError"
        )

        again = other.proposals.approve(created.proposal_id, case.actor)
        assert again.result == "already_completed"
        assert same_bytes(again.outcome, report.outcome)
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
        created = propose_case(cs, case, seeded)
        proposed = proposed_event(cs, created.proposal_id)
        # Something that still decodes, so only the digest stands between it and execution:
        # a text of the arguments if one can change, else a text of the preview.
        part, path = "arguments", None
        for candidate, value in nodes(proposed["arguments"]):
            altered = replaced(proposed["arguments"], candidate, f"{value} (altered)")
            if isinstance(value, str) and decodes(contract, altered):
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

        approve_tampered(
            case, cs, other, caplog, created.proposal_id, alter, "ContractDigestMismatch"
        )

        assert case.observe(other, resource) == before

    def test_the_digest_is_stable(
        self, kind: str, cs: Countersign, seeded: Seeded, other: Countersign, clock: FakeClock
    ) -> None:
        case, contract = self._contract(kind)
        first = propose_case(cs, case, seeded)
        clock.advance(minutes=5)
        second = propose_case(cs, case, seeded)  # the same request on the same state, later

        proposed = proposed_event(cs, first.proposal_id)
        digest = proposed["digest"]
        assert re.fullmatch(r"[0-9a-f]{64}", digest)
        assert (proposed["kind"], proposed["contract_version"]) == (kind, contract.contract_version)
        assert digest == contract_digest(
            kind, proposed["contract_version"], proposed["arguments"], proposed["preview"]
        )
        assert proposed_event(cs, second.proposal_id)["digest"] == digest

        reloaded = proposed_event(other, second.proposal_id)  # a second process reads it back
        assert reloaded["digest"] == digest
        assert digest == contract_digest(
            kind, reloaded["contract_version"], reloaded["arguments"], reloaded["preview"]
        )
        # ... and its own check at approval agrees: it executes (the newer of the two; the
        # first, superseded by it, cannot be approved).
        assert other.proposals.approve(second.proposal_id, case.actor).status == "succeeded"
        assert other.proposals.approve(first.proposal_id, case.actor).reason == "superseded"
        assert_audit_intact(cs)

    def test_a_lost_response_is_reconciled_to_exactly_one_effect(
        self, kind: str, cs: Countersign, seeded: Seeded
    ) -> None:
        case, contract = self._contract(kind)
        if case.lost_response_resource is None and case.lose_response is None:
            # A local operation: approval settles without the provider; nothing to reconcile.
            created = propose_case(cs, case, seeded)
            assert not is_external(contract, proposed_event(cs, created.proposal_id)), (
                f"{kind}'s example is an external effect: "
                f"{self.conformance.case_module(kind)} must name a lost_response_resource or say "
                "how to lose_response"
            )
            assert cs.proposals.approve(created.proposal_id, case.actor).status == "succeeded"
            assert "Reconciling" not in event_types(cs, created.proposal_id)
            assert cs.sweepers.reconcile() == []
            assert provider_requests(cs) == {}
            assert_audit_intact(cs)
            return

        resource = (case.lost_response_resource or case.resource)(seeded)
        if case.lose_response is not None:
            case.lose_response(cs, resource)
        created = propose_case(cs, case, seeded, resource)
        proposal_id = created.proposal_id
        assert is_external(contract, proposed_event(cs, proposal_id))
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
        reconciling = history_of(cs, proposal_id)[-1]
        assert reconciling["type"] == "Reconciling"
        assert list(held) == [reconciling["idempotency_key"]]
        again = cs.proposals.approve(proposal_id, case.actor)
        assert again.result == "already_completed"
        assert same_bytes(again.outcome, report.outcome)
        assert provider_requests(cs) == held  # the repeat called nobody

        swept = cs.sweepers.reconcile()

        assert [(s.proposal_id, s.status) for s in swept] == [(proposal_id, "succeeded")]
        assert swept[0].outcome is not None
        assert swept[0].outcome["kind"] == "succeeded"
        assert provider_requests(cs) == held  # found under the same key, not asked again
        settled = cs.proposals.approve(proposal_id, case.actor)
        assert (settled.result, settled.status) == ("already_completed", "succeeded")
        assert same_bytes(settled.outcome, swept[0].outcome)
        assert case.observe(cs, resource) != before  # the effect is recorded in the domain
        types = event_types(cs, proposal_id)
        assert (types.count("Succeeded"), types[-2:]) == (1, ["Reconciling", "Succeeded"])
        assert cs.sweepers.reconcile() == []
        assert provider_requests(cs) == held
        assert_audit_intact(cs)
