"""Who labels: annotators, their roles, access tokens and sign-in sessions (:class:`Identity`).

A *session* is what lets a browser stay signed in without keeping the token: the token is traded
once (:meth:`Identity.start_session`) for a session that expires after :func:`session_hours` hours
(default :data:`DEFAULT_SESSION_HOURS`, ``DENOMINATOR_SESSION_HOURS``), ends at sign-out
(:meth:`Identity.end_session`) and dies with the token it was started with (a revoked or
replaced token matches no session). The session id lives in the browser's cookie only; the
store keeps its SHA-256, like a token's. The id is born in :meth:`Identity.claim_session`, which
the HTTP response that sets the cookie calls with a one-time code: no page script ever holds it.

The other way in, the team's OpenID Connect provider, is :mod:`annotation.store.providers`; the
annotator's side of it lives here: an e-mail or subject given (:meth:`Identity.add_annotator`),
revoked with the token (:meth:`Identity.revoke_annotator`).
"""

from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypedDict

from annotation.store.base import StoreBase, StoreError, inserted_id, utc_now
from annotation.store.retirements import live, live_item
from annotation.values import BadValue, bounded_float

__all__ = [
    "Identity",
    "token_hash",
    "ROLES",
    "CLAIM_ROLES",
    "role_of",
    "stored_role",
    "REVOKED",
    "DEFAULT_SESSION_HOURS",
    "MAX_SESSION_HOURS",
    "HANDOFF_SECONDS",
    "SESSION_HOURS_ENV",
    "session_hours",
    "SignIn",
    "Claimed",
    "AnnotatorRow",
]

ROLES = ("annotator", "reviewer", "admin")
# a reviewer is stored as an annotator who may review (annotators.reviewer, m022): the role column
# keeps the two values its CHECK allows, and every read of a role goes through role_of
CLAIM_ROLES = ("annotator", "admin")  # the roles a claim rule gives (claim_rules' CHECK)


def role_of(table: str) -> str:
    """SQL for the role of the annotators row ``table`` (an alias): ``reviewer`` for an annotator
    who may review, else the stored role."""
    return f"(CASE WHEN {table}.role = 'annotator' AND {table}.reviewer = 1 THEN 'reviewer' ELSE {table}.role END)"


def stored_role(role: str) -> tuple[str, int]:
    """(the role column, the reviewer column) of a role."""
    return ("annotator", 1) if role == "reviewer" else (role, 0)


REVOKED = "revoked"
DEFAULT_SESSION_HOURS = 12.0  # a working day and its evening; the one place this default lives
SESSION_HOURS_ENV = "DENOMINATOR_SESSION_HOURS"
HANDOFF_SECONDS = 120  # the one-time code is traded by the page at once; slow machines get slack


MAX_SESSION_HOURS = 8_760.0  # a year: a longer sign-in is no session (1e9 hours ran past year 9999)


def session_hours() -> float:
    """How long a sign-in lasts: ``DENOMINATOR_SESSION_HOURS`` (a number of hours above 0 and at
    most :data:`MAX_SESSION_HOURS`), else 12."""
    raw = os.environ.get(SESSION_HOURS_ENV, "").strip()
    if not raw:
        return DEFAULT_SESSION_HOURS
    try:
        return bounded_float(0.0, MAX_SESSION_HOURS, low_open=True)(raw)
    except BadValue:
        raise StoreError(
            f"{SESSION_HOURS_ENV} must be a positive number of hours, not {raw!r}: "
            f"above 0 and at most {MAX_SESSION_HOURS:,.0f} (a year)"
        ) from None


class AnnotatorRow(TypedDict):
    """An annotator as :meth:`Identity.annotators` lists them."""

    name: str
    role: str
    access: Literal["token", "revoked", "none"]  # an active token, a revoked one, none ever given
    labels: int  # their current labels (their newest live label per live item)
    provider: Literal["active", "revoked", "none"]  # sign-in with the provider: by e-mail or subject
    email: str | None
    subject: str | None


@dataclass(frozen=True)
class SignIn:
    """A session just started: its row, and the one-time code the browser trades for its cookie."""

    session: int
    handoff: str


