"""The database password is never printed (#38, item 5): one masking function,
:func:`annotation.errors.masked`, for every way a URL, a connection string or a driver's error
can carry it, checked by a fuzz over URL shapes through every output path; and the judge's
``redact``, whose output enters judge fingerprints, unchanged for the URLs it handled before."""

from __future__ import annotations

import os
import random
import time
from urllib.parse import quote

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from annotation.__main__ import main as annotation_main
from annotation.errors import describe, masked, one_line
from annotation.store import Store, StoreError, shown_location
from annotation.store.base import _pg_reason
from annotation.store.postgres import shown_url
from denominator.cli import main as denominator_main
from denominator.ui.boundary import message as page_message
from judge.prompts import judge_settings, redact

# redact's outputs before #38, byte for byte: they are hashed into judge fingerprints, so a
# change here would orphan every judge's stored grades
REDACT_PINNED = {
    "https://api.openai.com/v1": "https://api.openai.com/v1",
    "http://localhost:8000/v1/": "http://localhost:8000/v1/",
    "https://user:pw@host.example:8443/v1?key=abc&x=1#frag": "https://host.example:8443/v1?key=...&x=...",
    "https://u:p@ss@host/v1": "https://host/v1",
    "http://[::1]:8080/v1": "http://::1:8080/v1",
    "https://host/v1?api-key=S3cret": "https://host/v1?api-key=...",
    "https://host/v1?pass%77ord=S3cret": "https://host/v1?password=...",
    "http://HOST.Example/V1": "http://host.example/V1",
    "https://u@h/": "https://h/",
    "http://h:80/v1?a&b=": "http://h:80/v1?a=...&b=...",
    "https://u:pa%2Fss@h/v1": "https://h/v1",
    "http://h": "http://h",
}


@pytest.mark.parametrize("url", sorted(REDACT_PINNED))
def test_redact_fingerprint_outputs_stay_as_they_were(url) -> None:
    assert redact(url) == REDACT_PINNED[url]
    endpoint = judge_settings("relevance", "m", url)["endpoint"]
    assert endpoint == redact(url.rstrip("/"))


# ------------------------------------------------------------------ the shapes #38 found, each


class Served(BaseException):
    """Stands for Streamlit taking the process over (``os.execve``)."""


def serve_banner(monkeypatch, capsys, db: str) -> str:
    """What ``denominator serve --db DB`` prints before Streamlit takes over."""

    def execve(*args):
        raise Served

    monkeypatch.setattr("denominator.cli.os.execve", execve)
    with pytest.raises(Served):
        denominator_main(["serve", "--db", db, "--port", "1"])
    return capsys.readouterr().err


def refused(url: str) -> StoreError:
    with pytest.raises(StoreError) as raised:
        Store(url, wait=1)
    return raised.value


@pytest.mark.parametrize(
    ("url", "pieces"),
    [
        # an unencoded @ in the password: masking stopped at the first (***@S3cret@127.0.0.1)
        ("postgresql://u:Pa@S3cretPW@127.0.0.1:1/den", ["S3cretPW", "Pa@S3cretPW"]),
        # a percent-encoded parameter name: libpq decodes it, masking did not
        ("postgresql://127.0.0.1:1/den?pass%77ord=S3cretPW", ["S3cretPW"]),
        ("postgresql://127.0.0.1:1/den?ssl%70assword=S3cretPW", ["S3cretPW"]),
        # a # or & in a parameter's value: masking stopped there
        ("postgresql://127.0.0.1:1/den?password=S3c#retPW", ["S3c#retPW", "retPW"]),
        ("postgresql://127.0.0.1:1/den?password=S3c&retPW", ["S3c&retPW", "retPW"]),
        # a connection string: at its start (nothing before password=), a quoted value with a space
        ("password=S3cretPW host=127.0.0.1", ["S3cretPW"]),
        ("host=127.0.0.1 password='S3cret PW0rd' port=1", ["S3cret PW0rd", "PW0rd"]),
    ],
)
def test_a_url_shape_is_masked_where_it_is_printed(url, pieces, monkeypatch, capsys) -> None:
    shown = {"masked": masked(url), "shown_location": shown_location(url)}
    shown["serve banner"] = serve_banner(monkeypatch, capsys, url)
    leaked = {where: text for where, text in shown.items() if any(piece in text for piece in pieces)}
    assert not leaked, leaked
    assert "***" in shown["serve banner"]


