"""The goal's evaluator (``goal.evaluator``): a cheap model that judges after each step of
the goal loop whether the goal is met.

It sees the goal and the step just taken - the calls the model made, one line each, and
its answer - never the whole conversation, so its request stays small whatever the
session's size. It answers with JSON: ``{"met": …, "reason": …}``. "Met" ends the loop as
the model's own ``complete`` would; otherwise its reason rides the next continuation and
steers the step. An evaluator that fails (no such model, an error, an answer that is not
the JSON asked for) judges nothing: the loop goes on with the fixed continuation, and the
failure is recorded with the evaluation (docs/continuity.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from heron.agent.messages import AgentMessage
from heron.ai.models import ModelNotFoundError, ModelRegistry
from heron.ai.types import AssistantMessage, Context, Model, StopReason, TextContent, ToolResultMessage, UserMessage
from heron.context.continuity.recent_steps import main_argument, outcome_line

if TYPE_CHECKING:
    from heron.coding.requests import RequestPath

SYSTEM_PROMPT = (
    "You judge whether a coding agent has met the goal its user set. You are shown the goal and the "
    "agent's latest step: the tools it called and its answer. Reply with one JSON object and nothing "
    'else: {"met": true or false, "reason": "one or two sentences: why; when not met, what is left to do"}. '
    "Say met only when the step shows the goal is reached, not when the agent merely says so."
)
MAX_TOKENS = 400
MAX_ANSWER_CHARS = 6_000
MAX_CALL_LINES = 40
CACHE_SUFFIX = "/goal-check"  # its own prompt-cache key: it shares no prefix with the conversation
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Judgement:
    """What the evaluator said: ``met``, its ``reason``, the model (``provider/id``), and
    ``error`` when it could not judge (then ``met`` is False and ``reason`` None)."""

    met: bool
    reason: str | None
    model: str
    error: str | None = None


class EvaluatorHost(Protocol):
    """What the evaluator uses of a session: its model and key (the default evaluator, and
    the key a model of the same provider shares) and its request path (the check is a side
    request, traced and checked like every other)."""

    @property
    def model(self) -> Model: ...

    @property
    def api_key(self) -> str | None: ...

    @property
    def requests(self) -> RequestPath: ...


def evaluator_model(session: EvaluatorHost, ref: str) -> tuple[Model, str | None]:
    """The model ``ref`` names and its key (the session's, for a model of its provider).
    ``ModelNotFoundError`` for a name no provider has."""
    current = session.model
    if ref.strip() in (current.id, current.ref):
        return current, session.api_key
    registry = ModelRegistry.load()
    found = registry.find(ref)
    return found, session.api_key if found.provider == current.provider else registry.api_key(found)


def step_text(goal: str, step: Sequence[AgentMessage]) -> str:
    """What the evaluator is shown: the goal, the calls of the step, the last answer."""
    results = {m.tool_call_id: m for m in step if isinstance(m, ToolResultMessage)}
    calls: list[str] = []
    answer = ""
    for message in step:
        if not isinstance(message, AssistantMessage) or message.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
            continue
        for call in message.tool_calls():
            argument = main_argument(call)
            calls.append(f"- {call.name} {argument}".rstrip() + f" -> {outcome_line(results.get(call.id))}")
        answer = message.text().strip() or answer
    if len(answer) > MAX_ANSWER_CHARS:
        answer = answer[: MAX_ANSWER_CHARS - 1] + "…"
    shown = calls[-MAX_CALL_LINES:]
    lines = [f"<goal>\n{goal}\n</goal>", "", "<step>", "Tool calls (oldest first):"]
    lines += shown or ["(none)"]
    lines += ["", "Answer:", answer or "(no text)", "</step>"]
    return "\n".join(lines)


def parse_judgement(text: str, model: str) -> Judgement:
    """The JSON object in the evaluator's answer (fenced or not)."""
    match = _OBJECT.search(text)
    try:
        data = json.loads(match.group(0)) if match is not None else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("met"), bool):
        return Judgement(False, None, model, error=f'the answer is not {{"met": …, "reason": …}}: {text[:200]!r}')
    reason = data.get("reason")
    return Judgement(data["met"], reason.strip() if isinstance(reason, str) and reason.strip() else None, model)


async def evaluate(session: EvaluatorHost, ref: str, goal: str, step: Sequence[AgentMessage]) -> Judgement:
    """Ask the evaluator about ``step``; never raises (a failure is a :class:`Judgement` with ``error``)."""
    try:
        model, api_key = evaluator_model(session, ref)
    except (ModelNotFoundError, LookupError, ValueError) as exc:
        return Judgement(False, None, ref, error=f"goal.evaluator {ref!r}: {exc}")
    name = f"{model.provider}/{model.id}"
    context = Context(
        system_prompt=SYSTEM_PROMPT,
        messages=[UserMessage(content=[TextContent(text=step_text(goal, step))])],
    )
    requests = session.requests
    options = requests.side_options(MAX_TOKENS)
    options.api_key = api_key
    options.session_id = f"{options.session_id}{CACHE_SUFFIX}" if options.session_id else None
    try:
        answer = await requests.side_stream("goal_check")(model, context, options).result()
    except Exception as exc:  # noqa: BLE001 - a strict context check, a provider bug: no judgement
        return Judgement(False, None, name, error=f"{type(exc).__name__}: {exc}")
    if answer.stop_reason in (StopReason.ERROR, StopReason.ABORTED):
        return Judgement(False, None, name, error=answer.error_message or "the request failed")
    return parse_judgement(answer.text(), name)
