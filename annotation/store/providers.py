"""Sign-in with the team's OpenID Connect provider, in the store (:class:`Providers`); the app's
side is :mod:`annotation.access.identity`, the annotator rows (e-mail, subject, revocation) are
:mod:`annotation.store.identity`'s.

Streamlit (``st.login``) verifies the provider's ID token (signature, issuer, audience, nonce) and
keeps its claims in a signed cookie; :meth:`Providers.provider_sign_in` matches them to an
annotator: by the provider's subject (``annotators add NAME --subject SUB``), else by the verified
e-mail (``--email``), else by a claim rule (``annotators map-claim groups=labellers --role
annotator``: a person whose token carries that value is added at their first sign-in, named by
their e-mail; a rule names only a claim of :data:`MAPPABLE_CLAIMS`). The subject of a person let in
by e-mail or by a rule is recorded with its issuer (m018), so a revocation holds on the provider's
account whatever e-mail it signs in with later. Each sign-in it lets in is a row of
``provider_sessions`` (m016), keyed by the hash
of what makes it one (issuer, subject, ``iat``, nonce), so sign-out, expiry (:func:`session_hours`
from ``iat``) and revocation end it on the server, whatever cookie the browser still holds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypedDict

from annotation.store.base import StoreBase, StoreError, inserted_id, utc_now
from annotation.store.identity import CLAIM_ROLES, REVOKED, role_of, session_hours, stored_role, token_hash

__all__ = [
    "Providers",
    "ProviderClaims",
    "ProviderAccess",
    "ClaimRule",
    "MAPPABLE_CLAIMS",
    "mappable",
    "unmappable",
]

# The claims a rule may name: what the provider asserts about the person, set by an admin there
# (a group, a role, the organisation, domain or tenant the account belongs to). An allow list, not
# a deny list: Streamlit adds fields of its own to every sign-in (``is_logged_in``, ``provider``),
# providers add protocol fields (``typ``, ``ver``, ``sub``, ``iss``, ``email_verified``, ...), and a
# rule on any of those matches everyone with an account at the provider. ``resource_access.CLIENT.roles``
# stands for Keycloak's client roles (any CLIENT without a dot). docs/sign-in.md lists them.
MAPPABLE_CLAIMS = (
    "groups",
    "roles",
    "hd",
    "tid",
    "wids",
    "org_id",
    "org_name",
    "department",
    "team",
    "groups_direct",
    "cognito:groups",
    "realm_access.roles",
    "resource_access.CLIENT.roles",
)
_CLIENT_ROLES = re.compile(r"resource_access\.[^.\s]+\.roles")


def mappable(claim: str) -> bool:
    """Whether a claim rule may name ``claim`` (:data:`MAPPABLE_CLAIMS`): checked when a rule is
    set, and again at every sign-in, so a rule stored before the list existed matches no one."""
    if claim in MAPPABLE_CLAIMS and claim != "resource_access.CLIENT.roles":
        return True
    return _CLIENT_ROLES.fullmatch(claim) is not None


def unmappable(claim: str) -> str:
    """The one line that refuses a rule on ``claim``."""
    return (
        f"claim {claim!r} is not one the provider asserts about the person (a group, a role, the "
        f"organisation or domain): a rule may name {', '.join(MAPPABLE_CLAIMS)}"
    )


class ClaimRule(TypedDict):
    """A claim's value that adds a person at their first sign-in with the provider, and the role."""

    claim: str
    value: str
    role: str
    who: str
    created_at: str


