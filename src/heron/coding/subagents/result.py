"""What a sub-agent gives back to its parent: its final answer, bounded.

The answer is capped at 8,000 characters or 10% of the parent's window (about four
characters a token), whichever is smaller, the notice included, so a chatty child cannot
crowd out the parent's context; and never above the cap of any one tool result
(``toolLimits``), which would otherwise cut the answer again and lose this notice. A
longer answer is written whole to the parent's spill directory and the result holds a
preview plus where the whole answer and the child's session are. A child that failed
returns an error result with what it did so far.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from heron.agent.messages import AgentMessage
from heron.ai.types import AssistantMessage, ToolResultMessage
from heron.session.private_files import write_private_text

MAX_RESULT_CHARS = 8_000
WINDOW_SHARE = 0.10
CHARS_PER_TOKEN = 4
MAX_STEPS_SHOWN = 20


def result_cap(window_tokens: int, result_chars: int) -> int:
    """``result_chars``: the cap of one tool result in the parent's limits for its window."""
    share = int(window_tokens * WINDOW_SHARE * CHARS_PER_TOKEN)
    return max(200, min(MAX_RESULT_CHARS, share, result_chars))


def cap_answer(answer: str, cap: int, spill_path: Path, session_ref: str) -> tuple[str, str | None]:
    """``(text, spill file or None)``; ``text`` is at most ``cap`` characters."""
    if len(answer) <= cap:
        return answer, None
    spilled: str | None = None
    try:
        write_private_text(spill_path, answer)
        spilled = str(spill_path)
        where = f"the whole answer is in {spilled} (read it with offset/limit)"
    except OSError as exc:
        where = f"the whole answer could not be saved ({exc}); it is the last message of the child's session"
    notice = (
        f"\n\n[Sub-agent answer cut: {len(answer):,} characters, showing the first part; {where}. "
        f"Child session: {session_ref}]"
    )
    room = max(0, cap - len(notice))
    return answer[:room] + notice, spilled


def final_answer(messages: Sequence[AgentMessage]) -> AssistantMessage | None:
    return next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)


def progress_report(messages: Sequence[AgentMessage], cap: int) -> str:
    """What a failed child did before it stopped: its tool calls and their outcome, and
    the last text it wrote, within ``cap`` characters."""
    outcome = {m.tool_call_id: m.is_error for m in messages if isinstance(m, ToolResultMessage)}
    steps: list[str] = []
    last_text = ""
    for message in messages:
        if not isinstance(message, AssistantMessage):
            continue
        for call in message.tool_calls():
            state = "failed" if outcome.get(call.id) else ("done" if call.id in outcome else "not finished")
            args = ", ".join(f"{k}={str(v)[:60]!s}" for k, v in call.arguments.items())
            steps.append(f"- {call.name}({args}): {state}")
        if message.text().strip():
            last_text = message.text().strip()
    if not steps and not last_text:
        return "It had done nothing yet."
    shown = steps[-MAX_STEPS_SHOWN:]
    lines = [f"Tool calls ({len(steps)}{', the last ' + str(len(shown)) if len(shown) < len(steps) else ''}):"]
    lines += shown or ["- none"]
    if last_text:
        lines += ["Its last words:", last_text]
    text = "\n".join(lines)
    return text if len(text) <= cap else text[: max(0, cap - 20)] + "\n[...cut]"
