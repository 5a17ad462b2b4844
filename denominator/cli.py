"""``denominator``: one command for the three command lines (``pip install .`` puts it on PATH),
and the commands of the product as a whole.

    denominator annotation ...   the label store: import, imports, pool, baseline, annotators,
                                 handout, guidelines, migrate, export, chunk, import-chroma
    denominator judge ...        the judge: grade, compare, fit-lexical, batch, list
    denominator calibration ...  metrics, holes, audit, check, history, compare, agree, position, ppi,
                                 plan, review, project
    denominator demo [--db DB] [--if-empty]   the demo database (``make run`` builds it)
    denominator serve [--db DB] [--port N] [--host H] [--secrets FILE] [--api [--api-max-bytes N]]
                                 the app (what ``make run`` serves); --api: the HTTP API at /api beside it
    denominator --version

``denominator GROUP ARGS`` is ``python -m GROUP ARGS``: the same options, output and exit
codes (0 success, 1 a gate failed, 2 bad usage or input, 130 interrupted). ``python -m
denominator`` is the same command.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import shlex
import signal
import stat
import sys
import textwrap
import tomllib
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from urllib.parse import urlsplit

from annotation.cli_base import (
    OneLineParser,
    UsageError,
    add_db_option,
    check_served_db,
    refuse_data_file_as_new_db,
    refuse_special_db,
    run_main,
    shown_db,
)
from annotation.quiet_start import quiet_interrupt_until_main
from annotation.values import origin, positive_int, read_small_file, refuse_special

# every command of each group, in its --help's order (a test holds them to the groups' parsers)
GROUPS = {
    "annotation": "the label store: import, imports, pool, baseline, annotators, handout, guidelines, "
    "migrate, export, chunk, import-chroma",
    "judge": "the judge: grade, compare, fit-lexical, batch, list",
    "calibration": "metrics, holes, audit, check, history, compare, agree, position, ppi, plan, review, project",
}
COMMANDS = {
    "demo": "build the demo database: the worked example as a labelling project",
    "serve": "serve the app (the labelling, judge, metrics and review pages) on this machine",
}
APP = Path(__file__).resolve().parent / "app.py"
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8501
# the Host names the app answers to unless STREAMLIT_SERVER_ALLOWED_HOSTS says others (DNS
# rebinding: a page elsewhere whose name resolves here must not reach the app; annotation.access.routes)
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


def package_version() -> str:
    try:
        return version("denominator")
    except PackageNotFoundError:  # a checkout run without `pip install`: the source's own version
        return "unknown (not installed: pip install . or make)"


def usage() -> str:
    lines = ["usage: denominator {annotation,judge,calibration,demo,serve} ... | --version", "", "commands:"]
    for name, text in (GROUPS | COMMANDS).items():
        lines += textwrap.wrap(text, 100, initial_indent=f"  {name:<12} ", subsequent_indent=" " * 15)
    lines += ["", "denominator COMMAND --help lists a command's options."]
    return "\n".join(lines) + "\n"


def demo_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="denominator demo", description=COMMANDS["demo"])
    add_db_option(parser)
    parser.add_argument(
        "--if-empty",
        action="store_true",
        help="only when the database is missing or holds no data (what make run does)",
    )
    return parser


def run_demo(args: argparse.Namespace) -> tuple[str, int]:
    """The demo into the database; with ``--if-empty`` only when it is missing or holds no data
    (``make run``: a database that holds anything is served as it is)."""
    # start-up: the demo builder loads every package; `denominator --help` and the groups never pay
    from annotation.cli_base import open_store
    from annotation.store import default_db_path
    from annotation.store.base import holds_nothing
    from denominator.demo import build_demo

    path = args.db or default_db_path()
    refuse_special_db(path)  # before holds_nothing opens it
    refuse_data_file_as_new_db(path)  # an empty x.jsonl is no new database
    if args.if_empty and not holds_nothing(path):
        return f"database {shown_db(path)} already holds data: the demo is not added\n", 0
    with open_store(path, "create"):  # said on stderr once the demo is built
        return build_demo(path, with_judge=True), 0


def port(text: str) -> int:
    """An argparse type: a TCP port, 1 to 65535."""
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 1 to 65535, got {text.strip()}")
    return value


def serve_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="denominator serve", description=COMMANDS["serve"])
    add_db_option(parser)
    parser.add_argument(
        "--port", type=port, default=None, help=f"the port (default: $PORT, else {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"the address to listen on (default {DEFAULT_HOST}: this machine only; another address "
        "needs sign-in tokens or a provider, and its name in STREAMLIT_SERVER_ALLOWED_HOSTS)",
    )
    parser.add_argument(
        "--secrets",
        metavar="FILE",
        help="a secrets.toml whose [auth] section signs people in with the team's OpenID Connect "
        "provider (docs/sign-in.md); only its owner may read it (chmod 600)",
    )
    parser.add_argument(
        "--api",
        action="store_true",
        help="also serve the HTTP API at /api on the same port and store: push imports, read labels "
        "and verdicts with the people's tokens (docs/api-http.md)",
    )
    parser.add_argument(
        "--api-max-bytes",
        type=positive_int,
        default=None,
        metavar="N",
        help="with --api: the most bytes one request body may carry (default 8388608: 8 MiB; at "
        "most 1073741824: 1 GiB)",
    )
    return parser


AUTH_KEYS = ("redirect_uri", "cookie_secret", "client_id", "client_secret", "server_metadata_url")
MIN_COOKIE_SECRET = 32  # characters: the key that signs everyone's sign-in cookie


def check_secrets(path: str) -> tuple[str, str]:
    """``--secrets FILE``, checked before Streamlit starts: a file only its owner can read, TOML,
    with Streamlit's ``[auth]`` keys for one provider. Returns the provider's host and the app's
    address its ``redirect_uri`` names (where people must open the app to sign in with it). Each
    refusal is one line naming the file and the key, never a value."""
    where = f"--secrets {path}"
    try:
        refuse_special(path, where)  # a FIFO opened for reading waits for ever
        mode = os.stat(path).st_mode
        if mode & 0o077:
            raise UsageError(
                f"{where}: other users may read it (mode {stat.S_IMODE(mode):04o}); chmod 600 {shlex.quote(path)}"
            )
        data = tomllib.loads(read_small_file(path, where).decode("utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{where}: no such file") from None
    except UnicodeDecodeError as exc:  # where, never what
        raise UsageError(f"{where}: not UTF-8 text (at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:  # where, never what: a message may quote the file
        at = re.search(r"line \d+, column \d+", str(exc))
        raise UsageError(f"{where}: not TOML" + (f" (at {at.group()})" if at else "")) from None
    except OSError as exc:
        raise UsageError(f"{where}: cannot read it ({exc.strerror})") from None
    auth = data.get("auth")
    if not isinstance(auth, dict):
        raise UsageError(f"{where}: no [auth] section (docs/sign-in.md says what it holds)")
    missing = [key for key in AUTH_KEYS if not isinstance(auth.get(key), str) or not auth[key].strip()]
    if missing:
        raise UsageError(f"{where}: [auth] lacks {', '.join(missing)} (docs/sign-in.md)")
    for key in ("redirect_uri", "server_metadata_url"):
        if urlsplit(auth[key]).scheme not in ("http", "https") or not urlsplit(auth[key]).netloc:
            raise UsageError(f"{where}: [auth] {key} must be an http:// or https:// address")
    if not auth["redirect_uri"].rstrip("/").endswith("/oauth2callback"):
        raise UsageError(f"{where}: [auth] redirect_uri must end in /oauth2callback (the app's address + it)")
    if len(auth["cookie_secret"]) < MIN_COOKIE_SECRET:
        raise UsageError(
            f"{where}: [auth] cookie_secret is shorter than {MIN_COOKIE_SECRET} characters; make a long "
            "random one: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    if importlib.util.find_spec("authlib") is None:  # Streamlit's st.login runs on Authlib
        raise UsageError("sign-in with a provider needs Authlib: pip install -r requirements.txt")
    back_to = origin(auth["redirect_uri"])
    if back_to is None:
        raise UsageError(f"{where}: [auth] redirect_uri must be an http:// or https:// address")
    return urlsplit(auth["server_metadata_url"]).netloc, back_to


def check_session_hours() -> None:
    """``DENOMINATOR_SESSION_HOURS`` read before the app starts: a value out of its range is one
    line and exit 2 here, not an error at each sign-in."""
    # start-up: the store's package, which the app is about to open anyway
    from annotation.store.identity import session_hours

    session_hours()  # a StoreError: one line, exit 2


def streamlit_command(host: str, port: int, secrets: str | None = None) -> list[str]:
    """``streamlit run`` of the installed app, through :mod:`denominator.server` (its deadlines and
    connection cap), with the settings ``make run`` serves: the address,
    the Host names it answers to, headless, no file watcher, a viewer's toolbar (no Deploy button,
    no developer menu), no usage statistics. Given on the command line, not read from a
    ``.streamlit/config.toml`` of the current folder, so an installed package serves the same."""
    command = [sys.executable, "-m", "denominator.server", "run", str(APP), "--server.headless", "true"]
    command += ["--server.address", host, "--server.port", str(port), "--server.fileWatcherType", "none"]
    command += ["--client.toolbarMode", "viewer", "--browser.gatherUsageStats", "false"]
    if not os.environ.get("STREAMLIT_SERVER_ALLOWED_HOSTS"):  # else the environment's list holds
        for name in LOCAL_HOSTS:
            command += ["--server.allowedHosts", name]
    if secrets:  # the file's path, never its contents, on the command line
        command += ["--secrets.files", str(Path(secrets).resolve())]
    return command


def run_serve(args: argparse.Namespace) -> tuple[str, int]:
    """The app, in this process (Streamlit replaces it: Ctrl-C and a stop signal reach the server)."""
    env = dict(os.environ)
    if args.db:
        env["DENOMINATOR_DB"] = args.db
    try:
        chosen = args.port or (port(env["PORT"]) if env.get("PORT") else DEFAULT_PORT)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"PORT: {exc}") from None
    db = env.get("DENOMINATOR_DB") or "./denominator.db"
    refuse_special_db(db)  # the app would wait on a FIFO for ever
    check_session_hours()
    here = f"http://{args.host}:{chosen}"
    said = f"serving {shown_db(db)} at {here}"
    if args.api_max_bytes is not None and not args.api:
        raise UsageError("--api-max-bytes goes with --api")
    # start-up: the API's module (starlette, the import actions) loads for serve only, not every command
    from annotation.http_contract import API_ENV, API_PATH, BODY_BYTES_MAX, MAX_BYTES_ENV
    from denominator.server import guard

    guard()  # the deadlines and the connection cap of the environment: one line and exit 2 when wrong
    if args.api_max_bytes is not None and args.api_max_bytes > BODY_BYTES_MAX:
        raise UsageError(
            f"--api-max-bytes: expected at most {BODY_BYTES_MAX} (1 GiB), got {args.api_max_bytes}"
        )
    env.pop(API_ENV, None)  # only --api serves it, whatever the environment says
    env.pop(MAX_BYTES_ENV, None)
    if args.api:
        env[API_ENV] = "1"
        if args.api_max_bytes is not None:
            env[MAX_BYTES_ENV] = str(args.api_max_bytes)
        said += f"; HTTP API at {here}{API_PATH} (its page: {here}{API_PATH}/docs)"
    if args.secrets:
        host, back_to = check_secrets(args.secrets)
        said += f"; sign-in with {host}"
        if back_to != origin(here):  # the provider sends people back there, not here
            said += f": people open {back_to}, where its redirect_uri sends them back"
    check_served_db(db)  # a file that is no Denominator database: refused before the server starts
    print(f"{said} (Ctrl-C stops)", file=sys.stderr, flush=True)
    command = streamlit_command(args.host, chosen, args.secrets)
    os.execve(command[0], command, env)
    return "", 0  # not reached: execve replaced this process


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # the installed command: Ctrl-C while the group's modules import is one line
        quiet_interrupt_until_main()
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(usage())
        return 0
    if args[0] == "--version":
        sys.stdout.write(f"denominator {package_version()}\n")
        return 0
    group, rest = args[0], args[1:]
    if group == "demo":
        code = run_main(demo_parser(), run_demo, rest)
    elif group == "serve":
        code = run_main(serve_parser(), run_serve, rest)
    elif group in GROUPS:
        # each group's CLI is imported only when it runs: the others' start-up costs are not paid
        code = importlib.import_module(f"{group}.__main__").main(rest)
    else:
        print(
            f"error: denominator: unknown command {group!r}; expected one of {', '.join(GROUPS | COMMANDS)}",
            file=sys.stderr,
        )
        return 2
    if argv is None:  # the installed command has answered: a Ctrl-C while Python shuts down changes nothing
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code


if __name__ == "__main__":
    sys.exit(main())
