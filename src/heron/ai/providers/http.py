"""The transport every HTTP provider shares: clients, keys, the request, the SSE stream, failures.

The Anthropic, both OpenAI and the Gemini adapters speak their APIs over one lean
streaming client (httpx plus the SSE reader below) instead of the vendors' SDKs
(:class:`heron.ai.providers.base.HttpProvider` drives it for them): importing an SDK costs
300-850 ms per start and its request models walk the whole history on every request,
while these APIs are one JSON POST answered by server-sent events. What this module
guarantees, the same way for each of them:

- one ``httpx.AsyncClient`` per event loop (connection pools belong to the loop that
  opened them; a second ``asyncio.run()`` gets a fresh client instead of a closed one);
- one API-key lookup (:func:`api_key`);
- the request is sent as the bytes the adapter already built (no re-validation);
- the stream is read line by line; invalid UTF-8 is decoded with replacement, SSE
  comments and ``ping`` events are keep-alives that do not count as activity;
- one classification of a broken stream: a connection that drops or a body that ends
  before the response was complete is :data:`INCOMPLETE`, malformed JSON in an event is
  transient too (both are worth another attempt while nothing was shown);
- failures name the server they went to.
"""

from __future__ import annotations

import importlib
import json
import os
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from heron.ai.builder import MessageBuilder
from heron.ai.options import StreamOptions
from heron.ai.overflow import ErrorKind, ProviderError

if TYPE_CHECKING:
    import asyncio

    import httpx

INCOMPLETE = "stream ended before the response was complete"
NO_KEY = "heron-no-key"  # what local servers get when no key is configured
_MAX_ERROR_BODY = 64_000


# --- keys and URLs ---------------------------------------------------------------------


def api_key(options: StreamOptions, env_names: Sequence[str], *, use_env: bool = True) -> str | None:
    """The key to send: the explicit one, else the first set variable of ``env_names``
    (unless ``use_env`` is false - a server that is not the vendor's must not receive
    the vendor's key)."""
    if options.api_key:
        return options.api_key
    if use_env:
        for name in env_names:
            value = os.environ.get(name)
            if value:
                return value
    return None


def join_url(base: str, path: str) -> str:
    return base.rstrip("/") + "/" + path.lstrip("/")


def display_url(url: str) -> str:
    """``scheme://host[:port]`` of a URL: what a user needs to see which server failed (never
    its ``user:password@``)."""
    scheme, sep, rest = without_userinfo(url).partition("://")
    if not sep:
        return url
    return f"{scheme}://{rest.split('/', 1)[0]}"


