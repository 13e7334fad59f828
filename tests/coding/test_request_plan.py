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
    learned = session.learn_window(failed)
    assert learned is not None
    rejected = plan.tokens + plan.max_tokens  # from the plan: the policy keeps no numbers of it
    assert learned < plan.window
    record = next(r for r in session.ledger.records if r.kind == "overflow")
    assert record.detail["rejectedTokens"] == rejected
