"""One shape for the HTTP providers: an adapter base and a stream-translator protocol.

The four wire APIs (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses,
Gemini) are each one JSON ``POST`` answered by server-sent events, and their adapters
did the same things around what really differs. :class:`HttpProvider` does those things
once:

- the request body from cached history segments (:mod:`heron.ai.providers.wire`): the
  request of an empty history is the head, what it puts in the history array goes first,
  and each segment is adapted to the target (:func:`heron.ai.adapt.adapt_messages` with
  the adapter's tool-id rule) and converted once;
- ``on_payload``, the URL (``model.base_url``, else the adapter's variable, else the
  vendor's), the headers (JSON, SSE, the adapter's auth, then the model's and the
  request's own), the HTTP call and its failures (:mod:`heron.ai.providers.http`);
- the SSE loop: each event decoded as JSON (malformed JSON is one transient failure for
  every provider), events after the response finished read but ignored (a fully read body
  lets the connection go back to the pool), ``data: [DONE]`` handed to the translator;
- ``describe_error`` for an HTTP error answer, and the usage accounting rule.

An adapter keeps only what differs: its request body (``build_request`` and ``convert``),
its auth, its error bodies (``status_error``) and a :class:`StreamTranslator` mapping its
stream events onto the :class:`~heron.ai.builder.MessageBuilder`. The stream contract
itself (start, one terminal event, abort, retry, wait bounds) is :mod:`heron.ai.stream`.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Hashable
from typing import Any

from heron.ai.adapt import adapt_messages
from heron.ai.builder import MessageBuilder
from heron.ai.events import AssistantEvent
from heron.ai.options import StreamOptions
from heron.ai.overflow import ProviderError
from heron.ai.providers import http
from heron.ai.providers.wire import History, Segment, WireCache, array_pieces, body_pieces, dumps
from heron.ai.types import Context, Message, Model

JSON = dict[str, Any]

# What every adapter sends in place of an image to a model that does not take images.
IMAGE_OMITTED = "(image omitted: this model does not accept images)"


class StreamTranslator:
    """The protocol every adapter's stream side follows: one instance per response, fed
    each decoded event in order, then told the body ended.

    ``event`` returns the builder's events for one wire event and raises a
    :class:`ProviderError` for an error the server reports inside the stream. Once
    ``finished`` is set (the API's terminal event), later events are not passed on.
    ``end`` settles what only the end tells (stop reason, usage) and raises
    :func:`http.incomplete` when the body stopped before the response was complete.
    """

    def __init__(self, builder: MessageBuilder) -> None:
        self.builder = builder
        self.finished = False

    def event(self, event: Any, name: str | None) -> list[AssistantEvent]:
        """The builder events of one decoded event (``name``: its SSE ``event:`` field)."""
        raise NotImplementedError

    def done_marker(self) -> None:
        """``data: [DONE]`` (the OpenAI-style end of a stream): nothing by default."""

    def end(self) -> list[AssistantEvent]:
        if not self.finished:
            raise http.incomplete()
        return []


def set_usage(
    builder: MessageBuilder,
    *,
    input: int,
    output: int,
    cache_read: int = 0,
    cache_write: int = 0,
    total: int | None = None,
) -> None:
    """Usage as heron counts it: ``input`` excludes the cached tokens (read or written),
    ``output`` includes reasoning; the total is the server's when it reports one."""
    usage = builder.usage
    usage.input = max(0, input)
    usage.output = output
    usage.cache_read = cache_read
    usage.cache_write = cache_write
    usage.total_tokens = total or usage.input + usage.output + usage.cache_read + usage.cache_write


class HttpProvider:
    """What the four HTTP adapters share (see the module docstring). Subclasses set the
    class attributes and implement ``build_request``, ``convert``, ``auth_headers``,
    ``translator`` and ``status_error``."""

    api: str
    default_base_url: str
    path = ""  # the endpoint, joined to the base URL
    base_url_env: str | None = None  # a variable that overrides the vendor's base URL
    array_key = "messages"  # the request's member that carries the history
    json_object: type[dict[str, Any]] = http.Obj  # how the stream's JSON objects read

    def __init__(self) -> None:
        self._wire = WireCache()

    # --- what each adapter says ---------------------------------------------------

    def build_request(self, model: Model, context: Context, options: StreamOptions) -> JSON:
        """The whole request body: the readable reference of what is sent."""
        raise NotImplementedError

    def convert(self, messages: list[Message], model: Model) -> list[JSON]:
        """Wire items of already adapted ``messages`` (one history segment)."""
        raise NotImplementedError

    def tool_id(self, call_id: str) -> str:
        """The API's rule for tool-call ids (another model's ids are rewritten by it)."""
        return call_id

    def clean(self, segments: list[Segment]) -> bool:
        """Whether no wire turn spans two of ``segments`` (they may be joined as they are)."""
        return True

    def history_array(self, history: History, lead: list[JSON], options: StreamOptions) -> list[bytes]:
        """The history array as pieces: ``lead`` (what the request of an empty history
        holds there, e.g. a system message) then the cached segments."""
        return array_pieces(history.wires([dumps(item).encode() for item in lead]))

    def auth_headers(self, model: Model, options: StreamOptions) -> dict[str, str]:
        raise NotImplementedError

    def translator(self, model: Model, context: Context, builder: MessageBuilder) -> StreamTranslator:
        raise NotImplementedError

    def status_error(self, exc: http.HttpStatusError) -> ProviderError:
        """An HTTP error answer (its status, headers and body) as a :class:`ProviderError`."""
        raise NotImplementedError

    # --- the request ----------------------------------------------------------------

    def base_url(self, model: Model) -> str:
        env = os.environ.get(self.base_url_env) if self.base_url_env else None
        return model.base_url or env or self.default_base_url

    def url(self, model: Model) -> str:
        return http.join_url(self.base_url(model), self.path)

    def headers(self, model: Model, options: StreamOptions) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        headers.update(self.auth_headers(model, options))
        headers.update(model.headers or {})
        headers.update(options.headers or {})
        return headers

    def target(self, model: Model) -> Hashable:
        """What a converted segment depends on besides its messages."""
        return (model.api, model.provider, model.id, model.supports_images())

    def encode_request(self, model: Model, context: Context, options: StreamOptions) -> bytes:
        """:meth:`build_request` as the bytes sent, built from cached segments."""
        return b"".join(self.encode_pieces(model, context, options))

    def encode_pieces(self, model: Model, context: Context, options: StreamOptions) -> list[bytes]:
        """The request body as a few pieces (joined blocks of the history, its newest part)."""
        head = self.build_request(model, Context(system_prompt=context.system_prompt, tools=context.tools), options)
        lead = head.pop(self.array_key, [])

        def convert(part: list[Message]) -> list[JSON]:
            return self.convert(adapt_messages(part, model, self.tool_id), model)

        history = self._wire.history(self.target(model), context.messages, convert, self.clean)
        return body_pieces(head, self.array_key, self.history_array(history, lead, options))

    def payload(self, model: Model, body: list[bytes]) -> Any:
        """What ``on_payload`` sees: the body as sent."""
        return json.loads(b"".join(body))

    # --- the stream -----------------------------------------------------------------

    async def stream(
        self, model: Model, context: Context, options: StreamOptions, builder: MessageBuilder
    ) -> AsyncIterator[AssistantEvent]:
        body = self.encode_pieces(model, context, options)
        if options.on_payload is not None:
            options.on_payload(self.payload(model, body))
        translator = self.translator(model, context, builder)
        async for sse in http.post_sse(self.url(model), self.headers(model, options), body, builder):
            if translator.finished:
                continue  # read on to the end of the body, so the connection is reusable
            if sse.data.strip() == "[DONE]":
                translator.done_marker()
                continue
            try:
                event = json.loads(sse.data, object_hook=self.json_object)
            except ValueError as exc:
                raise http.malformed(exc) from exc
            if isinstance(event, dict):
                reports = builder.progress_reports
                outs = translator.event(event, sse.event)
                if builder.progress_reports == reports:
                    builder.note_answering()  # not a progress report: the server has read the prompt
                for out in outs:
                    yield out
        for out in translator.end():
            yield out

    def describe_error(self, exc: BaseException) -> ProviderError | None:
        if isinstance(exc, http.HttpStatusError):
            return self.status_error(exc)
        return None

    async def aclose(self) -> None:
        """Close the HTTP clients (and their connections) of the running event loop."""
        await http.CLIENTS.aclose()
