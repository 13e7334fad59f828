"""The redactor and each write boundary it guards, one by one (the end-to-end proof is
tests/cli/test_secrets_e2e.py). Every test uses a fresh random key: the process-wide
redactor only ever learns values, so no test can disturb another's text."""

from __future__ import annotations

import json
import logging
import secrets
from pathlib import Path
from typing import Any

import pytest

from heron.ai.providers.faux import FauxProvider, error, text, tool_call
from heron.ai.types import AssistantMessage, TextContent, ThinkingContent, ToolCall, UserMessage
from heron.coding.runtime import CodingSession
from heron.coding.secrets import (
    REDACTOR,
    RedactingFilter,
    Redactor,
    SecretPolicy,
    install_log_redaction,
    known_secret_values,
    models_json_literals,
    redact,
    redact_message,
)
from heron.coding.settings import settings_from_dict
from heron.context.tool_output.spill import CappedSpill, set_scrub
from heron.session.entries import CustomEntry
from heron.session.store import SessionStore


def new_key(prefix: str = "sk-unit-") -> str:
    return prefix + secrets.token_hex(12)


def test_short_values_are_never_redacted_and_json_escaped_forms_are() -> None:
    r = Redactor()
    r.add(["short", None, "", "        ", 'pa"ss\\word-1234'])
    assert r.text("short and sweet") == "short and sweet"
    assert r.text('x pa"ss\\word-1234 y') == "x [redacted] y"
    line = json.dumps({"text": 'x pa"ss\\word-1234 y'})
    assert 'pa\\"ss' in line and r.text(line) == json.dumps({"text": "x [redacted] y"})
    assert r.data(b'a pa"ss\\word-1234') == b"a [redacted]"
    assert r.deep({"a": ['pa"ss\\word-1234', 3], "b": None}) == {"a": ["[redacted]", 3], "b": None}
    # the longest form a streamed writer must hold back: the value as hex (encoded forms are redacted too)
    assert r.longest == len(b'pa"ss\\word-1234'.hex())


def test_known_values_come_from_the_policy_the_environment_and_models_json(tmp_path: Path) -> None:
    (tmp_path / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "a": {"apiKey": "literal-key-123456", "models": []},
                    "b": {"apiKey": "SOME_VAR_NAME", "models": []},
                    "c": {"apiKey": "!pass show key", "models": []},
                }
            }
        )
    )
    assert models_json_literals(tmp_path / "models.json") == {"literal-key-123456"}
    assert models_json_literals(tmp_path / "missing.json") == set()
    env = {
        "SOME_VAR_NAME": "value-of-var-1",
        "OPENAI_API_KEY": "openai-val-1",
        "GITHUB_TOKEN": "ghp-kept-by-user",
        "HOME": "/home/someone-long",
    }
    policy = SecretPolicy.for_heron(tmp_path, ["GITHUB_TOKEN"], ["the-key-in-use"])
    values = known_secret_values(policy, tmp_path, env)
    assert values == {"the-key-in-use", "value-of-var-1", "openai-val-1", "literal-key-123456"}


def test_a_spill_never_holds_a_key_even_split_between_writes(tmp_path: Path) -> None:
    key = new_key()
    REDACTOR.add([key])
    set_scrub(REDACTOR)
    data = ("out " + key + "\n").encode() * 50
    spill = CappedSpill(tmp_path / "one.txt")
    for i in range(0, len(data), 7):  # every split point a key can have
        spill.write(data[i : i + 7])
    spill.close()
    assert (tmp_path / "one.txt").read_bytes() == b"out [redacted]\n" * 50
    # a capped spill: head, gap marker, tail, none with the key
    capped = CappedSpill(tmp_path / "two.txt", max_bytes=400)
    for i in range(0, len(data), 5):
        capped.write(data[i : i + 5])
    capped.close()
    kept = (tmp_path / "two.txt").read_bytes()
    assert capped.capped and key.encode() not in kept and b"[redacted]" in kept


def test_the_session_file_never_holds_a_key(tmp_path: Path) -> None:
    key = new_key()
    REDACTOR.add([key])
    store = SessionStore.create(tmp_path, home=tmp_path)
    store.scrub = redact
    store.append_custom("note", {"said": f"key {key}"})  # buffered: written with the first assistant message
    store.append_message(AssistantMessage(api="x", provider="p", model="m", content=[TextContent(text=key)]))
    store.append_custom("note", {"said": f"again {key}"})
    assert store.path is not None
    raw = store.path.read_bytes()
    assert key.encode() not in raw and raw.count(b"[redacted]") == 3
    # the index points at the redacted lines: reading them back works
    reopened = SessionStore.open(store.path, read_only=True)
    notes = [e for e in reopened.entries() if isinstance(e, CustomEntry)]
    assert [n.data for n in notes] == [{"said": "key [redacted]"}, {"said": "again [redacted]"}]
    # a fork writes through the same hook and keeps it for its own appends
    forked = store.fork(path=tmp_path / "fork.jsonl")
    forked.append_custom("note", {"said": key})
    assert key.encode() not in (tmp_path / "fork.jsonl").read_bytes()
    reopened.close()
    store.close()
    forked.close()