def _verified(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


@dataclass(frozen=True)
class ProviderClaims:
    """What the app takes from the provider: the claims of the ID token Streamlit verified before
    it signed its cookie (never the address, a header or the page). ``from_claims`` gives None
    when a claim the sign-in needs is missing."""

    issuer: str
    subject: str
    email: str | None  # the e-mail when the provider says it is verified, lower-cased; else None
    issued_at: float  # ``iat``: when the provider signed the person in
    nonce: str  # the sign-in's own random value (Streamlit checked it)
    claimed_email: str | None = None  # the e-mail as the token gives it, verified or not (shown only)
    claims: Mapping[str, Any] = field(default_factory=dict)  # every claim, for the claim rules

    @classmethod
    def from_claims(cls, claims: Mapping[str, Any]) -> ProviderClaims | None:
        iss, sub, iat, nonce = (claims.get(k) for k in ("iss", "sub", "iat", "nonce"))
        texts = (iss, sub, nonce)
        if not all(isinstance(t, str) and t.strip() for t in texts):
            return None
        if isinstance(iat, bool) or not isinstance(iat, int | float):
            return None
        raw = claims.get("email")
        claimed = raw.strip() if isinstance(raw, str) and raw.strip() else None
        email = (
            claimed.lower()
            if claimed and "@" in claimed and _verified(claims.get("email_verified"))
            else None
        )
        return cls(str(iss), str(sub), email, float(iat), str(nonce), claimed, dict(claims))

    @property
    def shown(self) -> str:
        """Who the provider says this is, as a person reads it."""
        if self.email:
            return self.email
        if self.claimed_email:
            return f"{self.claimed_email} (an e-mail the provider does not say is verified)"
        return f"subject {self.subject}"

    def sign_in_hash(self) -> str:
        """The key of this one sign-in: a new sign-in (a new ``iat`` and nonce) is a new session."""
        return token_hash(json.dumps([self.issuer, self.subject, self.issued_at, self.nonce]))


@dataclass(frozen=True)
class ProviderAccess:
    """What :meth:`Identity.provider_sign_in` found: ``signed-in`` (``name``, ``role``, the
    session's key), ``unknown`` (no annotator matches: an admin must add them), ``revoked`` (the
    person's access was revoked) or ``ended`` (signed out, or expired: sign in again)."""

    status: Literal["signed-in", "unknown", "revoked", "ended"]
    shown: str  # who the provider says this is (ProviderClaims.shown)
    name: str | None = None
    role: str | None = None
    session: str | None = None


def _claim_values(claims: Mapping[str, Any], claim: str) -> set[str]:
    """The values a claim holds, as text: one, or each of a list's (``groups``); a dotted name
    reaches into an object (``realm_access.roles``) when no claim has the name itself."""
    value: Any = claims.get(claim)
    if value is None and "." in claim:
        value = claims
        for part in claim.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
    items = value if isinstance(value, list) else [value]
    out = set()
    for item in items:
        if isinstance(item, bool):
            out.add(str(item).lower())
        elif isinstance(item, str | int | float):
            out.add(str(item))
    return out


def _at(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="microseconds")


class Providers(StoreBase):
    """Sign-in with the provider: matching, its sessions, the claim rules."""

    # Sign-in with the provider (m016). The claims are matched to an annotator once per sign-in
    # (the first page load after it); the sign-in is then a row of provider_sessions, read by its
    # key on every page load and key press, ended by sign-out, expiry or the person's revocation.

    def provider_sign_in(self, person: ProviderClaims, hours: float | None = None) -> ProviderAccess:
        """Who ``person`` is here, and whether they are let in now (:class:`ProviderAccess`). A
        sign-in seen for the first time is matched (subject, else verified e-mail, else a claim
        rule, which adds the person) and recorded; it lasts ``hours`` (default
        :func:`session_hours`) from when the provider signed the person in."""
        key = person.sign_in_hash()
        found = self._provider_session(key, person.shown)
        if found is not None:
            return found
        lifetime = (session_hours() if hours is None else hours) * 3600
        expires = _at(person.issued_at + lifetime)
        if expires <= utc_now():
            return ProviderAccess("ended", person.shown)
        with self.write():
            found = self._provider_session(key, person.shown)  # another tab of the browser was first
            if found is not None:
                return found
            match = self._match(person)
            if match is None:
                return ProviderAccess("unknown", person.shown)
            annotator_id, name, role, revoked = match
            if revoked:
                return ProviderAccess("revoked", person.shown, name)
            self.db.execute(
                """INSERT INTO provider_sessions (sign_in_hash, annotator_id, created_at, expires_at)
                   VALUES (?, ?, ?, ?)""",
                [key, annotator_id, utc_now(), expires],
            )
        return ProviderAccess("signed-in", person.shown, name, role, key)

    def _provider_session(self, key: str, shown: str) -> ProviderAccess | None:
        row = self.db.execute(
            f"""SELECT a.name, {role_of("a")}, a.provider_revoked_at, s.revoked_at, s.expires_at
               FROM provider_sessions s JOIN annotators a ON a.id = s.annotator_id WHERE s.sign_in_hash = ?""",
            [key],
        ).fetchone()
        if row is None:
            return None
        name, role, person_revoked, ended, expires = row
        if person_revoked is not None:
            return ProviderAccess("revoked", shown, name)
        if ended is not None or expires <= utc_now():
            return ProviderAccess("ended", shown, name)
        return ProviderAccess("signed-in", shown, name, role, key)

    def _match(self, person: ProviderClaims) -> tuple[int, str, str, bool] | None:
        """(id, name, role, revoked) of the annotator ``person`` is: by subject (one an admin gave,
        or one recorded at an earlier sign-in from the same issuer), else by verified e-mail, else
        added now by a claim rule (named by the e-mail); None when none matches. The subject of an
        annotator matched by e-mail or added by a rule is recorded with its issuer
        (:meth:`_record_subject`), so a revocation holds on the provider's account, whatever
        e-mail that account signs in with later."""
        row = self.db.execute(
            f"""SELECT a.id, a.name, {role_of("a")}, a.provider_revoked_at, a.subject_issuer FROM annotators a
               WHERE subject = ? AND (subject_issuer IS NULL OR subject_issuer = ?)""",
            [person.subject, person.issuer],
        ).fetchone()
        if row:
            if row[4] is None:  # a subject an admin gave: from now on, this issuer's alone
                self.db.execute(
                    "UPDATE annotators SET subject_issuer = ? WHERE id = ?", [person.issuer, row[0]]
                )
            return int(row[0]), row[1], row[2], row[3] is not None
        row = (
            person.email
            and self.db.execute(
                f"SELECT a.id, a.name, {role_of('a')}, a.provider_revoked_at FROM annotators a WHERE a.email = ?",
                [person.email],
            ).fetchone()
        )
        if row:
            self._record_subject(int(row[0]), person)  # revoked too: it then holds on the account
            return int(row[0]), row[1], row[2], row[3] is not None
        role = self._rule_role(person.claims)
        if role is None or person.email is None:
            return None
        row = self.db.execute(
            f"SELECT a.id, {role_of('a')}, a.token_hash, a.email, a.subject FROM annotators a WHERE a.name = ?",
            [person.email],
        ).fetchone()
        if row is None:
            cursor = self.db.execute(
                "INSERT INTO annotators (name, role, email) VALUES (?, ?, ?)",
                [person.email, role, person.email],
            )
            added = inserted_id(cursor)
            self._record_subject(added, person)
            return added, person.email, role, False
        annotator_id, known_role, token, email, subject = row
        if token == REVOKED:
            return int(annotator_id), person.email, known_role, True
        if email or subject:  # the name is someone else's way in
            return None
        if token is None:  # labels under this name, no access yet: the rule's role
            known_role = role
        self.db.execute(
            "UPDATE annotators SET email = ?, role = ?, reviewer = ? WHERE id = ?",
            [person.email, *stored_role(known_role), annotator_id],
        )
        self._record_subject(int(annotator_id), person)
        return int(annotator_id), person.email, known_role, False

    def _record_subject(self, annotator_id: int, person: ProviderClaims) -> None:
        """The annotator signs in as ``person``'s account from now on: its subject and issuer are
        recorded when the annotator has no subject yet and no other annotator holds it (one of
        another issuer, the only one that can: the same issuer's would have matched first)."""
        self.db.execute(
            """UPDATE annotators SET subject = ?, subject_issuer = ? WHERE id = ? AND subject IS NULL
               AND NOT EXISTS (SELECT 1 FROM annotators o WHERE o.subject = ?)""",
            [person.subject, person.issuer, annotator_id, person.subject],
        )

    def _rule_role(self, claims: Mapping[str, Any]) -> str | None:
        """The role the claim rules give these claims: admin when any matching rule says so. A rule
        on a claim off :data:`MAPPABLE_CLAIMS` (stored before the list) matches no one."""
        roles = {
            role
            for claim, value, role in self.db.execute("SELECT claim, value, role FROM claim_rules").fetchall()
            if mappable(claim) and value in _claim_values(claims, claim)
        }
        return "admin" if "admin" in roles else ("annotator" if roles else None)

    def end_provider_session(self, key: str | None) -> bool:
        """Sign out of the provider's sign-in ``key`` (:attr:`ProviderAccess.session`)."""
        if not key:
            return False
        with self.write():
            cursor = self.db.execute(
                "UPDATE provider_sessions SET revoked_at = ? WHERE sign_in_hash = ? AND revoked_at IS NULL",
                [utc_now(), key],
            )
        return cursor.rowcount > 0

    def map_claim(self, claim: str, value: str, role: str, who: str) -> None:
        """A person whose ID token carries ``value`` in ``claim`` is added at first sign-in with ``role``."""
        claim, value = claim.strip(), value.strip()
        if not claim or not value:
            raise StoreError("a claim rule is CLAIM=VALUE, both given (e.g. groups=labellers)")
        if not mappable(claim):
            raise StoreError(unmappable(claim))
        if role not in CLAIM_ROLES:
            raise StoreError(f"a claim rule's role must be one of {', '.join(CLAIM_ROLES)}, not {role!r}")
        with self.write():
            self.db.execute(
                """INSERT INTO claim_rules (claim, value, role, who, created_at) VALUES (?, ?, ?, ?, ?)
                   ON CONFLICT (claim, value) DO UPDATE SET role = excluded.role, who = excluded.who,
                   created_at = excluded.created_at""",
                [claim, value, role, who, utc_now()],
            )

    def unmap_claim(self, claim: str, value: str) -> None:
        """The rule goes (people it added stay, with their roles)."""
        with self.write():
            cursor = self.db.execute(
                "DELETE FROM claim_rules WHERE claim = ? AND value = ?", [claim.strip(), value.strip()]
            )
        if cursor.rowcount == 0:
            raise StoreError(f"no claim rule {claim.strip()}={value.strip()}")

    def claim_rules(self) -> list[ClaimRule]:
        rows = self.db.execute(
            "SELECT claim, value, role, who, created_at FROM claim_rules ORDER BY claim, value"
        ).fetchall()
        return [{"claim": c, "value": v, "role": r, "who": w, "created_at": t} for c, v, r, w, t in rows]
