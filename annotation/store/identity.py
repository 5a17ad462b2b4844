"""Who labels: annotators, their roles and access tokens (:class:`Identity`)."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from annotation.store.base import StoreBase, StoreError

__all__ = ["Identity", "token_hash", "ROLES", "REVOKED"]

ROLES = ("annotator", "admin")
REVOKED = "revoked"


def token_hash(token: str) -> str:
    """What the store keeps of an access token. Tokens are 192 random bits, so a
    plain SHA-256 is enough (no password stretching needed)."""
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


class Identity(StoreBase):
    """Annotators: names, roles, access tokens."""

    def annotator_id(self, name: str, role: str = "annotator", create: bool = True) -> int:
        """The id of the annotator ``name``; a new name is added with ``role`` (or refused
        when ``create`` is false)."""
        row = self.db.execute("SELECT id FROM annotators WHERE name = ?", [name]).fetchone()
        if row:
            return int(row[0])
        if not create:
            raise StoreError(f"no annotator named {name!r}")
        with self.write():
            cursor = self.db.execute("INSERT INTO annotators (name, role) VALUES (?, ?)", [name, role])
        return int(cursor.lastrowid)

    # Access tokens. ``annotators.token_hash`` is NULL (no token ever given: a
    # name typed in local mode, or labels imported under it), ``sha256:<hex>``
    # (an active token; the token itself is shown once and never stored), or
    # ``revoked`` (matches no token). Once any annotator has held a token the
    # app requires one: revoking the last token does not reopen local mode.

    def add_annotator(self, name: str, role: str = "annotator") -> str:
        """Give ``name`` (new, or known without a token) a role and a fresh access
        token; returns the token, which is not kept anywhere."""
        name = name.strip()
        if not name:
            raise StoreError("an annotator needs a name")
        if role not in ROLES:
            raise StoreError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        token = secrets.token_urlsafe(24)
        with self.write():
            row = self.db.execute("SELECT token_hash FROM annotators WHERE name = ?", [name]).fetchone()
            if row and row[0] and row[0] != REVOKED:
                raise StoreError(
                    f"annotator {name!r} already has a token; revoke it first "
                    f"(python -m annotation annotators revoke {name})"
                )
            self.db.execute(
                """INSERT INTO annotators (name, role, token_hash) VALUES (?, ?, ?)
                   ON CONFLICT (name) DO UPDATE SET role = excluded.role, token_hash = excluded.token_hash""",
                [name, role, token_hash(token)],
            )
        return token

    def revoke_annotator(self, name: str) -> None:
        """The token stops working at once (the next rerun of any open page); labels stay."""
        with self.write():
            row = self.db.execute("SELECT token_hash FROM annotators WHERE name = ?", [name]).fetchone()
            if row is None:
                raise StoreError(f"no annotator named {name!r}")
            if row[0] in (None, REVOKED):
                raise StoreError(f"annotator {name!r} has no active token")
            self.db.execute("UPDATE annotators SET token_hash = ? WHERE name = ?", [REVOKED, name])

    def identify(self, token: str | None) -> dict[str, str] | None:
        """``{"name", "role"}`` of the active token, else None."""
        if not token:
            return None
        row = self.db.execute(
            "SELECT name, role FROM annotators WHERE token_hash = ?", [token_hash(token)]
        ).fetchone()
        return {"name": row[0], "role": row[1]} if row else None

    def tokens_required(self) -> bool:
        """True once any annotator has been given a token (even if since revoked)."""
        return bool(
            self.db.execute("SELECT 1 FROM annotators WHERE token_hash IS NOT NULL LIMIT 1").fetchone()
        )

    def annotators(self) -> list[dict[str, Any]]:
        """Every annotator: name, role, access (token, revoked, none), current labels."""
        rows = self.db.execute(
            """SELECT a.name, a.role, a.token_hash,
                      (SELECT count(*) FROM labels l WHERE l.annotator_id = a.id
                        AND l.id = (SELECT max(id) FROM labels m
                                    WHERE m.item_id = l.item_id AND m.annotator_id = a.id)
                        AND l.value IS NOT NULL)
               FROM annotators a ORDER BY a.name"""
        ).fetchall()
        return [
            {
                "name": name,
                "role": role,
                "access": "revoked" if th == REVOKED else ("token" if th else "none"),
                "labels": n,
            }
            for name, role, th, n in rows
        ]
