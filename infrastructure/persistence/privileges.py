"""Whether an error is PostgreSQL refusing the connecting role a privilege, and what to say.

A role made for the services by hand may read countersign's tables yet not create in their
schema, or not own the functions an earlier start made: every process creates what is
missing and replaces its functions as it starts (``CREATE TABLE IF NOT EXISTS``, ``CREATE OR
REPLACE FUNCTION``), which the server refuses such a role even where the table is there
already. That is a setting to correct, said in one line naming the role and what to grant,
never a traceback nor the URL's password.
"""

from __future__ import annotations

#: SQLSTATE 42501 ``insufficient_privilege`` ("permission denied for schema public", "must be
#: owner of function ...").
_INSUFFICIENT_PRIVILEGE = "42501"


def refused_privilege(error: BaseException) -> str | None:
    """The server's own words (their first line) when ``error`` is PostgreSQL refusing the
    role a privilege, whether raised by the driver or the library's wrapping of it; None for
    any other error."""
    for found in (error, error.__cause__, error.__context__):
        if getattr(found, "sqlstate", None) == _INSUFFICIENT_PRIVILEGE:
            said = str(found).strip().splitlines()
            return said[0] if said else "permission denied"
    return None


def lacks_privilege(role: str, refused: str) -> str:
    """What a command or a service says, and stops on, when its role lacks a privilege."""
    return (
        f"the database role {role} lacks a privilege countersign needs ({refused}): connect as "
        f"the role that created countersign's tables and functions, or, for a database without "
        f"them yet, one that may create them (GRANT CREATE ON SCHEMA public TO {role}, or make "
        f'it the database\'s owner); docs/deploy.md, "Settings"'
    )
