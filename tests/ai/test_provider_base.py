"""The adapter base on its own: a provider of a small made-up wire API, written the way
docs/ai.md tells users to write one (subclass ``HttpProvider``, give it a body, auth,
error bodies and a ``StreamTranslator``), against a local server. What the base promises
every adapter is checked here once: the body built from cached segments equals the
reference, the headers' order of precedence, ``on_payload``, events after the terminal
one ignored, ``[DONE]``, and the shared failures (incomplete stream, malformed JSON, an
HTTP error described by the adapter)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from heron.ai import (
    NO_RETRY,
    AssistantMessage,
    Context,
    ErrorKind,
    Model,
    StopReason,
    StreamOptions,
    TextContent,
    UserMessage,
)
from heron.ai.builder import MessageBuilder
from heron.ai.events import AssistantEvent
from heron.ai.overflow import ProviderError
from heron.ai.providers import http
from heron.ai.providers.base import JSON, HttpProvider, StreamTranslator
from heron.ai.stream import open_stream
from heron.ai.types import Message
from tests.support.http_server import LocalServer, Reply, json_reply

API = "toy-chat"


class ToyTranslator(StreamTranslator):
    """``{"text": ...}`` deltas, then ``{"stop": true, "tokens": n}``."""

    def event(self, event: Any, name: str | None) -> list[AssistantEvent]:
        if "problem" in event:
            raise ProviderError(f"toy problem: {event['problem']}")
        builder = self.builder
        if event.get("stop"):
            self.finished = True
            builder.stop_reason = StopReason.STOP
            builder.usage.output = int(event.get("tokens") or 0)
            return [builder.end("text")] if builder.is_open("text") else []
        events: list[AssistantEvent] = []
        if not builder.is_open("text"):
            events.append(builder.start_text("text"))
        events.append(builder.text_delta("text", str(event["text"])))
        return events


class ToyProvider(HttpProvider):
    api = API
    default_base_url = "https://toy.invalid"
    path = "/v1/talk"
    array_key = "turns"

    def build_request(self, model: Model, context: Context, options: StreamOptions) -> JSON:
        lead = [{"said": context.system_prompt, "by": "system"}] if context.system_prompt else []
        return {"model": model.id, "turns": lead + self.convert(context.messages, model), "stream": True}

    def convert(self, messages: list[Message], model: Model) -> list[JSON]:
        out: list[JSON] = []
        for message in messages:
            if isinstance(message, UserMessage):
                out.append({"said": message.content, "by": "user"})
            elif isinstance(message, AssistantMessage):
                out.append({"said": message.text(), "by": "model"})
        return out

    def auth_headers(self, model: Model, options: StreamOptions) -> dict[str, str]:
        return {"x-toy-key": options.api_key or "none", "x-toy-client": "heron"}

    def translator(self, model: Model, context: Context, builder: MessageBuilder) -> StreamTranslator:
        return ToyTranslator(builder)

    def status_error(self, exc: http.HttpStatusError) -> ProviderError:
        body = exc.body if isinstance(exc.body, dict) else {}
        return ProviderError(f"{exc.status} toy says: {body.get('why', exc.reason)}", status=exc.status)


def sse(*events: Any) -> bytes:
    return b"".join(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n".encode() for e in events)


@pytest.fixture
def server() -> Iterator[LocalServer]:
    local = LocalServer()
    yield local
    local.close()


def toy_model(server: LocalServer) -> Model:
    return Model(id="toy-1", api=API, provider="toy", base_url=server.url, headers={"x-toy-client": "model"})


def history(n: int) -> list[Message]:
    messages: list[Message] = []
    for i in range(n):
        messages.append(UserMessage(content=f"question {i}"))
        messages.append(AssistantMessage(api=API, provider="toy", model="toy-1", content=[TextContent(text=f"a{i}")]))
    messages.append(UserMessage(content="last"))
    return messages


async def run(provider: ToyProvider, model: Model, context: Context, **options: Any) -> AssistantMessage:
    opts = StreamOptions(retry=NO_RETRY, api_key="k1", **options)
    return await open_stream(provider, model, context, opts).result()


async def test_request_body_headers_and_payload(server: LocalServer) -> None:
    provider = ToyProvider()
    model = toy_model(server)
    seen: list[Any] = []
    for n in (1, 3):  # a second request reuses the first one's segments
        server.queue(Reply(body=sse({"text": "hi"}, {"stop": True, "tokens": 2})))
        context = Context(system_prompt="be brief", messages=history(n))
        message = await run(provider, model, context, headers={"x-extra": "1"}, on_payload=seen.append)
        assert message.stop_reason is StopReason.STOP, message.error_message
        assert message.text() == "hi"
        assert message.usage.output == 2
        request = server.requests[-1]
        reference = provider.build_request(model, context, StreamOptions())
        assert request.path == "/v1/talk"
        assert request.json() == reference  # cached segments, same body
        assert seen[-1] == reference
        assert request.headers["content-type"] == "application/json"
        assert request.headers["accept"] == "text/event-stream"
        assert request.headers["x-toy-key"] == "k1"
        assert request.headers["x-toy-client"] == "model"  # the model's headers override the adapter's
        assert request.headers["x-extra"] == "1"
    assert [turn["by"] for turn in server.requests[-1].json()["turns"]][:2] == ["system", "user"]


async def test_events_after_the_terminal_one_are_ignored(server: LocalServer) -> None:
    server.queue(Reply(body=sse({"text": "a"}, {"stop": True}, {"text": "late"}, {"problem": "late"}, "[DONE]")))
    message = await run(ToyProvider(), toy_model(server), Context(messages=history(0)))
    assert message.stop_reason is StopReason.STOP
    assert message.text() == "a"


async def test_a_stream_without_its_terminal_event_is_incomplete(server: LocalServer) -> None:
    server.queue(Reply(body=sse({"text": "partial"}, "[DONE]")))  # [DONE] means nothing to this API
    message = await run(ToyProvider(), toy_model(server), Context(messages=history(0)))
    assert message.stop_reason is StopReason.ERROR
    assert message.error_message == http.INCOMPLETE
    assert message.error_kind == ErrorKind.TRANSIENT
    assert message.text() == "partial"  # what arrived is kept


async def test_malformed_json_and_in_stream_errors(server: LocalServer) -> None:
    server.queue(Reply(body=sse("{not json")), Reply(body=sse({"text": "x"}, {"problem": "overheated"})))
    malformed = await run(ToyProvider(), toy_model(server), Context(messages=history(0)))
    assert malformed.stop_reason is StopReason.ERROR
    assert malformed.error_message is not None
    assert malformed.error_message.startswith("malformed event in the response stream")
    assert malformed.error_kind == ErrorKind.TRANSIENT
    reported = await run(ToyProvider(), toy_model(server), Context(messages=history(0)))
    assert reported.error_message == "toy problem: overheated"


async def test_http_errors_are_described_by_the_adapter(server: LocalServer) -> None:
    server.queue(json_reply(403, {"why": "no toys today"}))
    message = await run(ToyProvider(), toy_model(server), Context(messages=history(0)))
    assert message.stop_reason is StopReason.ERROR
    assert message.error_message == "403 toy says: no toys today"
    assert ToyProvider().describe_error(RuntimeError("not http")) is None


def test_the_base_url_comes_from_the_model_then_the_variable_then_the_vendor(monkeypatch: pytest.MonkeyPatch) -> None:
    class WithVariable(ToyProvider):
        base_url_env = "TOY_BASE_URL"

    bare = Model(id="toy-1", api=API, provider="toy")
    monkeypatch.delenv("TOY_BASE_URL", raising=False)
    assert WithVariable().url(bare) == "https://toy.invalid/v1/talk"
    monkeypatch.setenv("TOY_BASE_URL", "http://proxy.invalid/")
    assert WithVariable().url(bare) == "http://proxy.invalid/v1/talk"
    own = Model(id="toy-1", api=API, provider="toy", base_url="http://own.invalid")
    assert WithVariable().url(own) == "http://own.invalid/v1/talk"
