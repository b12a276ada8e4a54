"""What ``audit verify`` says of the stored snapshots (infrastructure/audit/snapshot_check.py),
in English and French: its progress, and each snapshot that is not its events replayed
(put together in verify_texts.py; the other words of the command, audit_words.py)."""

from __future__ import annotations

from countersign.domain.contracts.presentation import Localized

#: Stored snapshots that are not what their events replayed give (``audit verify``).
SNAPSHOTS_NOT_AS_EVENTS = Localized(
    "audit verify: SNAPSHOTS CHANGED: {count} of {checked} stored snapshots are not what their "
    "events replayed give (a cold load would start from them): delete those rows of the "
    "snapshots table (a load then replays the events) and find who wrote them:",
    "audit verify : INSTANTANÉS MODIFIÉS : {count} des {checked} instantanés stockés ne sont "
    "pas ce que donne la relecture de leurs événements (un chargement à froid partirait "
    "d'eux) : supprimez ces lignes de la table des instantanés (un chargement relit alors les "
    "événements) et cherchez qui les a écrites :",
)
#: The progress of the stored snapshots' check (each a replay of its aggregate).
SNAPSHOTS_PROGRESS = Localized(
    "audit verify: stored snapshots", "audit verify : instantanés stockés"
)
#: How a stored snapshot differs from its events replayed (``--json``'s ``problem``, a code).
SNAPSHOT_PROBLEMS = {
    "changed": Localized("changed", "modifié"),
    "events_missing": Localized(
        "its events end before that version", "ses événements s'arrêtent avant cette version"
    ),
    "events_unreadable": Localized(
        "its events cannot be read: see the proposals named above, or restore them",
        "ses événements ne peuvent pas être lus : voyez les propositions nommées plus haut, "
        "ou restaurez-les",
    ),
}
SNAPSHOT_LINE = Localized(
    "  {kind} stream {stream_id}: its snapshot at version {version} ({problem})",
    "  flux {kind} {stream_id} : son instantané à la version {version} ({problem})",
)
