"""What an anchor file that cannot be used is refused with (``anchor.AnchorFileError``), in
English and French: what is wrong, and the fix."""

from __future__ import annotations

from countersign.domain.contracts.presentation import Localized as L

#: The fix most refusals end with.
HOW = L(
    "use a copy as `countersign audit anchor` wrote it, kept where the database's writers "
    "cannot reach",
    "utilisez une copie telle que `countersign audit anchor` l'a écrite, gardée hors de portée "
    "de ceux qui écrivent dans la base de données",
)
UNREADABLE = L(
    "the anchor file cannot be read ({why}): name a file `countersign audit anchor` wrote",
    "le fichier d'ancre ne peut pas être lu ({why}) : nommez un fichier écrit par "
    "`countersign audit anchor`",
)
NOT_AN_ANCHOR = L(
    "{name} is not an anchor (its first line is not an anchor's header): give a file "
    "`countersign audit anchor` wrote",
    "{name} n'est pas une ancre (sa première ligne n'est pas un en-tête d'ancre) : donnez un "
    "fichier écrit par `countersign audit anchor`",
)
OTHER_FORMAT = L(
    "{name} is an anchor of another format ({named}, this release reads {format}): check it "
    "with the release that made it",
    "{name} est une ancre d'un autre format ({named}, cette version lit {format}) : vérifiez-la "
    "avec la version qui l'a faite",
)
UNKNOWN = L("unknown", "inconnu")
#: The formats this release reads, named.
AND = L("{first} and {second}", "{first} et {second}")
BAD_HEADER = L(
    "the anchor's header is not one countersign writes: {how}",
    "l'en-tête de l'ancre n'est pas de ceux qu'écrit countersign : {how}",
)
AFTER_END = L(
    "the anchor has lines after its integrity line: {how}",
    "l'ancre a des lignes après sa ligne d'intégrité : {how}",
)
OUT_OF_ORDER = L(
    "line {number} of the anchor is out of order: {how}",
    "la ligne {number} de l'ancre n'est pas à sa place : {how}",
)
INCOMPLETE = L(
    "the anchor ends before its integrity line: it is incomplete (cut short, or still being "
    "written); {how}",
    "l'ancre se termine avant sa ligne d'intégrité : elle est incomplète (coupée, ou encore en "
    "cours d'écriture) ; {how}",
)
DAMAGED = L(
    "the anchor's lines do not match its integrity line: it was damaged or edited after it was "
    "made; {how}",
    "les lignes de l'ancre ne correspondent pas à sa ligne d'intégrité : elle a été endommagée "
    "ou modifiée après avoir été faite ; {how}",
)
DISAGREE = L(
    "the anchor's header and its integrity line disagree: {how}",
    "l'en-tête de l'ancre et sa ligne d'intégrité ne concordent pas : {how}",
)
KEY_NAMED = L("key {key!r}", "la clé {key!r}")
KEY_UNREADABLE = L("an unreadable key id", "un identifiant de clé illisible")
NO_KEYS = L(
    "the anchor is signed with {named}, and no seal keys are configured: set "
    "COUNTERSIGN_SEAL_KEYS (or COUNTERSIGN_SEAL_KEYS_FILE) as the deployment does",
    "l'ancre est signée avec {named}, et aucune clé de scellement n'est configurée : "
    "définissez COUNTERSIGN_SEAL_KEYS (ou COUNTERSIGN_SEAL_KEYS_FILE) comme le fait le "
    "déploiement",
)
KEY_NOT_CONFIGURED = L(
    "the anchor is signed with {named}, which is not configured: list it in "
    "COUNTERSIGN_SEAL_KEYS (a key rotated out stays listed after the new one) to check this "
    "anchor",
    "l'ancre est signée avec {named}, qui n'est pas configurée : listez-la dans "
    "COUNTERSIGN_SEAL_KEYS (une clé remplacée reste listée après la nouvelle) pour vérifier "
    "cette ancre",
)
BAD_SIGNATURE = L(
    "the anchor's signature ({named}) does not match its lines: it was edited after it was "
    "made; {how}",
    "la signature de l'ancre ({named}) ne correspond pas à ses lignes : elle a été modifiée "
    "après avoir été faite ; {how}",
)
CUT = L(
    "the anchor's line {number} is cut short (incomplete, or still being written) or longer "
    "than an anchor's line; {how}",
    "la ligne {number} de l'ancre est coupée (incomplète, ou encore en cours d'écriture) ou plus "
    "longue qu'une ligne d'ancre ; {how}",
)
NOT_ENTRY = L(
    "line {number} of the anchor is not an anchored proposal: {how}",
    "la ligne {number} de l'ancre n'est pas une proposition ancrée : {how}",
)
NOT_STREAM = L(
    "line {number} of the anchor is not an anchored stream: {how}",
    "la ligne {number} de l'ancre n'est pas un flux ancré : {how}",
)
CHANGED = L(
    "{name} changed while it was checked (its lines are not the ones read and verified first): "
    "{how}",
    "{name} a changé pendant sa vérification (ses lignes ne sont pas celles lues et vérifiées "
    "d'abord) : {how}",
)
UNREADABLE_AGAIN = L(
    "the anchor file cannot be read again ({why}): {how}",
    "le fichier d'ancre ne peut pas être relu ({why}) : {how}",
)
