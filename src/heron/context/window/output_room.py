"""The room a request leaves for its answer: the output limit, the least a request needs
room for, the cap sent with it, and what to say when even that does not fit.

Pure arithmetic on the window and the model, apart from the policy that asks it, so the
memory flush and the background summary size their own requests by the same margin.
"""

from __future__ import annotations

from heron.ai.types import Model

OUTPUT_MARGIN_SHARE = 0.03  # estimates are chars/4: leave room for the provider's own count
MIN_OUTPUT_TOKENS = 1_024
MIN_OUTPUT_WINDOW_SHARE = 0.125


def output_limit(model: Model, window: int) -> int:
    """The most a request may ask for: the model's ``max_tokens`` as configured, or - when
    nobody configured it - at most a quarter of the window (a learned one too). A
    description without one (0: unknown, as a library caller may give it) gets the
    quarter, not a cap of one token."""
    if model.max_tokens_configured and model.max_tokens > 0:
        return model.max_tokens
    known = model.max_tokens if model.max_tokens > 0 else window // 4
    return max(1, min(known, window // 4))


def min_output(limit: int, window: int) -> int:
    """The output a request needs room for at least: :data:`MIN_OUTPUT_TOKENS`, less when
    the configured ``limit`` is less (it is honoured, so that much is enough) or the window
    is small (an eighth of it: a 4k window keeps room for the prompt)."""
    return max(1, min(MIN_OUTPUT_TOKENS, limit, int(window * MIN_OUTPUT_WINDOW_SHARE)))


def output_cap(tokens: int, window: int, limit: int, minimum: int) -> int:
    """``min(limit, window - input - margin)``, at least ``minimum`` - unless less is left
    and still some: then what is left, since the margin is what keeps a request the server
    counts a little higher than heron within its window."""
    room = window - tokens - int(window * OUTPUT_MARGIN_SHARE)
    floor = min(minimum, room) if room > 0 else minimum
    return max(floor, min(limit, room))


def does_not_fit(tokens: int, window: int, fixed: int, minimum: int, why: str) -> str:
    """Why a request cannot be sent, and what to change: the fixed part alone (system
    prompt and tools) when that is what leaves no room, else the conversation."""
    if fixed + minimum > window:
        return (
            f"the system prompt and tool definitions alone take {fixed:,} tokens of the {window:,}-token "
            f"window, with no room for an answer: give the model a larger window (llama-server -c, "
            "Ollama num_ctx, --context-window), fewer tools (--tools read,bash) or a shorter --system-prompt"
        )
    return (
        f"the context ({tokens:,} tokens) does not fit the {window:,}-token window even after "
        f"pruning and compaction ({why}); "
        "run /compact with a narrower focus (from a shell: heron compact --continue FOCUS), start a new "
        "session, or give the model a larger window"
    )
