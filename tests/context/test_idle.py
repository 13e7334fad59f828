"""The idle policy's decision (heron.context.compaction.idle): the cheapest of warming the prompt
cache, compacting or letting it expire, by the model's prices; the policies that force
one; at most MAX_WARMS warm-ups per idle period; an unpriced model left alone."""

from __future__ import annotations

import pytest

from heron.ai.types import ModelCost
from heron.coding.settings import settings_from_dict
from heron.context.compaction.idle import (
    MAX_WARMS,
    IdleDecision,
    IdlePolicy,
    decide,
    idle_costs,
    lead_seconds,
    parse_policy,
)
from heron.context.window.working_budget import FIXED_ALLOWANCE_TOKENS, SUMMARY_OUTPUT_TOKENS

SONNET = ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)


def decided(
    policy: IdlePolicy, cost: ModelCost, tokens: int, *, cold: int | None = None, warms: int = 0
) -> IdleDecision:
    """The decision for ``tokens`` of context, 20,000 of them kept by a compaction, and
    ``cold`` (default: all of them) sent by a request after the cache expired."""
    return decide(
        policy,
        cost,
        context_tokens=tokens,
        kept_tokens=20_000,
        cold_tokens=tokens if cold is None else cold,
        warms=warms,
    )


def test_the_costs_follow_the_price_model() -> None:
    costs = idle_costs(SONNET, 100_000, kept_tokens=20_000, cold_tokens=100_000)
    assert costs is not None
    assert costs.warm == pytest.approx((100_000 * 0.3 + 15.0) / 1e6)  # one re-read, one output token
    assert costs.expire == pytest.approx(100_000 * (3.75 - 0.3) / 1e6)  # nothing to prune: it rewrites it all
    survivors = 20_000 + FIXED_ALLOWANCE_TOKENS
    assert costs.compact == pytest.approx((SUMMARY_OUTPUT_TOKENS * 15.0 + survivors * 3.75) / 1e6)
    free = idle_costs(ModelCost(), 100_000, kept_tokens=20_000, cold_tokens=100_000)
    assert free is None  # a local server: nothing billed


def test_expire_is_priced_from_what_the_cold_request_sends() -> None:
    # cold-cache pruning would stub old results: the cold request writes 10k, not 100k tokens
    costs = idle_costs(SONNET, 100_000, kept_tokens=20_000, cold_tokens=10_000)
    assert costs is not None
    assert costs.expire == pytest.approx((10_000 * 3.75 - 100_000 * 0.3) / 1e6)  # less than a warm request
    decision = decided("auto", SONNET, 100_000, cold=10_000)
    assert decision.action == "expire" and "10,000 once the cache has expired" in decision.reason
    shed = decided("auto", SONNET, 100_000, cold=4_000)  # cheaper than the warm next request itself
    assert shed.costs is not None and shed.costs.expire < 0 and "expire -$0.0150" in shed.reason
    # a little pruning does not outweigh re-writing the rest: warming stays cheaper
    some = decided("auto", SONNET, 100_000, cold=60_000)
    assert some.action == "warm"
    # a planned count above the context (it cannot be: pruning only removes) is taken as the context
    over = idle_costs(SONNET, 100_000, kept_tokens=20_000, cold_tokens=150_000)
    assert over is not None and over.expire == pytest.approx(100_000 * (3.75 - 0.3) / 1e6)


def test_auto_picks_the_cheapest_and_says_why() -> None:
    decision = decided("auto", SONNET, 100_000)
    assert decision.action == "warm"  # $0.03 against $0.35 expiring and $0.16 compacting
    assert "warm $0.0300" in decision.reason and "expire $0.3450" in decision.reason
    # a huge context whose re-read costs more than a summary and the kept part's write
    big = decided("auto", SONNET, 900_000)
    assert big.action == "compact"
    # no cache price (re-read at the input price, written at it too): expiring costs nothing more
    uncached = decided("auto", ModelCost(input=1.0, output=2.0), 50_000)
    assert uncached.action == "expire"
    # a context a compaction would keep whole is never compacted
    small = decided("auto", SONNET, 20_000)
    assert small.costs is not None and "compact" not in small.reason


def test_the_user_is_taken_to_be_away_after_max_warms() -> None:
    for policy in ("auto", "warm"):
        assert decided(policy, SONNET, 100_000, warms=MAX_WARMS - 1).action == "warm"
        late = decided(policy, SONNET, 100_000, warms=MAX_WARMS)
        assert late.action == "expire" and "away" in late.reason


def test_forced_policies_and_an_unpriced_model() -> None:
    assert decided("compact", SONNET, 10_000).action == "compact"
    assert decided("warm", SONNET, 900_000).action == "warm"
    free = decided("auto", ModelCost(), 100_000)
    assert free.action == "expire" and free.costs is None and "no prices" in free.reason
    assert decided("warm", ModelCost(), 100_000).action == "warm"


def test_the_lead_before_expiry() -> None:
    assert lead_seconds(300) == 30.0 and lead_seconds(3600) == 30.0 and lead_seconds(10) == 1.0


def test_the_setting() -> None:
    assert settings_from_dict({}).idle_policy == "auto"
    for value in ("auto", "warm", "compact", "off"):
        assert parse_policy(value) == value
        assert settings_from_dict({"idle": {"policy": value}}).idle_policy == value
    with pytest.raises(ValueError, match='"auto" or "warm" or "compact" or "off"'):
        parse_policy("sometimes")


def test_a_bad_setting_is_reported_and_the_default_kept(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    from heron.coding.settings import load_settings

    root = Path(str(tmp_path))
    monkeypatch.setenv("HERON_HOME", str(root / "home"))
    (root / "home").mkdir()
    (root / "project" / ".heron").mkdir(parents=True)
    (root / "project" / ".heron" / "settings.json").write_text('{"idle": {"policy": "never"}}')
    loaded = load_settings(root / "project")
    assert loaded.idle_policy == "auto"
    (warning,) = [w for w in loaded.warnings if "'idle.policy'" in w]
    assert all(f'"{policy}"' in warning for policy in ("auto", "warm", "compact", "off")) and "never" in warning
