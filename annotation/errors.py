"""One root for every error Denominator names: :class:`DenominatorError`.

Library code raises a subclass (with ``ValueError`` or ``KeyError`` kept as a second base
where callers catch those); the two boundaries, the command lines
(:func:`annotation.cli_base.run_main`) and the pages (:func:`annotation.page_guard.guarded`),
catch this one class and say its message in one line. A driver's error (sqlite3, psycopg,
openai, yaml, the operating system) that reaches a boundary is named there by
:func:`describe`, never shown as a traceback.

This module imports nothing but the standard library: every layer may import it.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from urllib.parse import unquote

LINE_LIMIT = 300  # a message is cut to this many characters on a boundary


class DenominatorError(Exception):
    """The root of every error Denominator names: said in one line at a boundary, exit 2."""


class FormatError(DenominatorError, ValueError):
    """Bad input: says which file, line and field, and what was expected. (Here, not beside the
    readers in :mod:`annotation.model`, so that a module naming it, the policy's reader among them,
    need not load numpy and pyarrow with the data model: #42.)"""

    kind = "input"

    def __init__(self, path: str | os.PathLike[str], line: int | None, field_: str | None, message: str):
        self.path = str(path)
        self.line = line
        self.field = field_
        self.message = message
        where = self.path if line is None else f"{self.path}:{line}"
        what = f"{field_}: {message}" if field_ else message
        super().__init__(f"{where}: {what}")


# where a driver's error comes from, by the top module of its class (the boundary names it)
DRIVERS = {
    "sqlite3": "the SQLite database",
    "psycopg": "the PostgreSQL server",
    "psycopg_pool": "the PostgreSQL server",
    "openai": "the judge's endpoint",
    "httpx": "the judge's endpoint",
    "yaml": "the YAML reader",
    "pyarrow": "the file reader (pyarrow)",
}


STORES = ("sqlite3", "psycopg", "psycopg_pool")  # a lost connection or disk: the store is unavailable


# ------------------------------------------------------------------ secrets, never printed
# A store's password can reach a message in many shapes: a URL's user info (``user:pw@``, the
# password holding an unencoded ``@``, ``/``, ``?`` or ``#``), a query parameter (``?password=``,
# ``?sslpassword=``, a percent-encoded name such as ``?pass%77ord=``), a key=value connection
# string (``password='a b'``), and libpq's own errors, which quote a token of the connection
# string (``invalid percent-encoded token: "50%off!S3cret"``). :func:`masked` is the one place
# that takes them out; given the connection string itself (``known``), it also takes out any
# piece of its password (4 characters or more, raw or percent-decoded) wherever it appears.

# libpq's connection keywords: a URL's query parameters and a connection string's keys
KEYWORDS = frozenset(
    """host hostaddr port dbname user password passfile require_auth channel_binding
    connect_timeout client_encoding options application_name fallback_application_name keepalives
    keepalives_idle keepalives_interval keepalives_count tcp_user_timeout replication gssencmode
    sslmode sslnegotiation sslcompression sslcert sslkey sslpassword sslcertmode sslrootcert sslcrl
    sslcrldir sslsni requirepeer ssl_min_protocol_version ssl_max_protocol_version
    min_protocol_version max_protocol_version krbsrvname gsslib gssdelegation service
    target_session_attrs load_balance_hosts scram_client_key scram_server_key oauth_issuer
    oauth_client_id oauth_client_secret oauth_scope sslkeylogfile""".split()
)
# the keywords whose value is a secret, looked for elsewhere in a message too
PASSWORDS = frozenset(
    {"password", "sslpassword", "oauth_client_secret", "scram_client_key", "scram_server_key"}
)
# the keywords whose value is never printed (the user and the password file too, as before #38)
MASKED_KEYWORDS = PASSWORDS | {"user", "passfile"}
# the connection strings a message may be about (a store's URL; a copy's two)
Known = str | Sequence[str] | None
FRAGMENT = 4  # a piece of a known password this long or longer is masked wherever it appears

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_KEY = re.compile(r"(?<![\w%.-])([\w%.-]+)\s*=")  # a name= (a URL's parameter, a conninfo key)
_QUERY_KEY = re.compile(r"[?&#]([\w%.-]+)=")
# libpq's errors that quote a token of the connection string (the token may be the password)
_LIBPQ_QUOTES = re.compile(
    r"(?P<lead>invalid percent-encoded token: |forbidden value %00 in percent-encoded value: "
    r'|URI query parameter: |invalid connection option |value: |in URI: )"(?P<token>.*)"'
    r'|(?P<lead2>missing "=" after |invalid integer value |unexpected spaces found in )"(?P<token2>.*?)"'
    r"(?P<tail>(?: in connection info string| for connection option|, use percent-encoded).*)"
)
_RESOLVE = re.compile(r"(resolve host ['\"])(.*)@")  # a host holding an @: a password's piece


def _keyword(name: str) -> str:
    return unquote(name).lower()


def _query_start(token: str) -> int:
    """Where a URL's parameters begin in ``token`` (the text after ``://``): the first
    ``?keyword=`` (or ``&``, ``#``), else another URL, else its end."""
    end = len(token)
    other = token.find("://")
    if other >= 0:
        end = other
    for m in _QUERY_KEY.finditer(token, 0, end):
        if _keyword(m.group(1)) in KEYWORDS:
            return m.start()
    return end


def _userinfo_ends(token: str) -> list[int]:
    """The ``@`` of ``token`` (a URL after its ``://``) that may end its user info: every ``@``
    before its parameters (a password may hold ``@``, ``/``, ``?``, ``#``: libpq ends the user
    info at the first, a reader at the last)."""
    limit = _query_start(token)
    return [i for i, c in enumerate(token[:limit]) if c == "@"]


def _value_span(text: str, start: int, url: bool, whole: bool = False) -> tuple[int, int]:
    """The value of a ``name=`` whose ``=`` ends at ``start``: in a URL, up to the next
    ``&keyword=`` (or a space, unless ``whole``); in a connection string, a quoted value
    (backslash escapes) or up to the next unescaped space."""
    n = len(text)
    i = start
    if url:
        while i < n and (whole or not text[i].isspace()):
            if text[i] == "&":
                m = _KEY.match(text, i + 1)
                if m and _keyword(m.group(1)) in KEYWORDS:
                    break
            i += 1
        return start, i
    while i < n and text[i] in " \t":
        i += 1
    begin = i
    if i < n and text[i] == "'":
        i += 1
        while i < n and text[i] != "'":
            i += 2 if text[i] == "\\" else 1
        return begin, min(n, i + 1)
    while i < n and not text[i].isspace():
        i += 2 if text[i] == "\\" else 1
    return begin, min(n, i)


def _parameters(text: str, names: frozenset[str], whole: bool = False) -> list[tuple[int, int]]:
    """The spans of the values of ``names`` in ``text`` (URL parameters and conninfo keys)."""
    spans = []
    for m in _KEY.finditer(text):
        if _keyword(m.group(1)) not in names:
            continue
        url = m.start() > 0 and text[m.start() - 1] in "?&#"
        spans.append(_value_span(text, m.end(), url, whole))
    return spans


def secrets_of(conninfo: str) -> set[str]:
    """The passwords a connection string (a URL or key=value pairs) may carry, as written and
    decoded (percent-encoding, a conninfo's quotes and backslashes), read generously: each
    reading of an ambiguous URL (an unencoded ``@``, ``/``, ``&``) gives one."""
    found: set[str] = set()
    for m in _SCHEME.finditer(conninfo):
        token = conninfo[m.end() :]
        for at in _userinfo_ends(token):
            user, colon, password = token[:at].partition(":")
            if colon:
                found.add(password)
    for begin, end in _parameters(conninfo, PASSWORDS, whole=True):
        value = conninfo[begin:end]
        found.add(value)
        if value.startswith("'"):
            found.add(re.sub(r"\\(.)", r"\1", value[1:-1] if value.endswith("'") else value[1:]))
        elif "\\" in value:
            found.add(re.sub(r"\\(.)", r"\1", value))
    return {decoded for raw in found for decoded in (raw, unquote(raw)) if decoded}


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span (merged where they touch) replaced by ``***``."""
    out: list[str] = []
    pos = 0
    for begin, end in sorted(spans):
        if end <= pos:
            continue
        begin = max(begin, pos)
        if out and begin == pos and out[-1] == "***":
            pos = end
            continue
        out += [text[pos:begin], "***"]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _pieces(text: str, secrets: set[str]) -> list[tuple[int, int]]:
    """Where any piece of ``FRAGMENT`` characters of a secret appears in ``text``."""
    spans = []
    for secret in secrets:
        for i in range(len(secret) - FRAGMENT + 1):
            piece = secret[i : i + FRAGMENT]
            at = text.find(piece)
            while at >= 0:
                spans.append((at, at + FRAGMENT))
                at = text.find(piece, at + 1)
    return spans


def masked(text: str, known: Known = None) -> str:
    """``text`` without the secrets a URL, a connection string or a driver's error may carry: a
    URL's user info (``user:pw@``, up to its last ``@`` before the host), the values of
    ``password=``, ``sslpassword=``, ``passfile=``, ``user=`` and libpq's other secrets (as URL
    parameters, their names percent-decoded first, or conninfo keys, quoted values whole), the
    tokens libpq's errors quote, each replaced by ``***``. ``known``, the connection string the
    text is about (the store's URL), also masks any piece of its password wherever it appears."""
    spans = []
    for m in _SCHEME.finditer(text):
        end = m.end()
        while end < len(text) and not text[end].isspace():
            end += 1
        ends = _userinfo_ends(text[m.end() : end])
        if ends:
            spans.append((m.end(), m.end() + ends[-1]))
    spans += _parameters(text, MASKED_KEYWORDS)
    for m in _LIBPQ_QUOTES.finditer(text):
        token = "token" if m.group("token") is not None else "token2"
        if m.group("lead") == "in URI: ":  # the whole URL: masked as the URL it is
            spans += [(m.start(token) + b, m.start(token) + e) for b, e in _url_spans(m.group(token))]
        else:
            spans.append(m.span(token))
    for m in _RESOLVE.finditer(text):
        spans.append(m.span(2))
    for conninfo in [known] if isinstance(known, str) else known or ():
        if text == conninfo:  # the text is the URL itself: its user info may hold a space
            spans += _url_spans(text)
        spans += _pieces(text, secrets_of(conninfo))
    return _cut(text, [(b, e) for b, e in spans if e > b])


def _url_spans(url: str) -> list[tuple[int, int]]:
    """The secrets' spans of ``url``, the whole text a URL (a libpq error's quoted URI)."""
    spans = []
    for m in _SCHEME.finditer(url):
        ends = _userinfo_ends(url[m.end() :])
        if ends:
            spans.append((m.end(), m.end() + ends[-1]))
    return spans + _parameters(url, MASKED_KEYWORDS, whole=True) + _pieces(url, secrets_of(url))


def one_line(text: str, limit: int = LINE_LIMIT, known: Known = None) -> str:
    """The first line of ``text``, masked (``known``: see :func:`masked`), at most ``limit``
    characters."""
    first = masked(str(text), known).strip().splitlines()
    line = first[0] if first else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def describe(exc: BaseException, known: Known = None) -> str:
    """One line for an error that is no :class:`DenominatorError`: which driver (or the operating
    system) failed and its own first line; anything else is named as a bug to report. ``known``:
    the store's connection string, whose password's pieces are masked too (:func:`masked`)."""
    if isinstance(exc, DenominatorError):
        return one_line(str(exc), known=known)
    root = type(exc).__module__.split(".")[0]
    detail = one_line(str(exc), known=known) or type(exc).__name__
    if root in STORES and type(exc).__name__ in ("OperationalError", "InterfaceError"):
        return (
            f"the store is unavailable ({DRIVERS[root]}: {detail}); what was stored before stays: "
            "run the same command again when it is back"
        )
    if root in DRIVERS:
        return f"{DRIVERS[root]} failed ({type(exc).__name__}): {detail}"
    if isinstance(exc, MemoryError):
        return "out of memory: the input is too large for this machine"
    if isinstance(exc, RecursionError):
        return "the input is nested too deeply to read"
    if isinstance(exc, OSError):
        where = f": {one_line(exc.filename, known=known)}" if getattr(exc, "filename", None) else ""
        return f"{exc.strerror or detail}{where}"
    return (
        f"unexpected {type(exc).__name__} (a bug in Denominator; please report it with the "
        f"command that caused it): {detail}"
    )


# Records a reader skipped because they cannot be read (a row written by something else: a
# review whose kappa is text, a judge's answer that is no grade, settings that are not JSON).
# Kept per thread (a page view runs in its own), said by the boundary: a ``note:`` line on a
# command line's stderr, a warning on a page.
_SKIPPED = threading.local()


def skip_record(note: str) -> None:
    """Say, at the boundary, that a stored record was skipped and why (``note`` names the row)."""
    notes = getattr(_SKIPPED, "notes", None)
    if notes is None:
        notes = _SKIPPED.notes = []
    if note not in notes and len(notes) < 100:
        notes.append(note)


def skipped_records() -> list[str]:
    """The notes :func:`skip_record` took since the last call (the list is emptied)."""
    notes = getattr(_SKIPPED, "notes", None) or []
    _SKIPPED.notes = []
    return notes