def _split_userinfo(url: str) -> tuple[str, str, str, str] | None:
    """``(scheme, userinfo, host and the rest)`` pieces of ``scheme://user:pw@host/path``:
    ``(scheme, userinfo, hostport, rest)``; None for a URL without userinfo."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return None
    netloc, slash, path = rest.partition("/")
    userinfo, at, hostport = netloc.rpartition("@")
    if not at:
        return None
    return scheme, userinfo, hostport, slash + path


def without_password(url: str) -> tuple[str, bool]:
    """``url`` without the password of its userinfo (``http://me:pw@host/v1`` ->
    ``http://me@host/v1``, the user name kept), and whether it had one: what may be stored."""
    parts = _split_userinfo(url)
    if parts is None:
        return url, False
    scheme, userinfo, hostport, rest = parts
    user, colon, _ = userinfo.partition(":")
    return (f"{scheme}://{user}@{hostport}{rest}" if user else f"{scheme}://{hostport}{rest}"), bool(colon)


def without_userinfo(url: str) -> str:
    """``url`` without any ``user[:password]@``: the server, to key a cache on."""
    parts = _split_userinfo(url)
    if parts is None:
        return url
    scheme, _, hostport, rest = parts
    return f"{scheme}://{hostport}{rest}"


# --- JSON ---------------------------------------------------------------------------------


class Obj(dict[str, Any]):
    """A JSON object whose members read as attributes too (``event.delta.text``), with
    ``None`` for absent ones, so adapters read nested wire events tersely."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        return self.get(name)


def loads(text: str) -> Any:
    return json.loads(text, object_hook=Obj)


# --- clients ------------------------------------------------------------------------------


_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def _plain_http(url: str) -> bool:
    """Whether ``url`` is reached without TLS at all (``http://`` and no proxy set)."""
    if not url.startswith("http://"):
        return False
    return not any(os.environ.get(name) or os.environ.get(name.upper()) for name in _PROXY_VARIABLES)


# What httpx loads on the first connection of a process rather than at its import: httpcore's
# anyio backend and the parts of anyio it uses (anyio loads its modules on first use).
_CONNECTION_MODULES = (
    "httpcore._backends.anyio",
    "sniffio",
    "anyio.lowlevel",
    "anyio._core._tasks",
    "anyio._core._sockets",
    "anyio._core._streams",
)


def load_transport() -> None:
    """Import httpx and what its first connection imports, so a caller with time to spare
    (a session waiting for its first prompt) takes that cost off the first request. Best
    effort: a module that is not there is left for the request to need or not."""
    import httpx  # noqa: F401

    for name in _CONNECTION_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            continue


class ClientCache:
    """One ``httpx.AsyncClient`` per running event loop (two: one for ``https``, one for
    plain ``http`` servers, which skips loading the CA bundle - 27 ms of a start - since
    no TLS is involved)."""

    def __init__(self) -> None:
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[bool, httpx.AsyncClient]] = (
            weakref.WeakKeyDictionary()
        )

    def get(self, url: str = "https://") -> httpx.AsyncClient:
        import asyncio

        import httpx

        plain = _plain_http(url)
        per_loop = self._clients.setdefault(asyncio.get_running_loop(), {})
        client = per_loop.get(plain)
        if client is None or client.is_closed:
            # heron's own timers bound every wait (StreamOptions.*_ms); httpx's are off.
            if plain:
                client = httpx.AsyncClient(timeout=None, follow_redirects=False, verify=False)
            else:
                client = httpx.AsyncClient(timeout=None, follow_redirects=False)
            per_loop[plain] = client
        return client

    async def aclose(self) -> None:
        import asyncio

        for client in self._clients.pop(asyncio.get_running_loop(), {}).values():
            await client.aclose()


CLIENTS = ClientCache()


# --- errors -------------------------------------------------------------------------------


class HttpStatusError(Exception):
    """A non-2xx answer: status, headers and the body (parsed JSON when it is JSON)."""

    def __init__(self, status: int, reason: str, headers: Mapping[str, str], body: Any, url: str) -> None:
        super().__init__(f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.headers = dict(headers)
        self.body = body
        self.url = url


def root_cause(exc: BaseException) -> BaseException:
    seen: set[int] = set()
    current: BaseException = exc
    while id(current) not in seen:
        seen.add(id(current))
        nxt = current.__cause__ or current.__context__
        if nxt is None:
            break
        current = nxt
    return current


def connection_error(exc: BaseException, url: str) -> ProviderError:
    """ "Connection error: cannot reach https://host (reason)" from any connect failure."""
    cause = root_cause(exc)
    reason = getattr(cause, "strerror", None) or str(cause) or type(cause).__name__
    if isinstance(cause, OSError) and not getattr(cause, "strerror", None) and cause.args:
        reason = str(cause.args[-1])
    where = display_url(url)
    return ProviderError(f"Connection error: cannot reach {where} ({reason})", kind=ErrorKind.TRANSIENT, url=where)


REFUSED_RETRY_S = 0.5  # a local server refusing the connection is tried once more after this


def is_local_url(url: str) -> bool:
    """Whether ``url``'s host is this machine or a private network (where a refused
    connection means the server is not running, not that a service is overloaded)."""
    import ipaddress

    host = display_url(url).partition("://")[2].rsplit("@", 1)[-1]
    host = host[1:].split("]", 1)[0] if host.startswith("[") else host.rsplit(":", 1)[0]
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local or address.is_unspecified


def refused_locally(exc: BaseException, url: str) -> bool:
    """A connection to a local or private address that was refused: nothing listens there."""
    return isinstance(root_cause(exc), ConnectionRefusedError) and is_local_url(url)


def nothing_listening(url: str) -> ProviderError:
    """The one message for a local server that is not running (retried once already, so
    not again: the user sees it once, at once, instead of after 2 + 4 + 8 s of retries)."""
    where = display_url(url)
    return ProviderError(
        f"nothing is listening at {where} — is the server running?",
        kind=ErrorKind.TRANSIENT,
        url=where,
        retryable=False,
    )


def incomplete() -> ProviderError:
    return ProviderError(INCOMPLETE, kind=ErrorKind.TRANSIENT)


def malformed(exc: ValueError) -> ProviderError:
    return ProviderError(f"malformed event in the response stream: {exc}", kind=ErrorKind.TRANSIENT)


# --- the request and its stream ------------------------------------------------------------


@dataclass(slots=True)
class SseEvent:
    """One server-sent event: its ``event:`` name, if any, and its joined ``data:`` lines."""

    event: str | None
    data: str


_CHUNK = 64 * 1024


def _coalesce(pieces: list[bytes]) -> list[bytes]:
    """Small pieces joined into chunks of at least 64 KB; large ones passed as they are."""
    out: list[bytes] = []
    small: list[bytes] = []
    size = 0
    for piece in pieces:
        if len(piece) >= _CHUNK:
            if small:
                out.append(b"".join(small))
                small, size = [], 0
            out.append(piece)
            continue
        small.append(piece)
        size += len(piece)
        if size >= _CHUNK:
            out.append(b"".join(small))
            small, size = [], 0
    if small:
        out.append(b"".join(small))
    return out


def _content(body: bytes | list[bytes], headers: Mapping[str, str]) -> tuple[Any, dict[str, str]]:
    """What httpx sends: bytes as they are; pieces as a stream with their total length
    (so the request is not chunked: some servers refuse chunked request bodies)."""
    if isinstance(body, bytes):
        return body, dict(headers)
    chunks = _coalesce(body)
    if len(chunks) == 1:
        return chunks[0], dict(headers)

    async def stream() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    return stream(), {**headers, "content-length": str(sum(map(len, chunks)))}


async def post_sse(
    url: str,
    headers: Mapping[str, str],
    body: bytes | list[bytes],
    builder: MessageBuilder,
) -> AsyncIterator[SseEvent]:
    """POST ``body`` and yield the server-sent events of the answer.

    Raises :class:`HttpStatusError` for a non-2xx answer and :class:`ProviderError` for a
    connection that fails (before the answer: ``Connection error``; during it:
    :data:`INCOMPLETE`). Marks ``builder`` when the answer starts and on every event
    that is not a keep-alive.
    """
    import httpx

    client = CLIENTS.get(url)
    try:
        response = await _send(client, url, headers, body)
    except httpx.TransportError as exc:
        if not refused_locally(exc, url):
            raise connection_error(exc, url) from exc
        import asyncio

        await asyncio.sleep(REFUSED_RETRY_S)  # a server still starting gets one more try
        try:
            response = await _send(client, url, headers, body)
        except httpx.TransportError as again:
            if refused_locally(again, url):
                raise nothing_listening(url) from again
            raise connection_error(again, url) from again
    try:
        builder.note_response()
        if response.status_code >= 300:
            raise await _status_error(response, url)
        async for event in _events(response, builder):
            yield event
    finally:
        await response.aclose()


async def _send(
    client: httpx.AsyncClient, url: str, headers: Mapping[str, str], body: bytes | list[bytes]
) -> httpx.Response:
    content, all_headers = _content(body, headers)
    request = client.build_request("POST", url, content=content, headers=all_headers)
    return await client.send(request, stream=True)


async def _status_error(response: httpx.Response, url: str) -> HttpStatusError:
    import httpx

    try:
        raw = await response.aread()
    except httpx.TransportError:
        raw = b""
    text = raw[:_MAX_ERROR_BODY].decode("utf-8", "replace")
    location = response.headers.get("location")
    if 300 <= response.status_code < 400 and location:
        # Redirects are not followed (a streamed body cannot be sent twice): say where to.
        text = f"the server redirects to {location}; use that as the base URL"
    body: Any = text
    if text.strip():
        try:
            body = loads(text)
        except ValueError:
            body = text
    else:
        body = None
    return HttpStatusError(response.status_code, response.reason_phrase, response.headers, body, url)


async def _events(response: httpx.Response, builder: MessageBuilder) -> AsyncIterator[SseEvent]:
    import httpx

    buffer = b""
    event: str | None = None
    data: list[str] = []
    chunks = response.aiter_bytes()
    while True:
        try:
            chunk = await chunks.__anext__()
        except StopAsyncIteration:
            break
        except httpx.TransportError as exc:
            raise incomplete() from exc
        buffer += chunk
        if b"\n" not in chunk and b"\r" not in chunk:
            continue
        lines = buffer.splitlines(keepends=True)
        # An unfinished last line waits for the next chunk; so does one ending in "\r",
        # which may be the first half of "\r\n".
        buffer = b"" if lines[-1].endswith(b"\n") else lines.pop()
        for raw in lines:
            line = raw.rstrip(b"\r\n").decode("utf-8", "replace")
            if not line:
                if data or event is not None:
                    if data and event != "ping":
                        builder.note_activity()
                    if data:
                        yield SseEvent(event, "\n".join(data))
                    event, data = None, []
                continue
            if line[0] == ":":
                continue  # a comment: a keep-alive, not content
            name, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if name == "data":
                data.append(value)
            elif name == "event":
                event = value
    if buffer.strip():
        line = buffer.rstrip(b"\r\n").decode("utf-8", "replace")
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        builder.note_activity()
        yield SseEvent(event, "\n".join(data))