def test_redact_message_covers_text_reasoning_calls_and_errors() -> None:
    key = new_key()
    REDACTOR.add([key])
    message = AssistantMessage(
        api="x",
        provider="p",
        model="m",
        error_message=f"401: {key}",
        content=[
            TextContent(text=f"t {key}"),
            ThinkingContent(thinking=f"th {key}"),
            ToolCall(id="1", name="bash", arguments={"command": f"echo {key}", "n": [key]}, raw_arguments=key),
        ],
    )
    redact_message(message)
    dumped = json.dumps(message.to_json_dict())
    assert key not in dumped and dumped.count("[redacted]") == 6
    user = UserMessage(content=f"plain {key}")
    redact_message(user)
    assert user.content == "plain [redacted]"


def test_log_records_are_redacted_whatever_the_format(caplog: pytest.LogCaptureFixture) -> None:
    key = new_key()
    REDACTOR.add([key])
    record = logging.LogRecord("heron.x", logging.ERROR, __file__, 1, "key %s and %d", (key, 3), None)
    try:
        raise ValueError(f"boom {key}")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    assert RedactingFilter().filter(record)
    formatted = logging.Formatter().format(record)
    assert key not in formatted and "key [redacted] and 3" in formatted and "boom [redacted]" in formatted
    problem = install_log_redaction({"HERON_LOG": "loud"})
    assert problem == "HERON_LOG=loud: not a log level (debug, info, warning, error)"
    assert logging.lastResort is not None
    assert any(isinstance(f, RedactingFilter) for f in logging.lastResort.filters)


def session_for(tmp_path: Path, faux: FauxProvider, key: str) -> CodingSession:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    store = SessionStore.create(tmp_path, home=home)
    return CodingSession(
        cwd=tmp_path, model=faux.model(), api_key=key, store=store, home=home, settings=settings_from_dict({})
    )


async def test_a_turn_keeps_the_key_out_of_the_session_and_a_switched_key_too(tmp_path: Path) -> None:
    key, second = new_key(), new_key("sk-second-")
    (tmp_path / "k.txt").write_text(f"{key} {second}\n")
    faux = FauxProvider()
    faux.queue(tool_call("bash", {"command": "cat k.txt"}, text_before=f"I saw {key}"), text(f"bye {key}"))
    session = session_for(tmp_path, faux, key)
    session.set_model(session.model, api_key=second)  # a model switch: the new key is a secret from now on
    await session.prompt(f"prompt with {key}")
    assert session.store.path is not None
    raw = session.store.path.read_text()
    assert key not in raw and second not in raw
    sent = json.dumps([m.to_json_dict() for m in session.messages])
    assert key not in sent and second not in sent  # the live history is the file's
    assert session.control.secrets.redact(second) == "[redacted]"
    faux.queue(error(f"server says {key}"))
    await session.prompt("again")
    last = session.messages[-1]
    assert isinstance(last, AssistantMessage) and last.error_message is not None
    assert key not in last.error_message and key not in session.store.path.read_text()


class FakeSpan:
    def __init__(self, attributes: dict[str, Any]) -> None:
        self.attributes = dict(attributes)
        self.status: Any = None

    def set_attribute(self, name: str, value: Any) -> None:
        self.attributes[name] = value

    def set_attributes(self, values: dict[str, Any]) -> None:
        self.attributes.update(values)

    def set_status(self, status: Any) -> None:
        self.status = status

    def end(self) -> None:
        pass


class FakeTracer:
    def __init__(self) -> None:
        self.spans: list[FakeSpan] = []

    def start_span(self, name: str, context: Any = None, kind: Any = None, attributes: Any = None) -> FakeSpan:
        span = FakeSpan(attributes or {})
        self.spans.append(span)
        return span


async def test_trace_attributes_with_content_capture_hold_no_key(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.trace")
    from heron.coding.tracing import SessionTracer

    key = new_key()
    (tmp_path / "k.txt").write_text(key)
    faux = FauxProvider()
    faux.queue(tool_call("bash", {"command": "cat k.txt"}), error(f"denied {key}"))
    session = session_for(tmp_path, faux, key)
    tracer = FakeTracer()
    SessionTracer(session, tracer, capture_content=True)  # type: ignore[arg-type]
    await session.prompt(f"with {key}")
    dumped = json.dumps([s.attributes for s in tracer.spans]) + repr([s.status for s in tracer.spans])
    assert key not in dumped and "[redacted]" in dumped
