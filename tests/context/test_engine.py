"""The context engine as a library (heron.context.engine): heron's messages, a session
file and a model description in; the request's plan out, the same after a restart."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pytest

from heron.agent.messages import AgentMessage, CompactionSummaryMessage, convert_to_llm
from heron.ai.types import AssistantMessage, Context, Model, TextContent, ToolCall, ToolResultMessage, UserMessage
from heron.context.engine import ContextEngine, RequestPlan, recorded_since
from heron.context.policy import ContextFull
from heron.context.records.decisions import DECISION_CUSTOM_TYPE
from heron.session.entries import CompactionEntry
from heron.session.store import SessionStore

WINDOW = 16_384
MODEL = Model(id="m", api="test", provider="local", context_window=WINDOW, max_tokens=2_048)
SUMMARY = "## Goal\\nRun the steps.\\n\\n## Progress\\n- Steps ran."


async def ask(context: Context, max_tokens: int) -> AssistantMessage:
    """A summariser that always answers the same summary."""
    return AssistantMessage(api="test", provider="local", model="m", content=[TextContent(text=SUMMARY)])


def turn(engine: ContextEngine, n: int, log_chars: int) -> None:
    """One turn appended: a prompt, a call, its (budgeted) result, an answer."""
    engine.append(UserMessage(content=f"step {n}: " + "detail " * 200, timestamp=n * 10_000))
    call = ToolCall(id=f"call_{n}", name="bash", arguments={"command": f"make {n}"})
    engine.append(AssistantMessage(api="test", provider="local", model="m", content=[call], timestamp=n * 10_000 + 1))
    result = ToolResultMessage(
        tool_call_id=f"call_{n}",
        tool_name="bash",
        content=[TextContent(text="x" * log_chars)],
        timestamp=n * 10_000 + 2,
    )
    engine.append(engine.budget_results([result], engine.cwd / "spill", 10_000_000)[0])
    answer = TextContent(text=f"step {n} done. " + "finding " * 300)
    engine.append(AssistantMessage(api="test", provider="local", model="m", content=[answer], timestamp=n * 10_000 + 3))


def wire(view: Sequence[AgentMessage]) -> list[dict[str, object]]:
    return [m.to_json_dict() for m in convert_to_llm(list(view))]


async def test_a_long_conversation_is_planned_within_the_window_and_a_restart_plans_the_same(tmp_path: Path) -> None:
    engine = ContextEngine.open(tmp_path / "s.jsonl", MODEL, cwd=tmp_path)
    compactions = 0
    for n in range(1, 25):
        turn(engine, n, 20_000)
        plan = await engine.prepare_request(ask)
        assert isinstance(plan, RequestPlan)
        assert plan.tokens <= plan.threshold < plan.window == WINDOW
        assert plan.reserve > 0 and plan.max_tokens > 0
        compactions += sum(isinstance(e, CompactionEntry) for e in plan.decisions)
        if plan.compaction is not None and plan.compaction.entry_id is not None:
            assert isinstance(plan.view[0], CompactionSummaryMessage)
    assert compactions >= 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.tokens = 0  # type: ignore[misc]
    # every large result was cut to a preview, its whole text spilled and recorded
    assert any(r.kind == "spill" for r in engine.ledger.records)
    tool_texts = [m.text() for m in plan.view if isinstance(m, ToolResultMessage)]
    assert tool_texts and all(len(t) < 20_000 for t in tool_texts)

    engine.store.close()
    again = ContextEngine.open(tmp_path / "s.jsonl", MODEL, cwd=tmp_path)
    replanned = await again.prepare_request(ask)
    assert wire(replanned.view) == wire(plan.view)
    assert replanned.tokens == plan.tokens
    assert replanned.decisions == ()  # nothing new to decide


async def test_the_request_rules_are_checked_on_a_plan(tmp_path: Path) -> None:
    engine = ContextEngine.open(tmp_path / "s.jsonl", MODEL, cwd=tmp_path)
    for n in range(1, 3):
        turn(engine, n, 1_000)
    plan = await engine.prepare_request(ask)
    prompt = next(m for m in reversed(plan.view) if isinstance(m, UserMessage))
    assert engine.check(plan, Context(messages=convert_to_llm(list(plan.view))), prompt) == []
    unanswered = dataclasses.replace(plan, view=tuple(m for m in plan.view if not isinstance(m, ToolResultMessage)))
    violations = engine.check(unanswered, Context(messages=convert_to_llm(list(unanswered.view))), prompt)
    assert {v.rule for v in violations} == {"f.tool-pairing"}
    assert [r.kind for r in engine.ledger.records if r.kind == "invariant"] == ["invariant"] * len(violations)


async def test_a_request_that_cannot_fit_is_refused_with_the_reason(tmp_path: Path) -> None:
    engine = ContextEngine.open(tmp_path / "s.jsonl", MODEL, cwd=tmp_path)
    engine.append(UserMessage(content="y" * (WINDOW * 5)))
    with pytest.raises(ContextFull, match="window"):
        await engine.prepare_request(ask)


def test_recorded_since_reads_back_to_the_start_only(tmp_path: Path) -> None:
    """The decisions a preparation recorded: those after its start on the path, oldest
    first; messages, ledger records and other custom entries are not decisions."""
    store = SessionStore.create(tmp_path, path=tmp_path / "s.jsonl")
    store.append_message(UserMessage(content=[TextContent(text="hi")]))
    store.append_custom(DECISION_CUSTOM_TYPE, {"op": "flush", "files": []})  # before the start
    start = store.leaf_id
    assert recorded_since(store, start) == []
    first = store.append_custom(DECISION_CUSTOM_TYPE, {"op": "flush", "files": ["a"]})
    store.append_custom("heron:ledger", {"kind": "spill"})  # a ledger record: not a decision
    store.append_message(UserMessage(content=[TextContent(text="more")]))
    second = store.append_custom(DECISION_CUSTOM_TYPE, {"op": "flush", "files": ["b"]})
    assert [e.id for e in recorded_since(store, start)] == [first.id, second.id]
    assert len(recorded_since(store, None)) == 3  # from the root: the one before the start too
    store.close()


def test_the_spill_directory_may_be_given_as_text(tmp_path: Path) -> None:
    """A caller outside heron passes a path as it has it: a ``str`` is a directory too (it
    used to fail inside the spill writer with an AttributeError)."""
    engine = ContextEngine.open(str(tmp_path / "s.jsonl"), MODEL, cwd=tmp_path)
    result = ToolResultMessage(tool_call_id="c", tool_name="bash", content=[TextContent(text="y\n" * 200_000)])
    [budgeted] = engine.budget_results([result], str(tmp_path / "spill"), 10_000_000)
    spilled = list((tmp_path / "spill").iterdir())
    assert len(spilled) == 1 and spilled[0].read_text() == "y\n" * 200_000
    assert str(spilled[0]) in budgeted.text() and len(budgeted.text()) < 20_000
    assert [record.kind for record in engine.ledger.records] == ["spill"]


def test_a_model_without_a_window_is_refused_before_the_file_is_touched(tmp_path: Path) -> None:
    for window in (0, -5):
        with pytest.raises(ValueError, match="context_window must be a positive number"):
            ContextEngine.open(tmp_path / "s.jsonl", dataclasses.replace(MODEL, context_window=window))
    assert list(tmp_path.iterdir()) == []


async def test_a_model_without_an_output_limit_gets_a_quarter_of_the_window(tmp_path: Path) -> None:
    """``max_tokens=0`` (unknown) used to make every request's output cap 1 token."""
    engine = ContextEngine.open(tmp_path / "s.jsonl", dataclasses.replace(MODEL, max_tokens=0), cwd=tmp_path)
    engine.append(UserMessage(content="hello"))
    plan = await engine.prepare_request(ask)
    assert plan.max_tokens == WINDOW // 4


async def test_a_summariser_that_raises_leaves_the_store_as_it_was_and_close_releases_it(tmp_path: Path) -> None:
    """The caller's ``ask`` raising (its provider down) propagates; no compaction is written
    and nothing half-written is left, and once the engine is closed another one opens the
    same file and compacts."""

    async def down(context: Context, max_tokens: int) -> AssistantMessage:
        raise RuntimeError("provider down")

    path = tmp_path / "s.jsonl"
    with ContextEngine.open(path, MODEL, cwd=tmp_path) as engine:
        for n in range(1, 21):  # past the window: the next request needs a compaction
            turn(engine, n, 20_000)
        with pytest.raises(RuntimeError, match="provider down"):
            await engine.prepare_request(down)
    reader = SessionStore.open(path, read_only=True)  # the decisions taken before it (pruning) stay, whole
    assert reader.warnings == [] and not any(isinstance(e, CompactionEntry) for e in reader.entries())
    with ContextEngine.open(path, MODEL, cwd=tmp_path) as again:
        plan = await again.prepare_request(ask)
    assert plan.compaction is not None and plan.tokens <= plan.threshold
