"""``countersign demo --language fr``: the guided story told in French, its chapters, its
narration, Ava's words and every card; the same story as in English (tests/test_cli.py)."""

from __future__ import annotations

import json

from countersign.domain.contracts import BUILT_IN, REGISTRY
from countersign.infrastructure.entrypoints.cli import main


def test_the_demo_tells_the_whole_story_in_french(capsys, tmp_path):
    database = f"sqlite:///{tmp_path / 'demo.db'}"
    assert main(["demo", "--language", "fr", "--json", "--database", database]) == 0
    story = json.loads(capsys.readouterr().out)

    titles = [chapter["title"] for chapter in story["chapters"]]
    assert len(titles) == len(set(titles)) >= 12
    assert titles[0].startswith("Un club avec des commandes, une liste de membres")
    assert "Les propositions expirent" in titles
    text = json.dumps(story, ensure_ascii=False)
    own = {contract.kind for contract in BUILT_IN}
    for kind, contract in REGISTRY.items():  # every operation of countersign's, as in English
        if kind in own or contract.demo_scene is not None:
            assert f'"operation": "{kind}"' in text, kind
    for phrase in (
        "ava> Olivia dit qu'elle s'est inscrite tôt",
        "L'application l'a calculé et a figé cet aperçu",
        "Même résultat enregistré, octet pour octet : oui",
        "a déjà été remboursé",
        "Le fournisseur l'a bien reçue : 1 demande",
        "Monday Night Open : 6 -> 5 membres",
        "L'audience est passée de 8 à 9 destinataires",
        "Olivia Chen joue maintenant dans Thursday Seniors",
        "Lucas Roy joue déjà dans Junior Program.",
        "En attente d'approbation (1)",
        "jamais une paraphrase du modèle",
        "chaque maillon de la chaîne de hachage tient",
        "Exactement un envoi",
        "Ce brouillon a déjà été envoyé",
    ):
        assert phrase in text, phrase
    for english in ("Same stored outcome", "Provider requests for it", "Seeded "):
        assert english not in text, english


def test_the_demo_says_its_chapters_in_french_on_the_terminal(capsys, tmp_path):
    database = f"sqlite:///{tmp_path / 'demo.db'}"
    assert main(["--language", "fr", "demo", "--database", database]) == 0
    out = capsys.readouterr().out

    assert out.startswith("\n1. Un club avec des commandes")
    assert (
        "\n2. Ava s'adresse à l'assistant des commandes ; l'application rédige le contrat\n" in out
    )
    assert "Exécutée : réussie." in out


def test_demo_serve_says_where_to_look_in_french():
    from countersign.infrastructure.entrypoints.cli.demo import SUGGESTED_ORDERS, browse_text

    passwords = {
        "ava@granite.example": "a",
        "ben@granite.example": "b",
        "noah@granite.example": "n",
        "mia@maple.example": "m",
    }
    left = [order for order in SUGGESTED_ORDERS if order[0] != "refund-ok"]
    french = " ".join(browse_text("http://x:8000", "sqlite:///x.db", passwords, left, "fr").split())
    english = " ".join(browse_text("http://x:8000", "sqlite:///x.db", passwords, left).split())

    assert "À voir dans le navigateur : http://x:8000 (Ctrl-C arrête le serveur)" in french
    assert "Connectez-vous comme l'une des personnes de la démo" in french
    assert "e-mails en français (FR en haut d'une page)" in french
    assert "sous « Démarrer une conversation » : refund-two-approvers" in french
    assert "(Maple, en tant que Mia)" in french
    assert "L'histoire a réglé refund-ok : servez une base de données neuve" in french
    assert "See it in the browser: http://x:8000 (Ctrl-C stops the server)" in english


def test_french_waits_for_another_manager_with_its_de_elided(capsys, tmp_path):
    """The two managers' chapter read "en attente de un autre responsable"."""
    database = f"sqlite:///{tmp_path / 'demo.db'}"
    assert main(["demo", "--language", "fr", "--database", database]) == 0
    out = capsys.readouterr().out

    assert "1 approbation(s) sur 2 ; en attente d'un autre responsable." in out
    assert "en attente de un" not in out


def test_the_french_demo_says_what_the_edit_changed_in_french(capsys, tmp_path):
    """Chapter 9's edit: its card's "Modifié" row read "Refund to: Visa •••• 4242 → club
    account credit for Ella Novak" in the French story, the card read in English (found
    walking the README's Quickstart as a newcomer, hC); `countersign revise --language fr`
    said it in French already."""
    database = f"sqlite:///{tmp_path / 'demo.db'}"
    assert main(["--language", "fr", "demo", "--database", database]) == 0
    out = capsys.readouterr().out

    assert "Modifié                    Remboursé vers : Visa •••• 4242 → crédit" in out
    assert "Refund to:" not in out
    assert "club account" not in out


def test_the_demo_scenes_of_adding_and_removing_a_member_are_said_in_french(capsys, tmp_path):
    """Their words are their contracts' (``DemoScene.words``), given in both languages: Ava
    says them in French, and the stand-in model proposes from the French words."""
    database = f"sqlite:///{tmp_path / 'demo.db'}"
    assert main(["demo", "--language", "fr", "--json", "--database", database]) == 0
    text = json.dumps(json.loads(capsys.readouterr().out), ensure_ascii=False)
    assert "ava> Retirer Walter Brooks de Thursday Seniors" in text
    assert "ava> Ajouter Chloe Dubois, chloe.dubois@example.com, à Junior Program" in text
    assert "Walter Brooks ne joue plus dans Thursday Seniors" in text
    assert "Chloe Dubois joue maintenant dans Junior Program" in text
    assert "ava> Take Walter Brooks" not in text
    assert "ava> Add Chloe Dubois" not in text


def test_a_demo_scene_given_in_one_language_is_said_as_given_in_every_language():
    """A plug-in's scene may give plain words (one language): they are shown as given."""
    from countersign.domain.contracts.presentation import DemoScene, Localized

    plain = DemoScene(words="Credit Olivia Chen $10")
    assert plain.said("fr") == plain.said("en") == "Credit Olivia Chen $10"
    both = DemoScene(words=Localized("Credit Olivia Chen $10", "Créditer 10 $ à Olivia Chen"))
    assert both.said("en") == "Credit Olivia Chen $10"
    assert both.said("fr") == "Créditer 10 $ à Olivia Chen"


def test_the_policy_the_demo_states_reads_its_amount_as_the_cards_beneath_it_do(capsys, tmp_path):
    """The story said "2 distinct managers above 100.00 CAD" (French "100,00 CAD") above cards
    that show the same threshold as "$100.00 CAD" ("100,00 $ CA")."""
    for language, said in (
        ("en", "2 distinct managers above $100.00 CAD (set by command"),
        (
            "fr",
            "2 responsables distincts au-delà de "
            "100,00\N{NO-BREAK SPACE}$\N{NO-BREAK SPACE}CA (fixée",
        ),
    ):
        database = f"sqlite:///{tmp_path / f'demo-{language}.db'}"
        assert main(["demo", "--language", language, "--database", database]) == 0
        out = capsys.readouterr().out

        assert said in out, language
