"""What a new operation must declare besides its contract, each named in one fast test with
what to write and where, instead of being found by a full-suite run: a sentence for people
for every request problem ``resolve`` can raise and for every reason ``recheck`` can give, the
Edit page's words for every request field, and the words that show it in the demo."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from fnmatch import fnmatch
from typing import Any

import pytest
from countersign.domain.contracts import BUILT_IN, REGISTRY, AnyContract
from countersign.infrastructure.entrypoints.cli import main
from countersign.infrastructure.entrypoints.web.request_form import specs

from tests.support.findings import Stage, findings


def _texts_file(contract: AnyContract, part: str = "texts") -> str:
    """The file of one part of the contract's operation: its ``texts`` or its ``stand_in``."""
    module = type(contract).__module__.replace("countersign.", "").replace(".", "/")
    return f"{module}_{part}.py"


def _missing_sentences(contract: AnyContract, stage: Stage) -> Iterator[str]:
    """A sentence for each finding ``stage`` can raise: a request problem when proposing
    (``resolve``), a revision reason when approving (``recheck``)."""
    declared, what = (
        ("request_problems", "what is wrong, for the manager")
        if stage == "resolve"
        else ("revision_reasons", "what changed since it was proposed")
    )
    sentences = getattr(contract, declared)
    for code, params in sorted(findings(contract, stage).items()):
        if not any(fnmatch(key, code) for key in sentences):
            placeholders = "".join(f" {{{name}}}" for name in sorted(params))
            yield (
                f"{declared}[{code!r}] (a rule {stage} checks raises it): in "
                f"{_texts_file(contract)}, add to {declared} "
                f'"{code}": Localized("<{what}{placeholders}>.", '
                f'"<la même chose en français{placeholders}>."),'
            )


def _missing_request_fields(contract: AnyContract) -> Iterator[str]:
    fields = specs(contract.Request)
    for spec in [*fields, *(child for s in fields for child in s.children)]:
        words = contract.request_fields.get(spec.path)
        options = {str(option) for option in spec.options}
        if words is None:
            choices = (
                ", options={"
                + ", ".join(f'"{o}": Localized("…", "…")' for o in sorted(options))
                + "}"
                if options
                else ""
            )
            yield (
                f"request_fields[{spec.path!r}] (the Edit page's label for it): in "
                f"{_texts_file(contract)}, add to request_fields "
                f'"{spec.path}": RequestField(Localized("<label>", "<libellé>"){choices}),'
            )
        elif set(words.options) != options:
            yield (
                f"request_fields[{spec.path!r}].options must name exactly {sorted(options)} "
                f"(it names {sorted(words.options)}), in {_texts_file(contract)}"
            )


@pytest.fixture(scope="module")
def demo_story(tmp_path_factory: pytest.TempPathFactory) -> str:
    database = f"sqlite:///{tmp_path_factory.mktemp('demo') / 'demo.db'}"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["demo", "--json", "--database", database]) == 0
    story: dict[str, Any] = json.loads(out.getvalue())
    return json.dumps(story)


def _missing_demo_scene(contract: AnyContract, story: str) -> Iterator[str]:
    if f'"operation": "{contract.kind}"' in story:
        return
    if contract.demo_scene is None and contract.kind not in {c.kind for c in BUILT_IN}:
        return  # a plug-in's: the demo names it as having no scene (its company is not seeded)
    if contract.demo_scene is None:
        yield (
            f"a demo scene (tests/test_cli.py wants every operation in the demo): in "
            f"{_texts_file(contract, 'stand_in')}, declare what a manager of the seeded Granite "
            f"club says to the {contract.section} assistant to ask for it, "
            'DEMO_SCENE = DemoScene(words="<the words>")  (from '
            "countersign.domain.contracts.presentation; approvers=(...) for more than one "
            f'manager, order="<seeded order>" for an order), and in {_texts_file(contract)}, '
            "in the texts class, demo_scene: ClassVar[DemoScene | None] = DEMO_SCENE"
        )
    else:
        yield (
            f"its demo scene's words ({contract.demo_scene.words!r}) lead the offline stand-in "
            f"model to no proposal of it: in {_texts_file(contract)}, stand_in_cue must match "
            f"them, and in {_texts_file(contract, 'stand_in')}, request_from_words must fill "
            "the request from them (countersign demo shows what the assistant said instead)"
        )


@pytest.mark.parametrize("kind", sorted(REGISTRY))
def test_an_operation_declares_everything_the_suite_needs(kind: str, demo_story: str) -> None:
    contract = REGISTRY[kind]
    missing = [
        *_missing_sentences(contract, "resolve"),
        *_missing_sentences(contract, "recheck"),
        *_missing_request_fields(contract),
        *_missing_demo_scene(contract, demo_story),
    ]
    assert not missing, f"{kind} is missing:\n- " + "\n- ".join(missing)
