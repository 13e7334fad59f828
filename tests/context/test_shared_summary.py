"""Cache-sharing summaries (docs/context.md, "The summary request"): the summary request is
the last main request's exact prefix plus the instruction; a tool call in its answer, or a
history too long for one request, gives the separate summariser the job; the setting and
the model's cache decide which request is sent; the ledger records the cache hit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from heron.ai.options import StreamOptions
from heron.ai.prompt_cache import caches_prompts
from heron.ai.providers import anthropic, google, openai_chat, openai_responses
from heron.ai.providers.faux import FauxProvider, FauxReply, serialise_request, text, tool_call
from heron.ai.types import Context, Model, ModelCost, Tool, UserMessage, now_ms
from heron.coding.runtime import CodingSession
from heron.coding.settings import load_settings, settings_from_dict
from heron.context.compaction.summary.summary_text import (
    SHARED_SUMMARY_MARK,
    SUMMARISER_SYSTEM_PROMPT,
    is_summary_request,
)
from heron.context.records.ledger import LEDGER_CUSTOM_TYPE
from heron.context.view.sent_view import view_as_sent
from heron.session.entries import CustomEntry
from heron.session.store import SessionStore

SUMMARY = "## Goal\nRead the file in pages"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "big.txt").write_text("".join(f"line {i} of a long file with some text\n" for i in range(1, 4001)))
    return proj


def script(faux: FauxProvider, summary_reply: FauxReply | None = None) -> list[Context]:
    """Three paged reads then an answer, per prompt; summary requests answered (and kept)."""
    summaries: list[Context] = []
    state = {"step": 0}

    def reply(context: Context) -> FauxReply:
        if is_summary_request(context):
            summaries.append(context)
            if summary_reply is not None and context.system_prompt != SUMMARISER_SYSTEM_PROMPT:
                return summary_reply
            return text(SUMMARY)
        step = state["step"]
        state["step"] = (step + 1) % 4
        if step < 3:
            return tool_call("read", {"path": "big.txt", "offset": 1 + step * 300, "limit": 300})
        return text("done reading")

    faux.set_fallback(reply)
    return summaries


def session(project: Path, faux: FauxProvider, model: Model | None = None, **settings: Any) -> CodingSession:
    return CodingSession(
        cwd=project,
        model=model or faux.model(context_window=32_000, max_tokens=4_000),
        store=SessionStore.create(project, home=project.parent / "home"),
        home=project.parent / "home",
        settings=settings_from_dict({"compaction": {"keepRecentTokens": 500, **settings}}),
    )


def ledger(s: CodingSession, kind: str) -> list[dict[str, Any]]:
    return [
        e.data
        for e in s.store.entries()
        if isinstance(e, CustomEntry) and e.custom_type == LEDGER_CUSTOM_TYPE and e.data["kind"] == kind
    ]


async def test_the_summary_request_is_the_last_requests_prefix_and_the_instruction(
    project: Path, faux: FauxProvider
) -> None:
    summaries = script(faux)
    s = session(project, faux)
    await s.prompt("read big.txt")
    await s.prompt("read it again")
    last_main = faux.requests[-1]
    end = await s.compact()
    assert end.entry_id is not None
    (shared,) = summaries
    assert shared.system_prompt == last_main.system_prompt
    assert shared.tools == last_main.tools
    *prefix, instruction = shared.messages
    assert isinstance(instruction, UserMessage) and instruction.text().startswith(SHARED_SUMMARY_MARK)
    assert prefix == last_main.messages[: len(prefix)] and 0 < len(prefix) < len(last_main.messages)
    # byte for byte: the serialised summary request starts with everything before the cut
    head = serialise_request(Context(system_prompt=shared.system_prompt, messages=prefix, tools=shared.tools))
    assert serialise_request(last_main).startswith(head)
    # the faux provider's cache (prefix of the session's previous request) served nearly all of it
    (record,) = [r for r in ledger(s, "compaction")]
    detail = record["detail"]["summary_request"]
    assert detail["mode"] == "shared" and detail["requests"] == 1
    assert detail["cacheHit"] >= 0.9 and detail["cachedTokens"] <= detail["inputTokens"]
    assert SUMMARY in s.messages[0].summary  # type: ignore[union-attr]


async def test_a_tool_call_in_the_answer_is_a_failed_summary(project: Path, faux: FauxProvider) -> None:
    summaries = script(faux, summary_reply=tool_call("read", {"path": "big.txt"}))
    s = session(project, faux)
    await s.prompt("read big.txt")
    end = await s.compact()
    assert end.entry_id is not None
    assert [c.system_prompt == SUMMARISER_SYSTEM_PROMPT for c in summaries] == [False, True]
    (fallback,) = ledger(s, "summary_fallback")
    assert fallback["detail"] == {"step": "separate", "reason": "the summary answer called a tool (read)"}
    detail = ledger(s, "compaction")[0]["detail"]["summary_request"]
    assert detail["mode"] == "separate" and detail["requests"] == 2
    assert SUMMARY in s.messages[0].summary  # type: ignore[union-attr]


async def test_the_separate_setting_and_a_server_without_cache(project: Path, faux: FauxProvider) -> None:
    summaries = script(faux)
    s = session(project, faux, request="separate")
    await s.prompt("read big.txt")
    assert (await s.compact()).entry_id is not None
    no_cache = faux.model(context_window=32_000, max_tokens=4_000, cost=ModelCost(input=1.0, output=2.0))
    t = session(project, faux, model=no_cache)
    await t.prompt("read big.txt")
    assert (await t.compact()).entry_id is not None
    assert [c.system_prompt for c in summaries] == [SUMMARISER_SYSTEM_PROMPT, SUMMARISER_SYSTEM_PROMPT]
    home = project.parent / "home"
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(json.dumps({"compaction": {"request": "same"}}))
    loaded = load_settings(project, home)
    assert loaded.compaction.request == "shared"  # the bad value is reported and ignored
    assert any('\'compaction.request\' must be "shared" or "separate"' in w for w in loaded.warnings)


def test_which_servers_cache_prompts() -> None:
    base = Model(id="m", api="openai-completions", provider="p")
    assert not caches_prompts(base)  # hosted, no cache price
    assert caches_prompts(Model(id="m", api="a", provider="p", cost=ModelCost(cache_read=0.3)))
    assert caches_prompts(Model(id="m", api="a", provider="p", base_url="http://127.0.0.1:8080/v1"))
    assert caches_prompts(Model(id="m", api="a", provider="p", base_url="http://10.0.0.5/v1"))
    assert not caches_prompts(Model(id="m", api="a", provider="p", base_url="https://gateway.example.com/v1"))
    assert caches_prompts(Model(id="m", api="a", provider="p", compat={"promptCache": True}))
    local_off = Model(id="m", api="a", provider="p", base_url="http://localhost:1/v1", compat={"promptCache": False})
    assert not caches_prompts(local_off)


def test_tool_choice_none_on_each_wire() -> None:
    """OpenAI chat and responses: ``tool_choice: "none"``; Gemini: function calling mode
    NONE; Anthropic: not sent (changing tool_choice drops its cached messages)."""
    tools = [Tool(name="read", description="read a file", parameters={"type": "object", "properties": {}})]
    context = Context(system_prompt="sys", messages=[UserMessage(content="hi")], tools=tools)
    options = StreamOptions(tool_choice="none", max_tokens=100)
    model = Model(id="m", api="x", provider="p")
    assert openai_chat.build_request(model, context, options)["tool_choice"] == "none"
    assert openai_responses.build_request(model, context, options)["tool_choice"] == "none"
    assert google.build_body(model, context, options)["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}
    assert "tool_choice" not in anthropic.build_request(model, context, options)
    plain = StreamOptions(max_tokens=100)
    assert "tool_choice" not in openai_chat.build_request(model, context, plain)
    assert "toolConfig" not in google.build_body(model, context, plain)


async def two_reads(project: Path, faux: FauxProvider) -> tuple[CodingSession, list[Any], list[dict[str, Any]]]:
    """A session that read the big file twice: it, its messages, and the view its last request carried."""
    script(faux)
    s = session(project, faux)
    await s.prompt("read big.txt")
    await s.prompt("read it again")
    messages = s.agent.state.messages
    return s, messages, [m.to_json_dict() for m in s.policy.view(messages)]  # type: ignore[union-attr]


async def test_the_view_as_sent_leaves_out_a_pruning_step_taken_since_the_last_answer(
    project: Path, faux: FauxProvider
) -> None:
    """A compaction is often preceded, in the same preparation, by a pruning step: the shared
    request repeats the view the last request carried, without that step's stubs, and a
    resumed process derives the same view (the stubs' recording times against the answers')."""
    s, messages, sent = await two_reads(project, faux)
    assert s.policy.pruner.prune(messages, 0, keep_turns=0) > 0  # a step after the latest answer
    pruned = [m.to_json_dict() for m in s.policy.view(messages)]  # type: ignore[union-attr]
    assert pruned != sent
    view, stubs = view_as_sent(s.policy, messages)
    assert [m.to_json_dict() for m in view] == sent and stubs == {}  # type: ignore[union-attr]
    reopened = session_on(project, faux, SessionStore.open(s.store.path, read_only=True))
    again, _ = view_as_sent(reopened.policy, reopened.agent.state.messages)
    assert [m.to_json_dict() for m in again] == sent  # type: ignore[union-attr]
    await s.prompt("and once more")  # after the next answer the step is part of what was sent
    view, stubs = view_as_sent(s.policy, s.agent.state.messages)
    assert stubs == s.policy.decisions.stubs and stubs


async def test_a_background_summary_repeats_the_request_whose_preparation_started_it(
    project: Path, faux: FauxProvider
) -> None:
    """A background summary starts once the view of the request about to be sent is
    settled, pruning step included (a cold-cache step at a turn's start): its request
    repeats that view, stubs recorded before its start and after the latest answer too,
    and a process that reads the file later (asking for it again) derives the same."""
    s, messages, sent = await two_reads(project, faux)
    before_step = now_ms()
    while now_ms() == before_step:
        pass
    assert s.policy.pruner.prune(messages, 0, keep_turns=0) > 0  # a step after the latest answer
    pruned = [m.to_json_dict() for m in s.policy.view(messages)]  # type: ignore[union-attr]
    started = max(s.policy.decisions.stub_ms.values()) + 1  # the background start, after the step
    view, stubs = view_as_sent(s.policy, messages, started)
    assert [m.to_json_dict() for m in view] == pruned and stubs == s.policy.decisions.stubs  # type: ignore[union-attr]
    view, stubs = view_as_sent(s.policy, messages, before_step)  # a start before the step: without it
    assert [m.to_json_dict() for m in view] == sent and stubs == {}  # type: ignore[union-attr]
    reopened = session_on(project, faux, SessionStore.open(s.store.path, read_only=True))
    again, _ = view_as_sent(reopened.policy, reopened.agent.state.messages, started)
    assert [m.to_json_dict() for m in again] == pruned  # type: ignore[union-attr]


def session_on(project: Path, faux: FauxProvider, store: SessionStore) -> CodingSession:
    return CodingSession(
        cwd=project,
        model=faux.model(context_window=32_000, max_tokens=4_000),
        store=store,
        home=project.parent / "home",
        settings=settings_from_dict({"compaction": {"keepRecentTokens": 500}}),
    )
