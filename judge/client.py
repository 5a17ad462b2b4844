"""Calls to any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp
server, a LiteLLM proxy) through the ``openai`` async client.

- The endpoint is ``base_url`` (``--base-url`` or ``OPENAI_BASE_URL``); the key
  comes only from ``OPENAI_API_KEY``, read here and never stored, logged or
  shown (local servers that need no key get a placeholder).
- Concurrency is bounded by a semaphore (``--concurrency``, the options table's default).
- Transient failures are retried with exponential backoff and jitter: 429,
  5xx, timeouts and dropped connections; a ``Retry-After`` header (seconds or
  an HTTP date) sets the wait, up to ``max_retry_after`` seconds (default 60):
  a longer one, or one past the call's deadline, makes the call an error row.
  The ``openai`` client's own retries are off so that these rules are the only ones.
- Bounds (#17): ``timeout`` is the call's whole deadline (connect, every read,
  every retry and its wait; not per read, so an endpoint that drips a byte a
  second cannot hold a call); a reply (or error body) over ``max_reply_bytes``
  (default 1,000,000) is not read further: an error row holding its first KB;
  a redirect is not followed (it would store another endpoint's answers under
  this one's fingerprint): :class:`EndpointRefused` naming the target. A
  ``stopping`` event (the run's Ctrl-C or SIGTERM) ends a retry's wait at once.
- A proxy (#42's transport is the client's own, so httpx2 would not read the environment): the
  one httpx2 reads for the endpoint (:func:`environment_proxy`: HTTPS_PROXY, HTTP_PROXY, ALL_PROXY
  and NO_PROXY, either case), as the Batch API's client takes it; an https endpoint is reached
  through a CONNECT tunnel, a socks5:// proxy needs ``socksio`` (without it, :class:`EndpointRefused`).
  A proxy that asks for credentials (407) or refuses a tunnel (a 4xx to CONNECT) raises
  :class:`EndpointRefused`; one that cannot be reached is a connection error like any other.
  A proxy's credentials are never shown (:func:`judge.prompts.redact`).
- A refusal that no retry can fix (400, 401, 403, 404, 422) raises
  :class:`EndpointRefused`: a run stops instead of writing thousands of
  identical error rows.
- Every call reports the model the endpoint says it served (the reply's ``model``, which
  can differ from the one asked for when the name is an alias) and its
  ``system_fingerprint`` when sent: a judge's drift shows in the labels.
- Every call reports its token usage and latency; :class:`judge.prices.Prices` turns
  tokens into a cost when the model's price is known, and says "unknown"
  otherwise (never a made-up 0).
- Lean per call (#42): a run's request body is encoded once per rubric (:class:`RequestTemplate`:
  a call adds its user message and seed) and sent with the SDK's own ``request``, the method its
  ``post`` calls (the client's auth, headers, timeouts and status errors as
  ``chat.completions.create`` has them, without its per-call walk of the parameters; the request
  options ``post`` would build are built once and copied a call); the reply is read as the JSON it
  is, as leniently as the SDK's ``ChatCompletion`` reads it, without building pydantic models. The
  connections are held in several httpx2 pools (:class:`_CappedTransport`) over asyncio's own
  sockets (:mod:`judge.network`, not anyio's), the URL is made whole once, and the SDK keeps no
  per-read timeout (the call's whole deadline is ours).
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import json
import os
import random
import ssl
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC
from typing import TYPE_CHECKING, Any, cast

import httpx2

# boundary: the pinned httpx2's own reading of the proxy environment and its matching (its client's
# _get_proxy_map and _transport_for_url), not a copy of them; loaded by httpx2 itself, so free here
from httpx2._utils import URLPattern, get_environment_proxies

from annotation.errors import DenominatorError
from annotation.options import default
from judge.limits import MAX_REPLY_BYTES, MAX_RETRY_AFTER
from judge.prompts import redact

if TYPE_CHECKING:  # the SDK loads where a client is made (0.5 s of CPU: a dry run never pays it)
    import openai

__all__ = [
    "Endpoint",
    "environment_proxy",
    "JudgeClient",
    "CallResult",
    "CallFailed",
    "CallStopped",
    "EndpointRefused",
    "RequestTemplate",
    "UNUSABLE_PROXY",
    "encode_body",
    "request_body",
    "unusable_proxy",
]

RETRYABLE_STATUS = {408, 409, 429}  # and every 5xx (a gateway's 520-529 too)
PER_CALL_STATUS = {400, 413, 422}  # this request refused (too long, filtered): an error row, not a retry
MAX_WAIT = 60.0  # the longest backoff between two attempts
KEPT_BYTES = 1024  # of a reply over the cap, what the error row keeps
POOL_SHARD = 8  # concurrent calls per connection pool (:class:`_CappedTransport`)


class CallFailed(DenominatorError):
    """A call that still failed after its retries (becomes an error row); ``raw``: what
    was received of it, when anything was worth keeping (the first KB of a reply too large)."""

    def __init__(self, message: str, raw: str | None = None) -> None:
        super().__init__(message)
        self.raw = raw


class CallStopped(CallFailed):
    """A call not answered because the run was stopped (Ctrl-C, SIGTERM, the page's button)."""


class ReplyTooLarge(DenominatorError):
    """Raised while a reply is read, once it passes the cap; ``head``: its first KB."""

    def __init__(self, head: bytes) -> None:
        super().__init__("reply too large")
        self.head = head


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, cap: int) -> None:
        self._inner, self._cap = inner, cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen, head = 0, b""
        async for chunk in self._inner:
            seen += len(chunk)
            if len(head) < KEPT_BYTES:
                head += chunk[: KEPT_BYTES - len(head)]
            if seen > self._cap:
                raise ReplyTooLarge(head)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CappedTransport(httpx2.AsyncBaseTransport):
    """The HTTP transport with every response body capped at ``cap`` bytes as it is read.

    Its connections are held in ``ceil(concurrency / POOL_SHARD)`` pools of httpx2's own transport,
    taken in turn (#42): a pool walks all its connections and requests twice a call (when a request
    comes and when its reply is closed), so 32 calls in one pool of 32 connections cost about 750
    Python calls a request; four pools of about 8, a quarter of that. Each pool's sockets are
    asyncio's own streams (:mod:`judge.network`), not anyio's: 3,117 Python calls a request, not 3,535.

    ``proxy``: the proxy URL every pool goes through (:func:`environment_proxy`), or None for direct
    connections; httpx2's own proxy pools (a plain http endpoint's requests forwarded, an https one's
    tunnelled with CONNECT; socks5 needs ``socksio``), the same sockets, TLS context and cap."""

    def __init__(
        self, cap: int, concurrency: int = 1, proxy: str | None = None, tls_needed: bool = True
    ) -> None:
        import httpcore2  # start-up: httpx2 loads it with its first transport, as here
        import openai  # start-up: the SDK costs 0.5 s of CPU; loaded where a client is made

        from judge.network import AsyncioBackend

        shards = max(1, -(-concurrency // POOL_SHARD))
        # one context for all pools: each costs ~50 ms of CPU (the CA file read). A plain-http
        # endpoint reached directly or through a plain-http proxy speaks no TLS: its context loads
        # no authority and verifies (a handshake it were ever asked for would fail, never pass
        # unchecked), 22 ms of CPU less at a local endpoint's start (#42)
        self.tls = tls = (
            httpx2.create_ssl_context() if tls_needed else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        )
        self._pools = [
            httpx2.AsyncHTTPTransport(proxy=proxy, verify=tls, limits=openai.DEFAULT_CONNECTION_LIMITS)
            for _ in range(shards)
        ]
        backend = AsyncioBackend()
        for transport in self._pools:
            # boundary: httpx2's transport takes no network backend; its httpcore2 pool does, read at
            # each new connection (checked here: a library that renamed it keeps anyio's, not breaks).
            # A proxy's pool (httpcore2's AsyncHTTPProxy, AsyncSOCKSProxy) is a connection pool too: it
            # hands the same attribute to each forwarding, tunnelling or SOCKS connection it makes
            pool = getattr(transport, "_pool", None)
            if isinstance(getattr(pool, "_network_backend", None), httpcore2.AsyncNetworkBackend):
                pool._network_backend = backend  # type: ignore[union-attr]
        self._next_pool = itertools.cycle(self._pools).__next__
        self._cap = cap

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._next_pool().handle_async_request(request)
        # boundary: an async transport's body is an AsyncByteStream (httpx2's AsyncResponseStream);
        # Response.stream is typed for either kind of transport
        response.stream = _CappedStream(cast(httpx2.AsyncByteStream, response.stream), self._cap)
        return response

    async def aclose(self) -> None:
        for pool in self._pools:
            await pool.aclose()


class EndpointRefused(DenominatorError):
    """The endpoint refuses every call of this kind (bad key, model, URL or request), or cannot be
    reached as configured (a proxy in the environment this client cannot use)."""


def environment_proxy(base_url: str) -> tuple[str, str] | None:
    """The proxy httpx2 itself takes from the environment for ``base_url`` when it builds its own
    transport (as the Batch API's client does): ``(variable, proxy URL)``, or None for a direct
    connection. The variables are urllib's ``getproxies`` as httpx2's ``get_environment_proxies``
    reads them: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY, the lower-case form first; their
    patterns are matched most specific first, as httpx2's client matches its mounts. The live
    client passes its own transport, which makes httpx2 skip the environment: it asks here, once,
    for its one endpoint."""
    url = httpx2.URL(base_url)
    mounts = sorted(
        ((URLPattern(key), proxy) for key, proxy in get_environment_proxies().items()),
        key=lambda mount: mount[0],
    )
    for pattern, proxy in mounts:
        if pattern.matches(url):  # a NO_PROXY entry (None) or the first proxy of the endpoint's scheme
            return None if proxy is None else (f"{pattern.scheme or 'all'}_proxy".upper(), proxy)
    return None


def _shown(url: str) -> str:
    """A URL as a message may show it: :func:`redact`'s, or no part of it when it cannot be read."""
    try:
        return redact(url)
    except ValueError:  # a port that is not a number, a bracket not closed
        return "(a URL that cannot be read)"


def _capped_transport(endpoint: Endpoint) -> _CappedTransport:
    """The client's transport, through the environment's proxy for its endpoint when there is one;
    EndpointRefused, one line naming the variable and the proxy (never its credentials), when that
    proxy cannot be used: a SOCKS proxy without ``socksio``, a scheme httpx2 has no pool for, a URL
    that cannot be read."""
    found = environment_proxy(endpoint.base_url)
    plain = _scheme(endpoint.base_url) == "http"
    if found is None:
        return _CappedTransport(endpoint.max_reply_bytes, endpoint.concurrency, tls_needed=not plain)
    variable, proxy = found
    try:
        plain = plain and _scheme(proxy) == "http"
        return _CappedTransport(endpoint.max_reply_bytes, endpoint.concurrency, proxy, tls_needed=not plain)
    except UNUSABLE_PROXY as exc:
        what = f"the proxy {_shown(proxy)} ({variable} or {variable.lower()})"
        raise EndpointRefused(f"{_shown(endpoint.base_url)}: {what} is {unusable_proxy(exc)}") from None


def _scheme(url: str) -> str:
    """The URL's scheme, lower case ("" when it has none)."""
    head, separator, _ = url.partition("://")
    return head.strip().lower() if separator else ""


# what httpx2 raises for a proxy URL it has no pool for: ImportError ("Using SOCKS proxy, but the
# 'socksio' package is not installed"), ValueError (its Proxy: a scheme not http, https, socks5 nor
# socks5h), InvalidURL (a URL it cannot read); none of their texts is shown (they hold the URL)
UNUSABLE_PROXY = (ImportError, ValueError, httpx2.InvalidURL)


def unusable_proxy(exc: BaseException) -> str:
    """Why a proxy of the environment cannot be used, from httpx2's exception (:data:`UNUSABLE_PROXY`)."""
    if isinstance(exc, ImportError):
        return "a SOCKS proxy, which needs the socksio package (not installed): pip install socksio"
    return "not a proxy URL this client can use (http://, https://, socks5:// or socks5h://)"


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str
    temperature: float = 0.0
    seed: int | None = 0
    timeout: float = 60.0  # the call's whole deadline: connect, every read, retries and their waits
    max_retries: int = 6
    concurrency: int = default("concurrency")  # the options table's
    backoff: float = 0.5  # first wait, doubled per retry, with jitter
    max_retry_after: float = MAX_RETRY_AFTER  # a longer Retry-After makes the call an error row
    max_reply_bytes: int = MAX_REPLY_BYTES  # a longer reply is not read: an error row with its first KB

    @staticmethod
    def from_env(model: str | None = None, base_url: str | None = None, **settings: Any) -> Endpoint:
        url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        return Endpoint(
            base_url=url.rstrip("/"), model=model or os.environ.get("OPENAI_MODEL") or "", **settings
        )


@dataclass
class CallResult:
    text: str | None
    tokens_in: int | None
    tokens_out: int | None
    latency_ms: float
    attempts: int
    served_model: str | None = None  # the reply's ``model``: what the endpoint says it served
    system_fingerprint: str | None = None  # the reply's ``system_fingerprint``, when sent


def request_body(
    endpoint: Endpoint,
    messages: list[dict[str, str]],
    response_format: Mapping[str, Any] | None,
    seed: int | None = None,
) -> dict[str, Any]:
    """The body of one chat completion, as a live call sends it and a batch line holds it
    (``seed`` overrides the endpoint's)."""
    body: dict[str, Any] = {
        "model": endpoint.model,
        "messages": messages,
        "temperature": endpoint.temperature,
    }
    if response_format is not None:
        body["response_format"] = response_format
    if seed is not None or endpoint.seed is not None:
        body["seed"] = seed if seed is not None else endpoint.seed
    return body


def encode_body(body: object) -> bytes:
    """A request body as the SDK encodes it (``openai._utils._json.openapi_dumps``: UTF-8, no ASCII
    escapes, no spaces, no NaN)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


_USER_SLOT = "\x00user\x00"  # a system message never holds a NUL: the slot cannot match its text
_SEED_SLOT = "\x00seed\x00"


class RequestTemplate:
    """The chat completion body of one rubric's calls, encoded once: model, system message,
    temperature, response format; :meth:`render` adds a call's user message and seed. The bytes
    are those of :func:`encode_body` of :func:`request_body` for ``[system, user]``."""

    def __init__(self, endpoint: Endpoint, system: str, response_format: Mapping[str, Any] | None) -> None:
        self.endpoint, self.system, self.response_format = endpoint, system, response_format
        messages = [{"role": "system", "content": system}, {"role": "user", "content": _USER_SLOT}]
        body = request_body(endpoint, messages, response_format)
        self._seeded = "seed" in body
        if self._seeded:
            body["seed"] = _SEED_SLOT
        head, user_slot, tail = encode_body(body).partition(encode_body(_USER_SLOT))
        middle, seed_slot, end = tail.partition(encode_body(_SEED_SLOT))
        if not user_slot or bool(seed_slot) != self._seeded:  # a slot not found once: never sent wrong
            raise ValueError("the request body's slots were not found in its encoding")
        self._parts = (head, middle, end)

    def render(self, user: str, seed: int | None = None) -> bytes:
        """The body of one call (``seed`` overrides the endpoint's, as :func:`request_body`)."""
        seed = seed if seed is not None else self.endpoint.seed
        if (seed is not None) != self._seeded or isinstance(seed, bool):
            messages = [{"role": "system", "content": self.system}, {"role": "user", "content": user}]
            return encode_body(request_body(self.endpoint, messages, self.response_format, seed))
        head, middle, end = self._parts
        return b"".join((head, encode_body(user), middle, str(seed).encode() if self._seeded else b"", end))


def read_completion(
    reply: httpx2.Response,
) -> tuple[str | None, int | None, int | None, str | None, str | None]:
    """(text, tokens in, tokens out, served model, system fingerprint) of a 200 reply, read as the
    SDK's ``ChatCompletion`` reads it (missing fields are None; no pydantic model built): a body that
    is not JSON, not an object, or whose first choice has no message object raises CallFailed. A
    text, token count or model of the wrong type is None (as a batch line's)."""
    try:
        data = json.loads(reply.content)
    except ValueError:  # not JSON (or not UTF-8): with a JSON content type, say so as the SDK's error did
        content_type = reply.headers.get("content-type", "*").split(";")[0]
        why = " (JSONDecodeError)" if content_type.endswith("json") else ""
        raise CallFailed(f"a reply that is not a chat completion{why}") from None
    if not isinstance(data, dict):
        raise CallFailed("a reply that is not a chat completion")
    choices = data.get("choices")
    text: object = None
    if choices:
        first = choices[0] if isinstance(choices, list) else None
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict):  # a 200 that is not a chat completion (a proxy's page)
            raise CallFailed("a reply that is not a chat completion")
        text = message.get("content")
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    served, system = data.get("model"), data.get("system_fingerprint")
    return (
        text if isinstance(text, str) else None,
        _count(usage.get("prompt_tokens")),
        _count(usage.get("completion_tokens")),
        served if isinstance(served, str) and served else None,
        system if isinstance(system, str) and system else None,
    )


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _retry_after(exc: openai.APIStatusError) -> float | None:
    """Seconds to wait from a Retry-After header (seconds or an HTTP date); None
    when absent or unreadable (the normal backoff applies)."""
    value = exc.response.headers.get("retry-after") if exc.response is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - time.time())


def _error_code(exc: openai.APIStatusError) -> str | None:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    inner = error if isinstance(error, dict) else body
    code = inner.get("code") or inner.get("type")
    return str(code) if code else None


class JudgeClient:
    """One endpoint and model; ``await complete(...)`` per call, at most
    ``endpoint.concurrency`` at once."""

    def __init__(
        self, endpoint: Endpoint, rng: random.Random | None = None, api_key: str | None = None
    ) -> None:
        """``api_key``: default ``OPENAI_API_KEY``; the Judge page passes none for an
        endpoint other than the configured one (the server's key goes nowhere else)."""
        if not endpoint.model:
            raise EndpointRefused("no model given: pass --model (or set OPENAI_MODEL)")
        import openai  # start-up: the SDK costs 0.5 s of CPU; loaded where a client is made
        from openai._models import FinalRequestOptions  # start-up: the SDK's, with it

        self.endpoint = endpoint
        self._client = openai.AsyncOpenAI(
            base_url=endpoint.base_url,
            api_key=api_key if api_key is not None else (os.environ.get("OPENAI_API_KEY") or "no-key"),
            max_retries=0,
            # no per-read timeouts: the call's whole deadline (send, asyncio.timeout_at) ends first
            # anyway, and each read and write would arm and cancel a timer (#42)
            timeout=None,
            # Redirects are not followed: another host's answer would be stored under this
            # endpoint's fingerprint. Replies are read up to max_reply_bytes, uncompressed.
            http_client=openai.DefaultAsyncHttpxClient(
                transport=_capped_transport(endpoint),  # the environment's proxy, as httpx2's own
                follow_redirects=False,
                headers={"Accept-Encoding": "identity"},
            ),
        )
        # the URL whole, once: the SDK merges a relative path into its base URL at every call
        self._url = str(self._client.base_url.join("chat/completions"))
        # the options the SDK's ``post(url, content=...)`` builds at every call (a pydantic model whose
        # defaults are deep-copied: 7% of a call's Python calls), built once; a call copies them as the
        # SDK's ``request`` copies them itself (boundary: openai._models, the pinned SDK's own class)
        self._options = FinalRequestOptions.construct(method="post", url=self._url)
        self._limit = asyncio.Semaphore(endpoint.concurrency)
        self._rng = rng or random.Random()
        self.retries = 0  # transient failures retried, over all calls

    async def close(self) -> None:
        await self._client.close()

    async def complete(
        self,
        messages: list[dict[str, str]],
        response_format: Mapping[str, Any] | None,
        call_id: str,
        seed: int | None = None,
        stopping: asyncio.Event | None = None,
    ) -> CallResult:
        """One chat completion, retried on transient failures, within ``endpoint.timeout``
        seconds in all (from the moment the call may start: a free concurrency slot).
        ``call_id`` is sent as ``X-Denominator-Call`` (servers and proxies may log it);
        ``seed`` overrides the endpoint's (a pair's repeat r asks with seed + r); ``stopping``
        set ends a retry's wait at once (:class:`CallStopped`)."""
        body = encode_body(request_body(self.endpoint, messages, response_format, seed))
        return await self.send(body, call_id, stopping)

    async def send(self, body: bytes, call_id: str, stopping: asyncio.Event | None = None) -> CallResult:
        """:meth:`complete` with its body already encoded (:meth:`RequestTemplate.render`)."""
        async with self._limit:
            attempts = [0]
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.endpoint.timeout
            try:
                async with asyncio.timeout_at(deadline):
                    return await self._attempts(body, call_id, stopping, deadline, attempts)
            except TimeoutError:
                raise CallFailed(
                    f"no complete reply within the call's deadline of {self.endpoint.timeout:g} s "
                    f"(connect, reads, retries; {_attempts_text(attempts[0])})"
                ) from None

    async def _attempts(
        self, body: bytes, call_id: str, stopping: asyncio.Event | None, deadline: float, attempts: list[int]
    ) -> CallResult:
        import openai  # start-up: the SDK (0.5 s of CPU) loads with the client; here a sys.modules look-up

        ep = self.endpoint
        headers = {"X-Denominator-Call": call_id}
        loop = asyncio.get_running_loop()
        while True:
            attempts[0] += 1
            attempt = attempts[0]
            started = time.monotonic()
            try:
                # the SDK's request as chat.completions.create makes it (auth, headers, timeout, status
                # errors), less its per-call transform of the parameters: the body is encoded already,
                # and the options its ``post`` would build are copied from the client's (#42)
                options = self._options.model_copy()
                options.content, options.headers = body, headers
                reply = await self._client.request(httpx2.Response, options)
            except ReplyTooLarge as exc:
                raise CallFailed(
                    f"a reply over {ep.max_reply_bytes:,} bytes (--max-reply-bytes), not read further; "
                    f"its first {len(exc.head):,} bytes kept",
                    raw=exc.head.decode("utf-8", errors="replace"),
                ) from None
            except openai.APIStatusError as exc:
                status = exc.status_code
                if 300 <= status < 400:
                    target = exc.response.headers.get("location") if exc.response is not None else None
                    raise EndpointRefused(
                        f"{redact(ep.base_url)}: HTTP {status}: a redirect to {redact(target or 'nowhere named')}, "
                        "not followed (its answers would be stored as this endpoint's); give the endpoint "
                        "meant as --base-url"
                    ) from None
                if status == 429 and _error_code(exc) == "insufficient_quota":
                    raise EndpointRefused(
                        f"{redact(ep.base_url)}: HTTP 429: the account's quota is used up"
                    ) from None
                if status in PER_CALL_STATUS:
                    raise CallFailed(_refusal(exc, ep)) from None
                if status not in RETRYABLE_STATUS and status < 500:
                    raise EndpointRefused(_refusal(exc, ep)) from None
                wait = _retry_after(exc)
                reason = f"HTTP {status}"
                if wait is not None and wait > ep.max_retry_after:
                    raise CallFailed(
                        f"{reason} with Retry-After {wait:,.0f} s, over the {ep.max_retry_after:g} s "
                        f"honoured (--max-retry-after); {_attempts_text(attempt)}"
                    ) from None
                if wait is not None and loop.time() + wait > deadline:
                    raise CallFailed(
                        f"{reason} with Retry-After {wait:,.0f} s, past the call's deadline of "
                        f"{ep.timeout:g} s (--timeout); {_attempts_text(attempt)}"
                    ) from None
            except (openai.APIConnectionError, openai.APITimeoutError) as exc:
                if (untrusted := _untrusted_certificate(exc)) is not None:
                    raise EndpointRefused(
                        f"{redact(ep.base_url)}: its TLS certificate is not trusted ({untrusted}); no retry "
                        "can fix that: give the certificate of the authority that signed it in "
                        "SSL_CERT_FILE (a file) or SSL_CERT_DIR"
                    ) from None
                if (tunnel := _proxy_refusal(exc)) is not None:
                    raise EndpointRefused(
                        f"{redact(ep.base_url)}: the proxy refused the tunnel to it (CONNECT): {tunnel}"
                        + (f" ({_PROXY_CREDENTIALS})" if tunnel.startswith("407") else "")
                    ) from None
                wait, reason = None, type(exc).__name__
            else:
                latency = (time.monotonic() - started) * 1000
                text, tokens_in, tokens_out, served, system = read_completion(reply)
                return CallResult(
                    text=text,
                    tokens_in=tokens_in,
                    tokens_out=tokens_out,
                    latency_ms=latency,
                    attempts=attempt,
                    served_model=served,
                    system_fingerprint=system,
                )
            if attempt > ep.max_retries:
                raise CallFailed(f"{reason} after {attempt} attempts")
            if stopping is not None and stopping.is_set():
                raise CallStopped(f"not answered: stopped before retrying ({reason})")
            self.retries += 1
            if wait is None:
                wait = ep.backoff * 2 ** (attempt - 1) * (0.5 + self._rng.random())
            await _wait(min(wait, MAX_WAIT), stopping, reason)


def _untrusted_certificate(exc: BaseException) -> str | None:
    """The TLS verification failure under a connection error (its reason: "self-signed
    certificate", "unable to get local issuer certificate", a host name that does not match), or
    None when the connection failed otherwise (refused, dropped, timed out: retried)."""
    import ssl  # start-up: loaded already by the connection that failed; a sys.modules look-up

    seen: BaseException | None = exc
    for _ in range(8):  # the SDK's error, httpx2's, httpcore2's, then the ssl module's own
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLCertVerificationError):
            return str(seen.verify_message or seen.reason or "certificate verify failed")
        seen = seen.__cause__ or seen.__context__
    return None


