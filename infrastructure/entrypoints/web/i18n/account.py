"""The account pages: a person's passkeys."""

from __future__ import annotations

EN: dict[str, str] = {
    "passkeys.title": "Your passkeys",
    "passkeys.lead": (
        "A passkey signs each approval a club's policy asks it for, bound to exactly what "
        "you approve. It stays on your device; only its public key is kept here."
    ),
    "passkeys.yours": "Passkeys",
    "passkeys.none": "You have no passkey in this club yet.",
    "passkeys.added": "Added {at}",
    "passkeys.name": "Name",
    "passkeys.name_hint": "So you can tell it apart, for example “Ava's laptop”.",
    "passkeys.rename": "Rename",
    "passkeys.remove": "Remove {name}",
    "passkeys.add": "Add a passkey",
    "passkeys.cancelled": "The passkey was not used: nothing changed. You can try again.",
    "passkeys.not_added": "The passkey could not be added: nothing changed. Try again.",
    "passkeys.renamed": "The passkey was renamed.",
    "passkeys.not_renamed": "The passkey could not be renamed: give it a name.",
    "passkeys.removed": "The passkey was removed: it approves nothing any more.",
    "passkeys.not_removed": "That passkey was already removed.",
    "passkeys.registered": "The passkey was added.",
    "passkeys.wrong_address": (
        "Passkeys cannot be used at this address: open the site at {address} and try again."
    ),
    "passkeys.too_many": (
        "Too many changes were made to your passkeys in a short time: nothing was changed. "
        "Try again in {wait}."
    ),
}

FR: dict[str, str] = {
    "passkeys.title": "Vos clés d'accès",
    "passkeys.lead": (
        "Une clé d'accès signe chaque approbation pour laquelle la règle d'un club la "
        "demande, liée exactement à ce que vous approuvez. Elle reste sur votre appareil ; "
        "seule sa clé publique est gardée ici."
    ),
    "passkeys.yours": "Clés d'accès",
    "passkeys.none": "Vous n'avez pas encore de clé d'accès dans ce club.",
    "passkeys.added": "Ajoutée le {at}",
    "passkeys.name": "Nom",
    "passkeys.name_hint": "Pour la reconnaître, par exemple « Portable d'Ava ».",
    "passkeys.rename": "Renommer",
    "passkeys.remove": "Retirer {name}",
    "passkeys.add": "Ajouter une clé d'accès",
    "passkeys.cancelled": (
        "La clé d'accès n'a pas été utilisée : rien n'a changé. Vous pouvez réessayer."
    ),
    "passkeys.not_added": ("La clé d'accès n'a pas pu être ajoutée : rien n'a changé. Réessayez."),
    "passkeys.renamed": "La clé d'accès a été renommée.",
    "passkeys.not_renamed": "La clé d'accès n'a pas pu être renommée : donnez-lui un nom.",
    "passkeys.removed": "La clé d'accès a été retirée : elle n'approuve plus rien.",
    "passkeys.not_removed": "Cette clé d'accès était déjà retirée.",
    "passkeys.registered": "La clé d'accès a été ajoutée.",
    "passkeys.wrong_address": (
        "Les clés d'accès ne fonctionnent pas à cette adresse : ouvrez le site à {address} et "
        "réessayez."
    ),
    "passkeys.too_many": (
        "Trop de modifications ont été faites à vos clés d'accès en peu de temps : rien n'a "
        "été modifié. Réessayez dans {wait}."
    ),
}