@pytest.mark.parametrize(
    ("url", "pieces"),
    [
        # libpq quotes the token it cannot decode: the password (issue #38's own example)
        ("postgresql://u:50%off!S3cretPW@127.0.0.1:1/den", ["S3cretPW"]),
        ("postgresql://127.0.0.1:1/den?password=S3cr%zzetPW", ["S3cr%zzetPW", "zzetPW"]),
        # libpq refuses a space and quotes the password holding it
        ("postgresql://u:S3cret PW0rd@127.0.0.1:1/den", ["S3cret PW0rd", "PW0rd"]),
        # libpq takes the user info to the first @: the rest of the password is the host's name
        ("postgresql://u:S3cr@tPW99@127.0.0.1:1/den", ["S3cr@tPW99", "tPW99"]),
    ],
)
def test_the_drivers_quotes_of_a_password_are_masked(url, pieces, monkeypatch, capsys) -> None:
    """The store's error, the command line's and the app's store-unavailable page."""
    error = refused(url)
    monkeypatch.setenv("DENOMINATOR_DB", url)
    said = {"store error": describe(error), "page": page_message(error)}
    code = annotation_main(["imports", "list", "--db", url])
    said["python -m annotation imports list"] = capsys.readouterr().err
    assert code == 2
    leaked = {where: text for where, text in said.items() if any(piece in text for piece in pieces)}
    assert not leaked, leaked
    assert all("cannot connect to the database" in text for text in said.values()), said


def test_a_drivers_own_error_is_masked_without_the_url() -> None:
    """libpq's parse errors quote the token they stopped at; ``describe`` masks the quote even
    when it does not know the URL."""
    for url, piece in (
        ("postgresql://u:50%off!S3cretPW@127.0.0.1:1/den", "S3cretPW"),
        ("postgresql://u:S3cret PW0rd@127.0.0.1:1/den", "PW0rd"),
        ("postgresql://127.0.0.1:1/den?password=S3cr%00etPW", "etPW"),
        ("host=127.0.0.1 password=S3cret PW0rd", "PW0rd"),
    ):
        with pytest.raises(Exception) as raised:
            conninfo_to_dict(url)
        assert piece in str(raised.value)  # the driver quotes it
        assert piece not in describe(raised.value), describe(raised.value)


# ------------------------------------------------------------------ the masking fuzz


SHAPES = 1000
CONNECTS = 50  # real connections (to a closed port): the rest through the pure functions
COMMANDS = 40  # python -m annotation ... --db URL through main()
SEED = 38
# a secret always holds one of these and an upper-case letter: a message's own words never
# spell it by chance (no '*', the mask's own character)
SPECIALS = "@:/%?#&= '\"\\"
ALPHABET = "abcdefgXYZQ0123456789" + SPECIALS + "éß密ø😀"


def make_secret(rnd: random.Random) -> str:
    body = [rnd.choice(ALPHABET) for _ in range(rnd.randint(4, 14))]
    body.insert(rnd.randrange(len(body) + 1), rnd.choice(SPECIALS))
    body.insert(rnd.randrange(len(body) + 1), rnd.choice("XYZQ"))
    return "".join(body)


def forms(secret: str) -> set[str]:
    """The secret as it must never be printed: as it is and percent-encoded (whole and
    partly), each 4 characters or more."""
    found = {secret, quote(secret, safe=""), quote(secret), quote(secret, safe="@:/?#&=")}
    return {f for f in found if len(f) >= 4}


def conninfo_value(secret: str) -> str:
    if any(c in secret for c in " '\\") or not secret:
        return "'" + secret.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return secret


def make_url(rnd: random.Random, secret: str) -> str:
    """One URL (or connection string) shape carrying ``secret``."""
    how = rnd.choice(("raw", "encoded", "encoded", "partly"))
    written = {"raw": secret, "encoded": quote(secret, safe=""), "partly": quote(secret, safe="@:/?#&=")}[how]
    scheme = rnd.choice(("postgres://", "postgresql://"))
    host = rnd.choice(("127.0.0.1", "[::1]", "localhost", "", "db.internal", "127.0.0.1:1,[::1]:1"))
    port = rnd.choice((":1", ":1", "")) if host and "," not in host else ""
    db = rnd.choice(("/den", "", "/labels"))
    user = rnd.choice(("u", "ann", "", "team%40corp"))
    tail = rnd.choice(("", "", "#frag", "#password=x"))
    where = rnd.choice(
        ("userinfo", "password", "password", "pass%77ord", "sslpassword", "both", "conninfo", "middle")
    )
    if where == "userinfo":
        return f"{scheme}{user}:{written}@{host}{port}{db}{rnd.choice(('', '?sslmode=disable'))}{tail}"
    if where == "both":
        return f"{scheme}{user}:{written}@{host}{port}{db}?password={written}{tail}"
    if where == "conninfo":
        parts = [f"password={conninfo_value(secret)}", "host=127.0.0.1", "port=1", "user=u", "dbname=den"]
        rnd.shuffle(parts)
        return " ".join(parts)
    at = f"{user}@" if user and rnd.random() < 0.5 else ""
    if where == "middle":
        query = f"?sslmode=disable&password={written}&application_name=den"
    else:
        query = f"?{where}={written}"
    return f"{scheme}{at}{host}{port}{db}{query}{tail}"


