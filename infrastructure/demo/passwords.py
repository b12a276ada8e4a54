"""Passwords for the seeded demo people, for local use only."""

from __future__ import annotations

from countersign.infrastructure.bootstrap import Countersign
from countersign.infrastructure.demo.seed import USERS
from countersign.infrastructure.identity.passwords import set_password


def demo_password(email: str) -> str:
    """'ava-demo-password' for ava@granite.example: deterministic, and never for production."""
    return f"{email.split('@', 1)[0]}-demo-password"


def seed_passwords(cs: Countersign) -> dict[str, str]:
    """Give every seeded person their demo password; returns email -> password."""
    passwords = {user.email: demo_password(user.email) for user in USERS}
    for email, password in passwords.items():
        set_password(cs, email, password)
    return passwords
