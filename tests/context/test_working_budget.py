"""The working budget (heron.context.window.working_budget, docs/context.md "The working budget"):
compaction triggers at ``min(window - reserve, budget)``, the budget chosen from the
model's prices, and the same in a resumed process."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from heron.ai.providers.faux import FauxProvider, text, tool_call
from heron.ai.types import Model, ModelCost
from heron.cli.sessions_context import breakdown_json, format_context_breakdown
from heron.coding.breakdown import context_breakdown
from heron.coding.report import build_report
from heron.coding.runtime import CodingSession
from heron.coding.settings import load_settings, settings_from_dict
from heron.context.tool_output.limits import ToolLimits
from heron.context.window.working_budget import (
    FIXED_ALLOWANCE_TOKENS,
    MIN_BUDGET_TOKENS,
    STEP_TOKENS,
    SUMMARY_OUTPUT_TOKENS,
    WorkingBudget,
    parse_setting,
    working_budget,
)
from heron.session.store import SessionStore

SONNET = ModelCost(input=3.0, output=15.0, cache_read=0.30, cache_write=3.75)


def priced(cost: ModelCost, window: int = 1_000_000) -> Model:
    return FauxProvider("priced").model(context_window=window, cost=cost)


def test_auto_is_the_cheapest_size_per_step_for_the_prices() -> None:
    survivors = 24_000 + FIXED_ALLOWANCE_TOKENS
    budget = working_budget(priced(SONNET), "auto", kept_tokens=24_000)
    assert budget.tokens is not None
    once = SUMMARY_OUTPUT_TOKENS * 15.0 + survivors * 3.75

    def per_step(tokens: int) -> float:  # dollars per million: the cycle's reads and its compaction, per step
        grown = tokens - survivors
        return 0.30 * (survivors + grown / 2) + STEP_TOKENS * (0.30 * tokens + once) / grown

    assert budget.tokens == int(survivors + math.sqrt(2 * STEP_TOKENS * (survivors + once / 0.30)))
    assert 95_000 < budget.tokens < 105_000  # a tenth of a 1M window at Sonnet's prices
    for other in (budget.tokens - 20_000, budget.tokens + 20_000, 500_000, 983_616):
        assert per_step(other) > per_step(budget.tokens)
    assert budget.break_even_steps is not None and 1 < budget.break_even_steps < 10
    assert "cache read $0.3" in budget.reason and f"{budget.tokens:,}" in budget.describe()


def test_cheaper_reads_allow_a_larger_budget_and_unpriced_models_have_none() -> None:
    base = working_budget(priced(SONNET), "auto", kept_tokens=24_000).tokens
    cheap = working_budget(
        priced(ModelCost(input=3.0, output=15.0, cache_read=0.03, cache_write=3.75)), "auto", kept_tokens=24_000
    ).tokens
    assert base is not None and cheap is not None and cheap > 2 * base
    local = working_budget(priced(ModelCost()), "auto", kept_tokens=24_000)
    assert local.tokens is None and "no prices" in local.reason
    assert local.limit(983_616) == 983_616
    no_cache = working_budget(priced(ModelCost(input=1.0, output=2.0)), "auto", kept_tokens=24_000)
    assert no_cache.tokens is not None  # re-read at the input price
    tiny = working_budget(priced(ModelCost(input=100.0, output=0.01, cache_read=100.0)), "auto", kept_tokens=0)
    assert tiny.tokens == MIN_BUDGET_TOKENS


def test_a_number_or_off_overrides_auto() -> None:
    assert working_budget(priced(SONNET), 50_000, kept_tokens=24_000) == WorkingBudget(
        50_000, "compaction.workingBudget is 50,000 tokens"
    )
    off = working_budget(priced(SONNET), None, kept_tokens=24_000)
    assert off.tokens is None and off.limit(983_616) == 983_616


@pytest.mark.parametrize(("value", "expected"), [("auto", "auto"), ("off", None), (None, None), (120_000, 120_000)])
def test_the_setting_parses(value: object, expected: object) -> None:
    assert parse_setting(value) == expected


@pytest.mark.parametrize("value", ["lots", 0, -5, True, 1.5, [1]])
def test_a_bad_setting_is_reported_and_the_default_kept(
    value: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "p" / ".heron").mkdir(parents=True)
    (tmp_path / "p" / ".heron" / "settings.json").write_text(json.dumps({"compaction": {"workingBudget": value}}))
    loaded = load_settings(tmp_path / "p")
    assert loaded.compaction.working_budget == "auto"
    assert any("'compaction.workingBudget'" in w and '"auto" or "off"' in w for w in loaded.warnings), loaded.warnings


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    root = tmp_path / "proj"
    root.mkdir()
    (root / "big.txt").write_text("".join(f"line {i:06d} of a long file that the model reads\n" for i in range(4_000)))
    return root


def session(proj: Path, faux: FauxProvider, store: SessionStore, **compaction: Any) -> CodingSession:
    return CodingSession(
        cwd=proj,
        model=faux.model(context_window=1_000_000, max_tokens=8_192, cost=SONNET),
        store=store,
        settings=settings_from_dict(
            {
                "compaction": {"background": False, **compaction},
                "memory": {"enabled": False},
                "pruning": {"enabled": False},
            }
        ),
    )


def test_a_session_plans_in_the_budget_and_says_why(proj: Path, faux: FauxProvider) -> None:
    s = session(proj, faux, SessionStore.create(proj))
    budget = s.policy.sizes.budget
    assert budget.tokens is not None and s.threshold == budget.tokens < 1_000_000 - 16_384
    assert s.policy.sizes.working_window == budget.tokens + 16_384
    assert s.env.limits == ToolLimits().for_window(s.policy.sizes.working_window)  # results sized to the budget
    breakdown = context_breakdown(s)
    lines = format_context_breakdown(breakdown)
    assert any(line.startswith(f"working budget {budget.tokens:,} tokens (auto from the prices") for line in lines)
    assert breakdown_json(breakdown)["working_budget"]["tokens"] == budget.tokens
    off = session(proj, faux, SessionStore.create(proj), workingBudget="off")
    assert off.threshold == 1_000_000 - 16_384 and off.policy.sizes.working_window == 1_000_000


async def test_compaction_runs_at_the_budget_and_a_resumed_process_plans_alike(proj: Path, faux: FauxProvider) -> None:
    store = SessionStore.create(proj)
    s = session(proj, faux, store, workingBudget=40_000, keepRecentTokens=4_000)
    reads = [tool_call("read", {"path": "big.txt", "offset": 1 + 400 * i, "limit": 400}) for i in range(10)]
    faux.set_fallback(lambda context: text("## Goal\nread big.txt\n## Progress\nread it in pages"))
    for i, call in enumerate(reads):
        faux.queue(call, text(f"page {i} read"))
        await s.prompt(f"read page {i} of big.txt")
    compactions = [r for r in s.ledger.records if r.kind == "compaction"]
    assert compactions, "the budget never triggered a compaction"
    assert all(r.detail["threshold"] == 40_000 for r in compactions)
    assert compactions[0].detail["working_budget"]["tokens"] == 40_000
    assert max(len(p) // 4 for p in faux.payloads) < 1_000_000 // 4  # far below what the window allows
    assert store.path is not None
    store.close()
    resumed = session(proj, faux, SessionStore.open(store.path), workingBudget=40_000, keepRecentTokens=4_000)
    assert resumed.threshold == s.threshold == 40_000
    report = build_report(resumed.store, windows=lambda _model: 1_000_000, reserve=16_384)
    assert report.budgets and all(report.threshold_at(p) == 40_000 for p in report.requests)
