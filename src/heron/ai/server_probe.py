"""One round of questions to a local server, under one overall deadline.

Before a session's first request heron asks a local server a few things - its window
(:mod:`heron.ai.server_window`), its tokenizer and chat template
(:mod:`heron.ai.server_tokens`). A local server answers each in milliseconds, but one that
never completes an answer must not hold heron before its first request: a server that
accepts the connection and says nothing, or one that trickles a byte every half second.
Read timeouts do not bound the second (every byte starts them again), so a round of
probes has a deadline for everything it sends - connection, headers and body - and an
exchange still open at its share of it is cancelled (:meth:`Prober.ask`).

Each answer says what the caller may remember across processes (``Answer.kind``):

- ``ok``: a 200 with a JSON body;
- ``missing``: the server has no such endpoint - any other status but 200 (404, 405,
  501...), or a 200 whose body is not JSON (a web UI answering every path) - asked again
  only when the cache expires;
- ``unknown``: no answer in time, a 5xx but 501 (llama.cpp answers 503 while it loads its
  model), 408, 429, a dropped connection - worth asking again soon.

A refused connection raises :class:`NothingListening` at once: nothing listens at that
address, and the request that follows says so itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from heron.ai.providers.http import display_url, root_cause

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")
AnswerKind = Literal["ok", "missing", "unknown"]

_RETRYABLE_4XX = frozenset({408, 429})


class NothingListening(Exception):
    """The server refused the connection: no process listens at that address."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What one probe learnt: ``kind`` (module docstring) and, when ``ok``, the value."""

    kind: AnswerKind
    value: Any = None

    def then(self, parse: Callable[[Any], Any]) -> Answer:
        """This answer with its value parsed; an ``ok`` whose value ``parse`` cannot use
        (None) is ``missing``: the server has the path but does not speak this format."""
        if self.kind != "ok":
            return self
        parsed = parse(self.value)
        return Answer("ok", parsed) if parsed is not None else Answer("missing")


UNKNOWN = Answer("unknown")


def classify(status: int, body: bytes) -> Answer:
    """An HTTP answer as an :class:`Answer`."""
    if (status >= 500 and status != 501) or status in _RETRYABLE_4XX:
        return UNKNOWN
    if status != 200:
        return Answer("missing")

    try:
        return Answer("ok", json.loads(body))
    except ValueError:
        return Answer("missing")


@dataclass
class Prober:
    """Asks one server, each exchange bounded by ``per_request`` seconds and all of them
    by the round's ``deadline`` (a :func:`time.monotonic` instant)."""

    client: httpx.AsyncClient
    deadline: float
    per_request: float
    server: str  # the server, for messages (``scheme://host:port``)
    unanswered: list[str] = field(default_factory=list)  # the paths whose answer was ``unknown``

    async def ask(self, method: str, url: str, body: Any = None) -> Answer:
        """``method url`` with a JSON ``body``, as an :class:`Answer` (``unknown`` without a
        request once the deadline has passed); an ``unknown`` one's path is noted."""
        answer = await self._exchange(method, url, body)
        if answer.kind == "unknown":
            self.unanswered.append("/" + url.split("://", 1)[-1].partition("/")[2])
        return answer

    async def _exchange(self, method: str, url: str, body: Any) -> Answer:
        import httpx

        left = min(self.per_request, self.deadline - time.monotonic())
        if left <= 0:
            return UNKNOWN
        try:
            async with asyncio.timeout(left):
                response = await self.client.request(method, url, json=body)
        except TimeoutError:
            return UNKNOWN
        except httpx.ConnectError as exc:
            if isinstance(root_cause(exc), ConnectionRefusedError):
                raise NothingListening(self.server) from exc
            return UNKNOWN
        except httpx.HTTPError:
            return UNKNOWN
        return classify(response.status_code, response.content)


@contextlib.asynccontextmanager
async def probing(base_url: str, api_key: str | None, deadline_s: float, per_request_s: float) -> AsyncIterator[Prober]:
    """A :class:`Prober` of the server at ``base_url`` for ``deadline_s`` seconds from now;
    its connections are closed when the block ends."""
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    # httpx's own timeouts only back up the deadline (each is reset by every byte read)
    timeout = httpx.Timeout(per_request_s)
    async with httpx.AsyncClient(timeout=timeout, headers=headers, follow_redirects=False, verify=False) as client:
        yield Prober(client, time.monotonic() + deadline_s, per_request_s, display_url(base_url))


def run_round(
    base_url: str,
    api_key: str | None,
    deadline_s: float,
    per_request_s: float,
    work: Callable[[Prober], Awaitable[T]],
) -> T:
    """``work`` with a :class:`Prober`, from synchronous code: on this thread's own event
    loop, or - when this thread runs one already (an rpc command switching models) - on a
    thread of its own, waited for. Either way it ends by the deadline."""

    async def round_() -> T:
        async with probing(base_url, api_key, deadline_s, per_request_s) as prober:
            return await work(prober)

    try:
        asyncio.get_running_loop()
        running = True
    except RuntimeError:
        running = False
    if not running:  # not run inside the ``except``: its error would become every failure's context
        return asyncio.run(round_())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="heron-probe") as pool:
        return pool.submit(lambda: asyncio.run(round_())).result()
