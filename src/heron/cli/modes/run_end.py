"""The ``run_end`` event: a run's outcome as json mode's last line and rpc's end of a
prompt (docs/rpc.md). One shape for both, built from :class:`RunOutcome` and nothing
else, so the two modes cannot drift.

``run_end`` names the answer but does not repeat it: the text is already in the stream,
whole, in the last assistant ``message_end`` (pi's way of reading it), or in the ``goal``
event when a ``/goal`` command answered in place of the model. Writing it a third time
made json and rpc output three times a long answer (docs/rpc.md, "Deltas, not the whole
message"). :func:`run_answers` reads it back from a stream, for every program that needs
the text: the one place that knows where it is."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from heron.ai.types import StopReason
from heron.coding.outcome import RunOutcome

ANSWERED = (str(StopReason.STOP), str(StopReason.LENGTH))


def run_end_json(outcome: RunOutcome) -> dict[str, Any]:
    """``stop_reason``; ``error`` (the explanation every mode shows) and ``error_kind``
    when it is ``error``; when it is ``stop`` or ``length``, ``answer_chars`` (the
    answer's length in characters) and ``answer_timestamp`` (the ``timestamp`` of the
    assistant message that holds it; None for a ``/goal`` reply); ``unsent``; ``goal``:
    how the goal loop ended when one ran (``steps``, ``max_turns``, ``stop``, ``evidence``),
    else None."""
    failed = outcome.stop_reason == StopReason.ERROR
    answer = outcome.answer
    from_message = answer is not None and bool(outcome.answers)
    return {
        "type": "run_end",
        "stop_reason": str(outcome.stop_reason),
        "error": outcome.explanation if failed else None,
        "error_kind": str(outcome.error_kind) if failed and outcome.error_kind is not None else None,
        "answer_chars": None if answer is None else len(answer),
        "answer_timestamp": outcome.answers[-1].timestamp if from_message else None,
        "unsent": list(outcome.unsent),
        "goal": outcome.goal,
    }


def run_answers(events: Iterable[Mapping[str, Any]]) -> list[str | None]:
    """The answer of each run in a json or rpc event stream, one per ``run_end``, in
    order: the text of the run's last assistant ``message_end`` (its text blocks joined),
    else the reply of its ``goal`` event; None for a run that did not end with ``stop``
    or ``length`` (an error, an abort), as ``run_end`` had it."""
    answers: list[str | None] = []
    text: str | None = None
    reply: str | None = None
    for event in events:
        kind = event.get("type")
        message = event.get("message")
        if kind == "message_end" and isinstance(message, Mapping) and message.get("role") == "assistant":
            text = _text(message.get("content"))
        elif kind == "goal" and isinstance(event.get("reply"), str):
            reply = event["reply"]
        elif kind == "run_end":
            answer = text if text is not None else reply
            answers.append(answer if event.get("stop_reason") in ANSWERED else None)
            text = reply = None
    return answers


def answer_of(events: Iterable[Mapping[str, Any]]) -> str | None:
    """The answer of the last run in a stream (json mode's whole output, or rpc's up to
    a prompt's ``run_end``); None when no run ended or the last one did not answer."""
    answers = run_answers(events)
    return answers[-1] if answers else None


def answer_at(events: Sequence[Mapping[str, Any]], end: Mapping[str, Any]) -> str | None:
    """The answer of the run that ``end`` closes (a ``run_end`` that is one of ``events``,
    the same object): for a client that keeps every line it read."""
    for index, event in enumerate(events):
        if event is end:
            return answer_of(events[: index + 1])
    raise ValueError("that run_end is not one of the events")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(b["text"] for b in content if isinstance(b, Mapping) and b.get("type") == "text")
