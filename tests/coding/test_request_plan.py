"""heron's own request path keeps one plan per request (heron.context.engine.RequestPlan):
the request carries the plan's view, output cap and turn prompt, overflow learning reads the
plan of the request that was rejected (the policy keeps no numbers of the last request), and
the plan names the compaction run and the decisions recorded while it was prepared."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from heron.agent.messages import convert_to_llm
from heron.ai.options import StreamOptions
from heron.ai.providers.faux import FauxProvider, text
from heron.ai.types import AssistantMessage, Context, Model, StopReason
from heron.coding.runtime import CodingSession
from heron.context.engine import RequestPlan
from heron.context.records.decisions import DECISION_CUSTOM_TYPE
from heron.session.entries import CompactionEntry
from heron.session.store import SessionStore


def recording(faux: FauxProvider) -> list[tuple[Context, StreamOptions]]:
    seen: list[tuple[Context, StreamOptions]] = []
    original = faux.stream

    async def stream(model: Model, context: Context, options: StreamOptions, builder: Any) -> AsyncIterator[Any]:
        seen.append((context, options))
        async for event in original(model, context, options, builder):
            yield event

    faux.stream = stream  # type: ignore[method-assign]
    return seen


def session_of(tmp_path: Path, faux: FauxProvider) -> CodingSession:
    proj = tmp_path / "proj"
    proj.mkdir(exist_ok=True)
    faux.set_fallback(lambda context: text("noted " * 40))
    return CodingSession(
        cwd=proj,
        model=faux.model(context_window=32_000, max_tokens=2_000),
        store=SessionStore.create(proj, home=tmp_path / "home"),
        home=tmp_path / "home",
    )


async def test_each_request_is_sent_as_its_plan_says(tmp_path: Path, faux: FauxProvider) -> None:
    seen = recording(faux)
    session = session_of(tmp_path, faux)
    assert session.request_plan is None
    plans: list[RequestPlan] = []
    for n in range(3):
        await session.prompt(f"step {n}: " + "x" * 1_000)
        plan = session.request_plan
        assert plan is not None and plan not in plans
        plans.append(plan)
        context, options = seen[-1]
        assert context.messages == convert_to_llm(list(plan.view))
        assert options.max_tokens == plan.max_tokens > 0
        assert plan.tokens + plan.max_tokens <= plan.window == 32_000
    with pytest.raises(dataclasses.FrozenInstanceError):
        plans[0].tokens = 1  # type: ignore[misc]
    assert plans[0].tokens < plans[1].tokens < plans[2].tokens


async def test_overflow_learning_reads_the_rejected_requests_plan(tmp_path: Path, faux: FauxProvider) -> None:
    session = session_of(tmp_path, faux)
    await session.prompt("step: " + "x" * 4_000)
    plan = session.request_plan
    assert plan is not None
    failed = AssistantMessage(
        api="faux",
        provider=session.model.provider,
        model=session.model.id,
        stop_reason=StopReason.ERROR,
        error_message="400: prompt is too long: the request exceeds the context window",
        error_kind="overflow",
    )
    learned = session.recovery.learn_window(failed)
    assert learned is not None
    rejected = plan.tokens + plan.max_tokens  # from the plan: the policy keeps no numbers of it
    assert learned < plan.window
    record = next(r for r in session.ledger.records if r.kind == "overflow")
    assert record.detail["rejectedTokens"] == rejected


async def test_the_plan_carries_the_turns_prompt(tmp_path: Path, faux: FauxProvider) -> None:
    """The rules check the turn's prompt against the prompt in the plan: the request path
    reads it there, not off the session."""
    seen = recording(faux)
    session = session_of(tmp_path, faux)
    await session.prompt("the one prompt of this turn")
    plan = session.request_plan
    assert plan is not None and plan.turn_prompt is not None
    assert plan.turn_prompt.text() == "the one prompt of this turn"
    assert any(m is plan.turn_prompt for m in plan.view)  # the very message, in the view sent
    context, _ = seen[-1]
    assert context.messages[-1].text() == "the one prompt of this turn"


async def test_a_compaction_run_while_preparing_is_named_in_the_plan(tmp_path: Path, faux: FauxProvider) -> None:
    """heron's own path fills the plan's compaction and decisions as the library's
    prepare_request does: the request after the threshold names the compaction written for
    it and the decisions recorded on the way; the next one, with nothing new, names none."""
    seen = recording(faux)
    session = session_of(tmp_path, faux)  # 32,000-token window: compacts past 24,000
    plans: list[RequestPlan] = []
    for n in range(6):
        await session.prompt(f"part {n}: " + "x" * 4 * 5_000)
        assert session.request_plan is not None
        plans.append(session.request_plan)
    compacted = [p for p in plans if p.compaction is not None]
    assert compacted, [p.tokens for p in plans]
    plan = compacted[0]
    assert plan.compaction is not None and plan.compaction.entry_id is not None
    written = [e for e in plan.decisions if isinstance(e, CompactionEntry)]
    assert [e.id for e in written] == [plan.compaction.entry_id]
    on_path = {e.id for e in session.store.path_to(session.store.leaf_id)}
    assert all(e.id in on_path for e in plan.decisions)  # recorded, on the session's path
    assert all(isinstance(e, CompactionEntry) or e.custom_type == DECISION_CUSTOM_TYPE for e in plan.decisions)  # type: ignore[union-attr]
    after = plans[plans.index(plan) + 1 :]
    assert after and after[0].compaction is None and after[0].decisions == ()
    assert plan.tokens <= plan.threshold and len(seen) > len(plans)  # a summary request went out too
