"""The conformance suite's checks of what people read (``suite.py``): every outcome's texts in
English and in French, and the preview against its golden file."""

from __future__ import annotations

import html
from dataclasses import asdict
from typing import Any, ClassVar

from countersign.domain.contracts import AnyContract
from countersign.domain.contracts.presentation import LANGUAGES
from countersign.domain.handback import SHARED_REASONS, reason_text
from countersign.domain.messages import outcome_messages, preview_rows_of, proposal_headline
from countersign.domain.outcomes import RevisionReason
from countersign.infrastructure.adapters.clock import FakeClock
from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.entrypoints.cli import cards
from countersign.infrastructure.entrypoints.web.i18n import translator
from countersign.infrastructure.entrypoints.web.views import proposal_view
from countersign.infrastructure.testing.conformance import (
    Conformance,
    ConformanceCase,
    Seeded,
    assert_audit_intact,
)
from countersign.infrastructure.testing.golden import check_golden
from countersign.infrastructure.testing.scenarios import (
    PLACEHOLDER,
    card_template,
    propose_case,
    proposed_event,
    reason_params,
)


class TextChecks:
    """Checks of a contract's words, mixed into ``ConformanceSuite``."""

    conformance: ClassVar[Conformance]

    def _contract(self, kind: str) -> tuple[ConformanceCase, AnyContract]:
        raise NotImplementedError  # ConformanceSuite's

    def test_every_outcome_reads_in_english_and_in_french(
        self, kind: str, cs: Countersign, seeded: Seeded, clock: FakeClock
    ) -> None:
        case, contract = self._contract(kind)
        created = propose_case(cs, case, seeded)
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
        already_so: dict[str, tuple[str, ...]] = {}  # the same, for an "already so" outcome
        unknown = tuple(
            reason_text(RevisionReason(code="no_such_code"), lang) for lang in LANGUAGES
        )
        for code, sentence in {**contract.revision_reasons, **SHARED_REASONS}.items():
            reason = RevisionReason(code=code, params=reason_params([sentence.en, sentence.fr]))
            name = f"revision_required {code}"
            outcomes[name] = {"kind": "revision_required", "reason": reason.model_dump(mode="json")}
            reasons[name] = tuple(reason_text(reason, language) for language in LANGUAGES)
            assert reasons[name] != unknown, f"{code} reads as an unknown reason"
            # The same reason, found to be what the proposal asked for already holding.
            outcomes[f"{name} already so"] = {**outcomes[name], "already_so": True}
            already_so[f"{name} already so"] = reasons[name]

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
            said = reasons.get(name) or already_so.get(name) or messages
            for message, reason_sentence in zip(messages, said, strict=True):
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
            page = html.unescape(card_template().render(p=view, t=t))
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
        created = propose_case(cs, case, seeded)
        proposed = proposed_event(cs, created.proposal_id)
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
