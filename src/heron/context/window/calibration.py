"""Counting like the server: heron's chars/4 estimate calibrated per model.

heron estimates tokens at four characters each; a real tokenizer differs (Gemma's counts
a 38 KB prompt as 6,525 tokens where chars/4 says 9,500; a code-heavy prompt can count
more than chars/4). After every answer whose usage gives the server's count of the
prompt, the ratio of that count to heron's own estimate of the same request is folded
into a running ratio for the model, recorded in the session as a decision (``op:
"calibration"``) when it moves by more than :data:`RECORD_CHANGE`, so a resumed process
counts the same (docs/context.md, "Counting tokens"). The policy multiplies every
estimated part of a count by it (the part a provider's report anchors is the server's
own number already).
"""

from __future__ import annotations

MIN_SAMPLE_TOKENS = 256  # a smaller request is mostly framing: it says little about the tokenizer
MAX_SAMPLES = 8  # the running ratio weighs the latest requests, not the whole history
RECORD_CHANGE = 0.03  # a ratio that moved less than this is not recorded again
RATIO_RANGE = (0.2, 5.0)  # beyond this the report is not a measurement (a proxy, a constant)


def sample(server_prompt_tokens: int, estimated_tokens: int) -> float | None:
    """The server's tokens per heron-estimated token for one request, when it is a measurement."""
    if estimated_tokens < MIN_SAMPLE_TOKENS or server_prompt_tokens <= 0:
        return None
    ratio = server_prompt_tokens / estimated_tokens
    low, high = RATIO_RANGE
    return ratio if low <= ratio <= high else None


def fold(prior: tuple[float, int] | None, value: float) -> tuple[float, int]:
    """The running ratio after one more sample (the mean of the last :data:`MAX_SAMPLES`, about)."""
    if prior is None:
        return value, 1
    ratio, samples = prior
    weight = min(samples, MAX_SAMPLES - 1)
    return (ratio * weight + value) / (weight + 1), samples + 1


def worth_recording(recorded: tuple[float, int] | None, current: tuple[float, int]) -> bool:
    if recorded is None:
        return True
    return abs(current[0] - recorded[0]) > RECORD_CHANGE * recorded[0]