def _proxy_refusal(exc: BaseException) -> str | None:
    """A proxy's refusal of a CONNECT tunnel under a connection error, its status line ("407 Proxy
    Authentication Required", "403 Forbidden": no retry can fix it); None otherwise (a 5xx, the proxy
    not reaching the endpoint, is retried as a dropped connection)."""
    seen: BaseException | None = exc
    for _ in range(8):  # the SDK's error, then httpx2's
        if seen is None:
            return None
        if isinstance(seen, httpx2.ProxyError):
            status = str(seen)  # httpcore2's: the CONNECT reply's status and reason, nothing of the URL
            return status if status[:1] == "4" else None
        seen = seen.__cause__ or seen.__context__
    return None


_PROXY_CREDENTIALS = "give the proxy's credentials in its URL: http://user:password@host:port"


def _attempts_text(n: int) -> str:
    return f"{n} attempt" + ("" if n == 1 else "s")


async def _wait(seconds: float, stopping: asyncio.Event | None, reason: str) -> None:
    """Sleep ``seconds``; a ``stopping`` event set meanwhile ends the wait at once (CallStopped)."""
    if stopping is None:
        await asyncio.sleep(seconds)
        return
    try:
        async with asyncio.timeout(seconds):
            await stopping.wait()
    except TimeoutError:
        return
    raise CallStopped(f"not answered: stopped while waiting to retry ({reason})")


def _refusal(exc: openai.APIStatusError, ep: Endpoint) -> str:
    try:
        message = exc.body.get("message") if isinstance(exc.body, dict) else None
    except AttributeError:
        message = None
    what = {
        401: "the key was refused (set OPENAI_API_KEY)",
        403: "the key may not use this model or endpoint",
        404: f"no such model or path ({ep.model!r} at {redact(ep.base_url)})",
        407: f"the proxy asks for credentials ({_PROXY_CREDENTIALS})",
        400: "the request was refused (an endpoint without JSON-schema replies: try --schema json_object "
        "or --schema prompt)",
    }.get(exc.status_code, "the request was refused")
    return f"{redact(ep.base_url)}: HTTP {exc.status_code}: {what}" + (f": {message}" if message else "")
