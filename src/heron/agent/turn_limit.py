"""How many model calls one prompt may make before the run is stopped.

A model that never stops asking for tools would otherwise send requests until someone
kills heron (1,490 requests in 90 s were seen). The loop counts every model call it is
about to send against :class:`TurnLimit`; when the count is spent it sends nothing more
and ends the run with a failed answer of kind :data:`TURN_LIMIT_KIND`, whose text says
what stopped it. That answer is never sent to a model (failed answers are skipped when
requests are built), so the session stays valid and the next prompt goes on from the
last tool results.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from heron.ai.overflow import ErrorKind

TURN_LIMIT_KIND = ErrorKind.TURN_LIMIT.value
# Another allowance a run spends (a goal's token budget): (stop text, error kind) once spent.
LimitGate = Callable[[], tuple[str, str] | None]


@dataclass
class TurnLimit:
    """The allowance of one prompt: ``max_turns`` calls (``None``: no limit), ``used`` so far.

    The agent resets ``used`` for each new prompt and keeps it across ``continue_()``, so
    a retry after an error does not buy a prompt a fresh allowance."""

    max_turns: int | None = None
    used: int = 0
    gate: LimitGate | None = None  # checked before each call too; set by whoever owns that allowance
    stopped: tuple[str, str] | None = None  # why the last ``take`` refused: (text, error kind)

    def __post_init__(self) -> None:
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError(f"max turns must be at least 1, got {self.max_turns}")

    def take(self) -> bool:
        """Count one model call; False (and nothing counted) when the allowance - or the
        gate's - is spent (:meth:`stop_text` and :meth:`stop_kind` then say which)."""
        self.stopped = None
        if self.max_turns is not None and self.used >= self.max_turns:
            self.stopped = (self._turns_text(), TURN_LIMIT_KIND)
            return False
        if self.gate is not None and (stop := self.gate()) is not None:
            self.stopped = stop
            return False
        self.used += 1
        return True

    def stop_text(self) -> str:
        return self.stopped[0] if self.stopped is not None else self._turns_text()

    def stop_kind(self) -> str:
        return self.stopped[1] if self.stopped is not None else TURN_LIMIT_KIND

    def _turns_text(self) -> str:
        return (
            f"stopped after {self.used} model calls: the limit for one prompt "
            "(--max-turns / limits.maxTurns) was reached. The session is saved; "
            "continue it with another prompt (heron -p --continue) or raise the limit."
        )
