"""Pruning while the prompt cache is cold: below the high-water mark, a step is taken
only when the last reply is older than the cache lifetime (the prefix is paid in full
anyway), recorded with the idle time in the ledger, and derived the same by a new
process; a warm prefix is left alone, and 0 turns it off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from heron.agent.messages import AgentMessage
from heron.ai.types import Model, TextContent, UserMessage, now_ms
from heron.coding.settings import load_settings, settings_from_dict
from heron.context.pruning.cold_cache import DEFAULT_CACHE_TTL_S, cache_cold, cache_lifetime, idle_seconds
from tests.context import test_prune_marks
from tests.context.test_prune_marks import answer, read_turn


def test_idle_time_is_measured_from_the_last_answer() -> None:
    now = 10_000_000
    messages: list[AgentMessage] = [answer(now - 400_000), UserMessage(content="next", timestamp=now)]
    assert idle_seconds(messages, now) == 400.0
    assert cache_cold(messages, 300, now) == 400.0
    assert cache_cold(messages, 500, now) is None  # still within the cache's lifetime
    assert cache_cold(messages, 0, now) is None  # the setting is off
    assert idle_seconds([UserMessage(content="first", timestamp=now)], now) is None  # nothing sent yet
    assert cache_cold([answer(0)], 300, now) is None  # a reply without a time says nothing


make = test_prune_marks.make  # the same fixture: sessions with the policy settings given


def history(last_reply_ms: int) -> list[AgentMessage]:
    """Ten 1,000-token reads (10,050 tokens: below the 0.9 high-water mark of 12,000,
    above the 0.3 low-water mark), the last reply at ``last_reply_ms``, then a prompt."""
    messages: list[AgentMessage] = [UserMessage(content=[TextContent(text="go")], timestamp=last_reply_ms)]
    for i in range(10):
        messages += read_turn(i, 4_000, last_reply_ms)
    return [*messages, answer(last_reply_ms), UserMessage(content=[TextContent(text="next")], timestamp=now_ms())]


def test_a_cold_cache_prunes_every_result_already_answered_and_a_new_process_agrees(make: Any) -> None:
    """At a cold moment the request is paid in full whatever it keeps: every result but
    those of the last ``coldKeepTurns`` assistant messages (1: none at a turn's start,
    the model has answered from all of them) is stubbed, below the low-water mark too."""
    s = make(prune_high_water=0.9, prune_low_water=0.3, prune_keep_turns=2, prune_cache_ttl_s=300)
    s.add(history(now_ms() - 600_000))  # ten minutes since the last reply: the prefix has expired
    view = s.prepare()
    (step,) = s.steps()
    assert {f"c{i}" for i in range(10)} <= set(step["stubs"])  # the latest read too: it was answered
    assert s.settled.tokens <= 1_500
    records = [r for r in s.policy.ledger.records if r.kind == "prune"]
    assert records and all(r.detail["cacheCold"]["ttlSeconds"] == 300 for r in records)
    assert all(r.detail["cacheCold"]["idleSeconds"] >= 600 for r in records)
    before = json.dumps([m.to_json_dict() for m in view])
    s.restart()  # a new process, whenever it opens the file, derives the same view from the recorded step
    assert json.dumps([m.to_json_dict() for m in s.prepare()]) == before
    assert len(s.steps()) == 1  # nothing left to prune: no second step


def test_the_results_a_cold_step_spares_are_a_setting(make: Any) -> None:
    """``coldKeepTurns`` 2 spares the last read (its assistant message is the second last);
    never more than ``keepTurns`` spares at a warm step."""
    s = make(
        prune_high_water=0.9, prune_low_water=0.3, prune_keep_turns=3, prune_cold_keep_turns=2, prune_cache_ttl_s=300
    )
    s.add(history(now_ms() - 600_000))
    s.prepare()
    (step,) = s.steps()
    assert "c8" in step["stubs"] and "c9" not in step["stubs"]
    narrow = make(
        prune_high_water=0.9, prune_low_water=0.3, prune_keep_turns=0, prune_cold_keep_turns=2, prune_cache_ttl_s=300
    )
    narrow.add(history(now_ms() - 600_000))
    narrow.prepare()
    (step,) = narrow.steps()
    assert "c9" in step["stubs"]  # keepTurns 0 bounds it
    assert settings_from_dict({}).pruning.cold_keep_turns == 1
    assert settings_from_dict({"pruning": {"coldKeepTurns": 3}}).pruning.cold_keep_turns == 3


def test_a_warm_cache_or_the_setting_off_leaves_the_view_alone(make: Any) -> None:
    warm = make(prune_high_water=0.9, prune_low_water=0.3, prune_cache_ttl_s=300)
    warm.add(history(now_ms() - 60_000))  # a minute: the provider still holds the prefix
    warm.prepare()
    assert warm.steps() == []
    off = make(prune_high_water=0.9, prune_low_water=0.3, prune_cache_ttl_s=0)
    off.add(history(now_ms() - 3_600_000))
    off.prepare()
    assert off.steps() == []


def test_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert settings_from_dict({}).pruning.cache_ttl_seconds is None  # decided by the server
    assert settings_from_dict({"pruning": {"cacheTtlSeconds": 3600}}).pruning.cache_ttl_seconds == 3600
    assert settings_from_dict({"pruning": {"cacheTtlSeconds": 0}}).pruning.cache_ttl_seconds == 0
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "project" / ".heron").mkdir(parents=True)
    (tmp_path / "project" / ".heron" / "settings.json").write_text(json.dumps({"pruning": {"cacheTtlSeconds": -5}}))
    loaded = load_settings(tmp_path / "project")
    assert loaded.pruning.cache_ttl_seconds is None  # the default kept, the value reported
    assert "'pruning.cacheTtlSeconds' must be an integer >= 0" in "\n".join(loaded.warnings)


def test_the_lifetime_by_server_a_local_one_never_goes_cold() -> None:
    """Unset, a hosted provider's cache lives :data:`DEFAULT_CACHE_TTL_S`; a local or
    private server keeps a slot's prefix until another prompt replaces it, so no cold
    step there; a configured lifetime wins either way."""
    hosted = Model(id="m", name="m", api="openai-chat", provider="openai", base_url="https://api.openai.com/v1")
    local = Model(id="m", name="m", api="openai-chat", provider="local", base_url="http://127.0.0.1:8080/v1")
    lan = Model(id="m", name="m", api="openai-chat", provider="local", base_url="http://192.168.1.20:11434/v1")
    assert cache_lifetime(hosted, None) == DEFAULT_CACHE_TTL_S == 300
    assert cache_lifetime(local, None) == 0 and cache_lifetime(lan, None) == 0
    assert cache_lifetime(local, 600) == 600 and cache_lifetime(hosted, 0) == 0
