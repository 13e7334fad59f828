"""OpenTelemetry traces of coding sessions, following the GenAI semantic conventions.

A :class:`SessionTracer` listens to one :class:`CodingSession`'s events - no lower layer
knows about tracing - and turns them into spans:

- ``invoke_agent heron``: one per run (``agent_start`` .. ``agent_end``), with the
  session id as ``gen_ai.conversation.id`` and the run's summed token usage;
- ``chat {model}``: one per model request, from when it is sent to its answer, with the
  request's and response's model, finish reason and ``gen_ai.usage.*`` tokens, and what
  it was for (``heron.request.kind``: ``turn``, or the side requests ``summary``,
  ``branch_summary``, ``flush``). Every request a session sends goes through its request
  path (:mod:`heron.coding.requests`), which tells the tracer; a request sent during a
  run is a child of the run (an automatic compaction's summary too), one outside a run
  (``/compact``, a branch summary) a span of its own;
- ``execute_tool {name}``: one per tool call, a child of the run.

Message content (the prompt, answers, tool arguments and results) is recorded only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is true or the caller opts in.

OpenTelemetry is imported only by :func:`get_tracer` and the tracer itself, so a heron
run without tracing loads none of it. Spans go to the OTLP/HTTP exporter when
``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._TRACES_ENDPOINT``) is set, or to stderr with
``--otel console``. See docs/tracing.md.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from heron import __version__
from heron.ai.types import StopReason, UserMessage
from heron.coding.secrets import redact

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

    from heron.ai.types import AssistantMessage, Context, Model
    from heron.coding.events import SessionEvent
    from heron.coding.requests import RequestEnd, RequestKind, RequestPath
    from heron.session.store import SessionStore

CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
TRACER_NAME = "heron"
_lock = threading.Lock()
_provider: Any = None


def missing_packages(mode: str) -> str | None:
    """What to install when the packages ``mode`` needs are not there (else None)."""
    import importlib.util

    needed = ["opentelemetry.sdk"] + (["opentelemetry.exporter.otlp.proto.http"] if mode == "otlp" else [])
    try:
        missing = [name for name in needed if importlib.util.find_spec(name) is None]
    except ModuleNotFoundError:  # the parent package itself is absent
        missing = needed
    if not missing:
        return None
    return f"tracing needs {', '.join(missing)}: pip install 'heron[otel]'"


def content_wanted() -> bool:
    return os.environ.get(CONTENT_ENV, "").strip().lower() in ("1", "true", "yes")


def get_tracer(mode: str) -> Tracer:
    """The process's tracer, setting up its provider on first use (once per process:
    a Ray actor sets up its own)."""
    global _provider
    with _lock:
        if _provider is None:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor

            provider = TracerProvider(
                resource=Resource.create({"service.name": "heron", "service.version": __version__})
            )
            if mode == "console":
                provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
            else:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

                provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
            _provider = provider
    return _provider.get_tracer(TRACER_NAME)  # type: ignore[no-any-return]


def use_provider(provider: Any) -> None:
    """Use ``provider`` (tests: one with an in-memory exporter) instead of setting one up."""
    global _provider
    with _lock:
        _provider = provider


def flush_tracing() -> None:
    """Send every finished span before the process ends (the batch exporter buffers)."""
    if _provider is not None:
        _provider.force_flush()


class TracedSession(Protocol):
    """What a tracer uses of its session: its events (a run's span), its request path (a
    span per request, as an observer), the model and the session id the spans name."""

    @property
    def model(self) -> Model: ...

    @property
    def store(self) -> SessionStore: ...

    @property
    def requests(self) -> RequestPath: ...

    def subscribe(self, listener: Callable[[SessionEvent], None]) -> Callable[[], None]: ...


class SessionTracer:
    """The spans of one session's runs; :meth:`close` ends any still open."""

    def __init__(self, session: TracedSession, tracer: Tracer, *, capture_content: bool | None = None) -> None:
        self.session = session
        self.tracer = tracer
        self.capture = content_wanted() if capture_content is None else capture_content
        self._run: Span | None = None
        self._chats: list[Span] = []
        self._tools: dict[str, Span] = {}
        self._usage = [0, 0]
        self._unsubscribe = session.subscribe(self._on_event)
        session.requests.observers.append(self)

    def _base(self, operation: str) -> dict[str, Any]:
        model = self.session.model
        return {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": model.provider,
            "gen_ai.request.model": model.id,
            "gen_ai.conversation.id": self.session.store.session_id,
        }

    def _child(self, name: str, attributes: dict[str, Any], client: bool = False) -> Span:
        from opentelemetry import trace

        context = trace.set_span_in_context(self._run) if self._run is not None else None
        kind = trace.SpanKind.CLIENT if client else trace.SpanKind.INTERNAL
        return self.tracer.start_span(name, context=context, kind=kind, attributes=attributes)

    def _on_event(self, event: Any) -> None:
        handler = getattr(self, f"_on_{getattr(event, 'type', '')}", None)
        if handler is not None:
            handler(event)

    def _on_agent_start(self, event: Any) -> None:
        attributes = self._base("invoke_agent") | {"gen_ai.agent.name": "heron"}
        self._usage = [0, 0]
        self._run = self.tracer.start_span("invoke_agent heron", attributes=attributes)

    def request_started(self, kind: RequestKind, model: Model, context: Context) -> RequestEnd:
        """A request is being sent (the request path calls this): its ``chat`` span."""
        attributes = self._base("chat") | {"gen_ai.request.model": model.id, "heron.request.kind": kind}
        span = self._child(f"chat {model.id}", attributes, client=True)
        self._chats.append(span)

        def ended(message: AssistantMessage) -> None:
            if span in self._chats:
                self._chats.remove(span)
                self._end_chat(span, message)

        return ended

    def _on_message_end(self, event: Any) -> None:
        message = event.message
        if isinstance(message, UserMessage) and self.capture and self._run is not None:
            self._run.set_attribute("gen_ai.input.messages", redact(json.dumps([_message_json(message)])))

    def _end_chat(self, span: Span, message: AssistantMessage) -> None:
        usage = message.usage
        if self._run is not None:  # a request sent during a run counts in the run's usage
            self._usage[0] += usage.input + usage.cache_read + usage.cache_write
            self._usage[1] += usage.output
        span.set_attributes(
            {
                "gen_ai.response.model": message.model,
                "gen_ai.response.finish_reasons": [str(getattr(message.stop_reason, "value", message.stop_reason))],
                "gen_ai.usage.input_tokens": usage.input + usage.cache_read + usage.cache_write,
                "gen_ai.usage.output_tokens": usage.output,
            }
        )
        if message.response_id:
            span.set_attribute("gen_ai.response.id", message.response_id)
        if self.capture:
            span.set_attribute("gen_ai.output.messages", redact(json.dumps([_message_json(message)])))
        if message.stop_reason == StopReason.ERROR:
            _fail(span, message.error_kind or "error", message.error_message or "the request failed")
        span.end()

    def _on_tool_execution_start(self, event: Any) -> None:
        attributes = self._base("execute_tool") | {
            "gen_ai.tool.name": event.tool_name,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": event.tool_call_id,
        }
        if self.capture:
            attributes["gen_ai.tool.call.arguments"] = redact(json.dumps(event.args, default=str))
        self._tools[event.tool_call_id] = self._child(f"execute_tool {event.tool_name}", attributes)

    def _on_tool_execution_end(self, event: Any) -> None:
        span = self._tools.pop(event.tool_call_id, None)
        if span is None:
            return
        if self.capture:
            text = "".join(getattr(block, "text", "") for block in event.result.content)
            span.set_attribute("gen_ai.tool.call.result", redact(text))
        if event.is_error:
            _fail(span, "tool_error", "the tool reported an error")
        span.end()

    def _on_agent_end(self, event: Any) -> None:
        for span in [*self._tools.values(), *self._chats]:
            span.end()
        self._tools, self._chats = {}, []
        if self._run is not None:
            self._run.set_attributes(
                {"gen_ai.usage.input_tokens": self._usage[0], "gen_ai.usage.output_tokens": self._usage[1]}
            )
            self._run.end()
            self._run = None

    def close(self) -> None:
        self._on_agent_end(None)
        self._unsubscribe()
        if self in self.session.requests.observers:
            self.session.requests.observers.remove(self)


def _message_json(message: Any) -> dict[str, Any]:
    text = (
        message.content
        if isinstance(message.content, str)
        else "".join(getattr(block, "text", "") for block in message.content)
    )
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    for block in message.content if not isinstance(message.content, str) else []:
        if getattr(block, "type", "") == "toolCall":
            parts.append({"type": "tool_call", "id": block.id, "name": block.name, "arguments": block.arguments})
    return {"role": message.role, "parts": parts}


def _fail(span: Span, kind: str, message: str) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", kind)
    span.set_status(Status(StatusCode.ERROR, redact(message)))  # a server's error may quote the key