@dataclass(frozen=True)
class Claimed:
    """The cookie's value (the session id, shown to nobody else) and its lifetime in seconds."""

    session_id: str
    max_age: int


def _later(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat(timespec="microseconds")


# a live session: not ended, not expired, and its token still the annotator's active token
_LIVE = f"""SELECT s.id, a.name, {role_of("a")}, s.expires_at FROM sessions s JOIN annotators a ON a.id = s.annotator_id
           WHERE {{which}} AND s.revoked_at IS NULL AND s.expires_at > ? AND a.token_hash = s.token_hash"""


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
            cursor = self.db.execute(
                "INSERT INTO annotators (name, role, reviewer) VALUES (?, ?, ?)", [name, *stored_role(role)]
            )
        return inserted_id(cursor)

    # Access tokens. ``annotators.token_hash`` is NULL (no token ever given: a
    # name typed in local mode, or labels imported under it), ``sha256:<hex>``
    # (an active token; the token itself is shown once and never stored), or
    # ``revoked`` (matches no token). Once any annotator has held a token the
    # app requires one: revoking the last token does not reopen local mode.

    def add_annotator(
        self, name: str, role: str = "annotator", *, email: str | None = None, subject: str | None = None
    ) -> str | None:
        """Give ``name`` (new, or known) a role and a way in. Without ``email`` or ``subject``: a
        fresh access token, returned and kept nowhere (a name holding an active token is refused).
        With either: sign-in with the provider as that verified e-mail or subject; returns None (a
        name that already signs in with the provider is refused: revoke it first)."""
        name = name.strip()
        if not name:
            raise StoreError("an annotator needs a name")
        if role not in ROLES:
            raise StoreError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        if email is not None or subject is not None:
            self._add_provider_identity(name, role, email, subject)
            return None
        token = secrets.token_urlsafe(24)
        with self.write():
            row = self.db.execute("SELECT token_hash FROM annotators WHERE name = ?", [name]).fetchone()
            if row and row[0] and row[0] != REVOKED:
                raise StoreError(
                    f"annotator {name!r} already has a token; revoke it first "
                    f"(python -m annotation annotators revoke {name})"
                )
            self.db.execute(
                """INSERT INTO annotators (name, role, reviewer, token_hash) VALUES (?, ?, ?, ?)
                   ON CONFLICT (name) DO UPDATE SET role = excluded.role, reviewer = excluded.reviewer,
                   token_hash = excluded.token_hash""",
                [name, *stored_role(role), token_hash(token)],
            )
        return token

    def _add_provider_identity(self, name: str, role: str, email: str | None, subject: str | None) -> None:
        email = email.strip().lower() if email is not None else None
        subject = subject.strip() if subject is not None else None
        if email is not None and (
            email.count("@") != 1
            or email.startswith("@")
            or email.endswith("@")
            or any(c.isspace() for c in email)
        ):
            raise StoreError(f"not an e-mail address: {email!r}")
        if subject is not None and not subject:
            raise StoreError("--subject needs the provider's subject (the ID token's sub claim)")
        with self.write():
            row = self.db.execute(
                "SELECT email, subject, provider_revoked_at FROM annotators WHERE name = ?", [name]
            ).fetchone()
            if row and (row[0] or row[1]) and row[2] is None:
                raise StoreError(
                    f"annotator {name!r} already signs in with the provider as {row[0] or 'subject ' + row[1]}; "
                    f"revoke it first (python -m annotation annotators revoke {name})"
                )
            for column, value in (("email", email), ("subject", subject)):
                other = (
                    value
                    and self.db.execute(
                        f"SELECT name FROM annotators WHERE {column} = ? AND name <> ?", [value, name]
                    ).fetchone()
                )
                if other:
                    raise StoreError(
                        f"the {column.replace('email', 'e-mail')} {value!r} already belongs to annotator {other[0]!r}"
                    )
            self.db.execute(
                """INSERT INTO annotators (name, role, reviewer, email, subject) VALUES (?, ?, ?, ?, ?)
                   ON CONFLICT (name) DO UPDATE SET role = excluded.role, reviewer = excluded.reviewer,
                   email = excluded.email, subject = excluded.subject, subject_issuer = NULL,
                   provider_revoked_at = NULL""",
                [name, *stored_role(role), email, subject],
            )

    def revoke_annotator(self, name: str) -> list[str]:
        """Every way in stops at once (the next rerun of any open page): the token, the provider's
        sign-in, and every session started either way; labels stay. Returns the ways it ended
        (``token``, ``provider sign-in``)."""
        with self.write():
            row = self.db.execute(
                "SELECT token_hash, email, subject, provider_revoked_at FROM annotators WHERE name = ?",
                [name],
            ).fetchone()
            if row is None:
                raise StoreError(f"no annotator named {name!r}")
            token = row[0] not in (None, REVOKED)
            provider = bool(row[1] or row[2]) and row[3] is None
            if not token and not provider:
                raise StoreError(f"annotator {name!r} has no active token or sign-in with the provider")
            now = utc_now()
            if token:
                self.db.execute("UPDATE annotators SET token_hash = ? WHERE name = ?", [REVOKED, name])
            if provider:
                self.db.execute("UPDATE annotators SET provider_revoked_at = ? WHERE name = ?", [now, name])
            for table in ("sessions", "provider_sessions"):  # its sessions end with it, either way in
                self.db.execute(
                    f"""UPDATE {table} SET revoked_at = ? WHERE revoked_at IS NULL
                       AND annotator_id = (SELECT id FROM annotators WHERE name = ?)""",
                    [now, name],
                )
        return [way for way, active in (("token", token), ("provider sign-in", provider)) if active]

    def renew_token(self, name: str) -> str:
        """A fresh access token for ``name``, a person known here (their old token and every session
        started with one end; a sign-in with the provider stays). For a new sign-in link when the
        old one is lost: the store keeps only a token's hash, so a link is never shown twice."""
        token = secrets.token_urlsafe(24)
        with self.write():
            row = self.db.execute("SELECT id FROM annotators WHERE name = ?", [name]).fetchone()
            if row is None:
                raise StoreError(f"no annotator named {name!r}")
            self.db.execute("UPDATE annotators SET token_hash = ? WHERE id = ?", [token_hash(token), row[0]])
            self.db.execute(
                "UPDATE sessions SET revoked_at = ? WHERE revoked_at IS NULL AND annotator_id = ?",
                [utc_now(), row[0]],
            )
        return token

    def last_labelled(self) -> dict[str, str]:
        """Each annotator's newest label's time (UTC, ISO 8601), undone labels and labels of
        retired imports included: when they last labelled, not what stands. Names with no label
        are absent."""
        rows = self.db.execute(
            """SELECT a.name, max(l.created_at) FROM labels l JOIN annotators a ON a.id = l.annotator_id
               GROUP BY a.name"""
        ).fetchall()
        return {name: at for name, at in rows if at}

    def identify(self, token: str | None) -> dict[str, str] | None:
        """``{"name", "role"}`` of the active token, else None."""
        if not token:
            return None
        row = self.db.execute(
            f"SELECT a.name, {role_of('a')} FROM annotators a WHERE a.token_hash = ?", [token_hash(token)]
        ).fetchone()
        return {"name": row[0], "role": row[1]} if row else None

    def tokens_required(self) -> bool:
        """True once anyone has been given a way in (even if since revoked): a token, a provider's
        e-mail or subject, or a claim rule. The app then asks everyone to sign in."""
        return bool(
            self.db.execute(
                """SELECT 1 FROM annotators WHERE token_hash IS NOT NULL OR email IS NOT NULL
                   OR subject IS NOT NULL UNION ALL SELECT 1 FROM claim_rules LIMIT 1"""
            ).fetchone()
        )

    def annotators(self) -> list[AnnotatorRow]:
        """Every annotator: name, role, access (token, revoked, none), current labels (their newest
        live label per live item: :mod:`annotation.store.retirements`)."""
        rows = self.db.execute(
            f"""SELECT a.name, {role_of("a")}, a.token_hash, a.email, a.subject, a.provider_revoked_at,
                      (SELECT count(*) FROM labels l JOIN items i ON i.id = l.item_id
                        WHERE l.annotator_id = a.id AND {live_item("i")}
                        AND l.id = (SELECT max(id) FROM labels m
                                    WHERE m.item_id = l.item_id AND m.annotator_id = a.id
                                    AND {live("m.id", "labels")})
                        AND l.value IS NOT NULL)
               FROM annotators a ORDER BY a.name"""
        ).fetchall()
        return [
            {
                "name": name,
                "role": role,
                "access": "revoked" if th == REVOKED else ("token" if th else "none"),
                "labels": n,
                "provider": "none" if not (email or subject) else ("revoked" if gone else "active"),
                "email": email,
                "subject": subject,
            }
            for name, role, th, email, subject, gone, n in rows
        ]

    # Sign-in sessions (m011). ``start_session`` checks the token and records a session with a
    # one-time code; ``claim_session`` trades the code for the session id (once); the id is then
    # looked up by its hash on every page load. Ending a session sets ``revoked_at``; rows stay.

    def start_session(self, token: str | None, hours: float | None = None) -> SignIn | None:
        """A new session for the holder of the active ``token`` (None when it is not one),
        lasting ``hours`` (default :func:`session_hours`)."""
        if not token:
            return None
        lifetime = (session_hours() if hours is None else hours) * 3600
        handoff = secrets.token_urlsafe(32)
        with self.write():
            row = self.db.execute(
                "SELECT id, token_hash FROM annotators WHERE token_hash = ?", [token_hash(token)]
            ).fetchone()
            if row is None:
                return None
            cursor = self.db.execute(
                """INSERT INTO sessions (annotator_id, token_hash, handoff_hash, handoff_expires_at,
                   created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)""",
                [row[0], row[1], token_hash(handoff), _later(HANDOFF_SECONDS), utc_now(), _later(lifetime)],
            )
        return SignIn(inserted_id(cursor), handoff)

    def claim_session(self, handoff: str | None) -> Claimed | None:
        """The session id for the one-time ``handoff`` code of a live session, made now and
        stored as a hash; None when the code is unknown, used, too old or its session is over."""
        if not handoff:
            return None
        now = utc_now()
        session_id = secrets.token_urlsafe(32)
        with self.write():
            row = self.db.execute(
                _LIVE.format(
                    which="s.handoff_hash = ? AND s.claimed_at IS NULL AND s.handoff_expires_at > ?"
                ),
                [token_hash(handoff), now, now],
            ).fetchone()
            if row is None:
                return None
            self.db.execute(
                "UPDATE sessions SET session_hash = ?, claimed_at = ? WHERE id = ?",
                [token_hash(session_id), now, row[0]],
            )
        left = datetime.fromisoformat(row[3]) - datetime.fromisoformat(now)
        return Claimed(session_id, max(1, int(left.total_seconds())))

    def session_identity(
        self, *, session: int | None = None, session_id: str | None = None
    ) -> dict[str, Any] | None:
        """``{"session", "name", "role", "expires_at"}`` of a live session, found by its row
        (``session``, what a page keeps in its server-side state) or by the cookie's id; else None."""
        key: int | str
        if session is not None:
            which, key = "s.id = ?", session
        elif session_id:
            which, key = "s.session_hash = ?", token_hash(session_id)
        else:
            return None
        row = self.db.execute(_LIVE.format(which=which), [key, utc_now()]).fetchone()
        if row is None:
            return None
        return {"session": int(row[0]), "name": row[1], "role": row[2], "expires_at": row[3]}

    def end_session(self, *, session: int | None = None, session_id: str | None = None) -> bool:
        """Sign out: the session (by row or by the cookie's id) ends now; False when there was
        no such session running."""
        key: int | str
        if session is not None:
            which, key = "id = ?", session
        elif session_id:
            which, key = "session_hash = ?", token_hash(session_id)
        else:
            return False
        with self.write():
            cursor = self.db.execute(
                f"UPDATE sessions SET revoked_at = ? WHERE {which} AND revoked_at IS NULL", [utc_now(), key]
            )
        return cursor.rowcount > 0
