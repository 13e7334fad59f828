"""The ``run_end`` event: a run's outcome as json mode's last line and rpc's end of a
prompt (docs/rpc.md). One shape for both, built from :class:`RunOutcome` and nothing
else, so the two modes cannot drift."""

from __future__ import annotations

from typing import Any

from heron.ai.types import StopReason
from heron.coding.outcome import RunOutcome


def run_end_json(outcome: RunOutcome) -> dict[str, Any]:
    """``stop_reason``; ``error`` (the explanation every mode shows) and ``error_kind``
    when it is ``error``; ``answer`` when it is ``stop`` or ``length``; ``unsent``."""
    failed = outcome.stop_reason == StopReason.ERROR
    return {
        "type": "run_end",
        "stop_reason": str(outcome.stop_reason),
        "error": outcome.explanation if failed else None,
        "error_kind": str(outcome.error_kind) if failed and outcome.error_kind is not None else None,
        "answer": outcome.answer,
        "unsent": list(outcome.unsent),
    }
