"""Counting in the server's tokens: the ratio learnt from its own counts.

heron estimates tokens as characters / 4; a local server's tokenizer can count nearly
twice that for plain words, or half of it for code. Each answer's usage (and, before the
first request to a small local window, the server's ``/tokenize``) is one measurement of
the server's tokens per estimated token; :mod:`heron.context.window.calibration` folds them into a
running ratio, recorded in the session whenever it moves, so a resumed process counts the
same.

:class:`Calibration` is held by :class:`~heron.context.policy.ContextPolicy`; the ratio
itself is read by the counts (:attr:`heron.context.sizes.WindowSizes.ratio`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from heron.agent.messages import AgentMessage
from heron.ai.providers.http import is_local_url
from heron.ai.types import AssistantMessage, StopReason
from heron.context.records.decisions import calibration_data
from heron.context.records.recorder import DecisionRecorder
from heron.context.window import calibration

if TYPE_CHECKING:  # the window model sits at the layer's top, above the stages
    from heron.context.sizes import WindowSizes


class Calibration:
    """How a measurement of the server's tokens moves the current model's ratio."""

    def __init__(self, sizes: WindowSizes, recorder: DecisionRecorder) -> None:
        self.sizes = sizes
        self.recorder = recorder

    def calibrate(self, answer: AssistantMessage, view: Sequence[AgentMessage]) -> None:
        """Fold the server's count of the request that produced ``answer`` (its usage)
        against heron's estimate of ``view``, the view it carried, into the model's ratio;
        recorded in the session when it moved (a restart then counts the same)."""
        usage, model = answer.usage, self.sizes.model
        if not (model.base_url and is_local_url(model.base_url)):
            return  # hosted providers' counts anchor each request already; local tokenizers vary the most
        if answer.stop_reason in (StopReason.ERROR, StopReason.ABORTED) or (answer.provider, answer.model) != (
            model.provider,
            model.id,
        ):
            return
        prompt = usage.input + usage.cache_read + usage.cache_write
        self.fold_sample(calibration.sample(prompt, self.sizes.raw_estimate(view)))

    @property
    def calibrated(self) -> bool:
        return self.sizes.model_key in self.recorder.decisions.calibration

    def fold_sample(self, value: float | None) -> None:
        """One measurement of the server's tokens per estimated token (an answer's usage,
        or the server's ``/tokenize`` before the first request) folded into the model's
        ratio, recorded in the session when it moved."""
        if value is None:
            return
        key = self.sizes.model_key
        recorded = self.recorder.decisions.calibration.get(key)
        current = calibration.fold(recorded, value)
        if calibration.worth_recording(recorded, current):
            self.recorder.record_unordered(calibration_data(key, *current))
