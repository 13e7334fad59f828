"""OpenTelemetry spans of a session, checked with the SDK's in-memory exporter, and the
promise that a run without tracing imports none of OpenTelemetry."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.ai.models import ModelRegistry
from heron.coding.batch.runner import Job, run_task
from heron.coding.batch.tasks import BatchTask
from heron.coding.model_choice import resolve_model
from heron.coding.settings import Settings
from tests.batch.support import MODEL, ScriptedServer, batch_env, heron_command, make_project

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from heron.coding import tracing


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer()
    yield scripted
    scripted.close()


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracing.use_provider(provider)
    yield memory
    tracing.use_provider(None)


async def traced_run(tmp_path: Path, server: ScriptedServer, content: bool) -> str:
    """One task through the batch runner with tracing on; the session's id."""
    project = make_project(tmp_path)
    resolved = resolve_model(Settings(), ModelRegistry.load(), MODEL, server.url, None)
    home = tmp_path / "home"
    home.mkdir()
    job = Job(
        task=BatchTask(id="t1", prompt="trace me", cwd=project),
        model=resolved.model,
        api_key=resolved.api_key,
        out_dir=tmp_path / "out",
        home=home,
        tracing="console",
        trace_content=content,
    )
    result = await run_task(job)
    assert result.status == "ok", result.error
    header = json.loads(Path(str(result.session)).read_text().splitlines()[0])
    return str(header["id"])


def by_name(spans: Any) -> dict[str, list[ReadableSpan]]:
    named: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        named.setdefault(span.name, []).append(span)
    return named


async def test_a_run_is_an_invoke_agent_span_with_chat_and_tool_children(
    tmp_path: Path, server: ScriptedServer, exporter: InMemorySpanExporter
) -> None:
    session_id = await traced_run(tmp_path, server, content=False)
    spans = by_name(exporter.get_finished_spans())
    assert sorted(spans) == ["chat test-model", "execute_tool read", "invoke_agent heron"]
    (run,) = spans["invoke_agent heron"]
    chats = sorted(spans["chat test-model"], key=lambda s: s.start_time or 0)
    (tool,) = spans["execute_tool read"]
    assert len(chats) == 2
    assert run.parent is None
    for child in (*chats, tool):
        assert child.parent is not None and child.parent.span_id == run.context.span_id
        assert child.context.trace_id == run.context.trace_id
        assert child.attributes is not None and child.attributes["gen_ai.conversation.id"] == session_id
    assert run.attributes is not None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "heron"
    assert run.attributes["gen_ai.conversation.id"] == session_id
    assert run.attributes["gen_ai.usage.input_tokens"] == 90 and run.attributes["gen_ai.usage.output_tokens"] == 13
    first, second = (dict(c.attributes or {}) for c in chats)
    assert first["gen_ai.operation.name"] == "chat" and first["gen_ai.request.model"] == MODEL
    assert first["gen_ai.usage.input_tokens"] == 40 and first["gen_ai.usage.output_tokens"] == 8
    assert first["gen_ai.response.finish_reasons"] == ("toolUse",)
    assert second["gen_ai.usage.input_tokens"] == 50 and second["gen_ai.response.finish_reasons"] == ("stop",)
    tool_attributes = dict(tool.attributes or {})
    assert tool_attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool_attributes["gen_ai.tool.name"] == "read" and tool_attributes["gen_ai.tool.call.id"]
    # chat spans end before the tool runs; the tool span lies inside the run.
    assert (chats[0].end_time or 0) <= (tool.start_time or 0) <= (tool.end_time or 0) <= (run.end_time or 0)
    for span in (run, *chats, tool):  # no content without the opt-in
        assert not any(
            key in (span.attributes or {})
            for key in (
                "gen_ai.input.messages",
                "gen_ai.output.messages",
                "gen_ai.tool.call.arguments",
                "gen_ai.tool.call.result",
            )
        )


async def test_content_is_recorded_only_when_opted_in(
    tmp_path: Path, server: ScriptedServer, exporter: InMemorySpanExporter
) -> None:
    await traced_run(tmp_path, server, content=True)
    spans = by_name(exporter.get_finished_spans())
    (run,) = spans["invoke_agent heron"]
    assert "trace me" in str((run.attributes or {})["gen_ai.input.messages"])
    answer = max(spans["chat test-model"], key=lambda s: s.start_time or 0)
    assert "done: trace me" in str((answer.attributes or {})["gen_ai.output.messages"])
    (tool,) = spans["execute_tool read"]
    assert json.loads(str((tool.attributes or {})["gen_ai.tool.call.arguments"])) == {"path": "task.txt"}
    assert "the task file" in str((tool.attributes or {})["gen_ai.tool.call.result"])


def test_tracing_is_off_and_not_imported_by_default(tmp_path: Path, server: ScriptedServer) -> None:
    project = make_project(tmp_path)
    code = (
        "import sys\nfrom heron.cli.main import main\n"
        f"code = main(['-p', 'hello', '--base-url', {server.url!r}, '--model', {MODEL!r}])\n"
        "print('LOADED', sorted(m for m in sys.modules if m.startswith('opentelemetry')), code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=project,
        env=batch_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "done: hello" in done.stdout and "LOADED [] 0" in done.stdout


def test_otel_console_prints_the_spans_on_stderr(tmp_path: Path, server: ScriptedServer) -> None:
    project = make_project(tmp_path)
    done = subprocess.run(
        [*heron_command(), "-p", "hello", "--base-url", server.url, "--model", MODEL, "--otel", "console"],
        cwd=project,
        env=batch_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done: hello\n"  # stdout keeps only the answer
    for name in ('"invoke_agent heron"', '"chat test-model"', '"execute_tool read"', '"gen_ai.conversation.id"'):
        assert name in done.stderr


def test_missing_packages_are_named_with_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    assert tracing.missing_packages("otlp") is None  # installed here
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name.startswith("opentelemetry") else real(name, *a)
    )
    assert tracing.missing_packages("console") == "tracing needs opentelemetry.sdk: pip install 'heron[otel]'"
    assert "opentelemetry.exporter.otlp.proto.http" in str(tracing.missing_packages("otlp"))