def shapes() -> list[tuple[str, str]]:
    rnd = random.Random(SEED)
    made = []
    for _ in range(SHAPES):
        secret = make_secret(rnd)
        made.append((secret, make_url(rnd, secret)))
    return made


def leaks(secret: str, text: str) -> bool:
    return any(form in text for form in forms(secret))


def driver_error(url: str, connect: bool) -> Exception | None:
    """psycopg's own error for ``url``: its parser's, or (``connect``) a connection's."""
    try:
        conninfo_to_dict(url)
        if not connect:
            return None
        psycopg.connect(url, connect_timeout=1).close()
    except psycopg.Error as exc:
        return exc
    return None


def store_error(url: str, exc: Exception | None) -> StoreError:
    """What the store raises for ``url`` (as :meth:`Store._open_postgres` words it)."""
    reason = _pg_reason(exc, url) if exc else "connection refused"
    return StoreError(f"{shown_url(url)}: cannot connect to the database ({reason})")


def test_no_password_shape_is_printed_by_any_output(monkeypatch, capsys, tmp_path) -> None:
    """1,000 URL shapes with a secret (a fixed seed), each through every output path; none says
    the secret, as it is or percent-encoded. (A key=value connection string is a file name to
    Denominator: its commands look for that file here, in an empty folder.)"""
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    made = shapes()
    assert len({url for _, url in made}) > 900
    monkeypatch.setenv("DENOMINATOR_STORE_WAIT", "1")
    monkeypatch.delenv("DENOMINATOR_DB", raising=False)

    def execve(*args):
        raise Served

    monkeypatch.setattr(os, "execve", execve)
    found: list[tuple[str, str, str]] = []
    real = [i for i, (_, url) in enumerate(made) if "db.internal" not in url][:CONNECTS]
    commands = set(range(0, SHAPES, SHAPES // COMMANDS))
    for i, (secret, url) in enumerate(made):
        said = {
            "shown_location": shown_location(url),
            "masked(url, known=url)": masked(url, known=url),
            "one_line(message)": one_line(f"cannot open {url} now", known=url),
        }
        if "://" not in url or not (any(c.isspace() for c in secret) and secret in url):
            # with no URL known, a URL ends at a space: one written with a space is masked
            # where it is printed, the URL known (shown_location, the store's errors)
            said["masked(url)"] = masked(url)
            said["masked(message)"] = masked(f"error: {url}: refused")
        exc = driver_error(url, connect=i in real)
        if exc is not None:
            said["describe(driver error)"] = describe(exc)
            said["describe(driver error, known)"] = describe(exc, known=url)
        error = store_error(url, exc)
        said["describe(store error)"] = describe(error)
        monkeypatch.setenv("DENOMINATOR_DB", url)
        said["page message"] = page_message(error)
        monkeypatch.delenv("DENOMINATOR_DB")
        with pytest.raises(Served):
            denominator_main(["serve", "--db", url, "--port", "1"])
        said["serve banner"] = capsys.readouterr().err
        if i in real and "://" in url:
            try:
                Store(url).close()
            except StoreError as opened:
                said["store open"] = describe(opened)
                monkeypatch.setenv("DENOMINATOR_DB", url)
                said["page message (store open)"] = page_message(opened)
                monkeypatch.delenv("DENOMINATOR_DB")
        if i in commands:
            code = annotation_main(["imports", "list", "--db", url])
            out, err = capsys.readouterr()
            said["python -m annotation imports list"] = out + err
            assert code == 2, (url, err)
        found += [(url, path, text) for path, text in said.items() if leaks(secret, text)]
    took = time.monotonic() - started
    assert not found, f"{len(found)} leaks, e.g. {found[:5]}"
    assert took < 120, took


@pytest.mark.parametrize(
    "text",
    [
        "postgresql://ann@db.internal:5432/labels?passfile=/home/ann/.pgpass-Secret1",
        "postgresql://db.internal/labels?sslmode=require&passfile=/home/ann/.pgpass-Secret1&user=ann",
        "host=db.internal dbname=labels passfile=/home/ann/.pgpass-Secret1",
        "host=db.internal dbname=labels passfile='/home/ann/my .pgpass-Secret1'",
    ],
)
def test_a_password_file_is_never_printed(text) -> None:
    """#25 masked ``passfile=`` in a printed URL; the one masking function keeps it so, as a URL
    parameter and as a conninfo key, quoted or not, with the store's URL known or not."""
    for shown in (masked(text), masked(text, known=text), one_line(f"cannot open {text}")):
        assert "pgpass-Secret1" not in shown, shown
        assert "passfile=***" in shown, shown
