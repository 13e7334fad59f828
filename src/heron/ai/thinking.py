"""What each thinking level means to each provider family.

One table, so that ``--thinking high`` buys roughly the same effort whichever model
answers. Budgets are Anthropic/Gemini token budgets; efforts are OpenAI's names.
"""

from __future__ import annotations

from heron.ai.types import ThinkingLevel

BUDGET_TOKENS: dict[ThinkingLevel, int] = {
    "off": 0,
    "minimal": 1_024,
    "low": 4_096,
    "medium": 10_240,
    "high": 20_480,
    "xhigh": 32_000,
}

OPENAI_EFFORT: dict[ThinkingLevel, str] = {
    "off": "none",
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
}


def budget_tokens(level: ThinkingLevel, max_tokens: int) -> int:
    """A thinking budget that leaves room for the answer within ``max_tokens``.

    Anthropic requires budget < max_tokens and at least 1,024.
    """
    budget = BUDGET_TOKENS[level]
    if budget == 0:
        return 0
    return max(1_024, min(budget, max_tokens - 1_024))
