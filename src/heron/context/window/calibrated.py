"""Counting in the server's tokens: the ratio learnt from its own counts.

heron estimates tokens as characters / 4; a local server's tokenizer can count nearly
twice that for plain words, or half of it for code. Each answer's usage (and, before the
first request to a small local window, the server's ``/tokenize``) is one measurement of
the server's tokens per estimated token; :mod:`heron.context.window.calibration` folds them into a
running ratio, recorded in the session whenever it moves, so a resumed process counts the
same.

:class:`CalibratedCounts` is a part of :class:`~heron.context.policy.ContextPolicy`, kept in
a module of its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from heron.agent.messages import AgentMessage
from heron.ai.types import AssistantMessage, Model, StopReason
from heron.context.records.decisions import DECISION_CUSTOM_TYPE, ContextDecisions, calibration_data
from heron.context.window import calibration
from heron.session.entries import iso_to_ms
from heron.session.store import SessionStore


class CalibratedCounts:
    """The ratio of the current model, and how a measurement moves it."""

    decisions: ContextDecisions
    store: SessionStore

    @property
    def model(self) -> Model:
        raise NotImplementedError

    @property
    def model_key(self) -> str:
        raise NotImplementedError

    def raw_estimate(self, view: Sequence[AgentMessage]) -> int:
        raise NotImplementedError

    @property
    def ratio(self) -> float:
        """The server's tokens per chars/4-estimated token for this model (1.0 until an
        answer's usage calibrated it, :mod:`heron.context.window.calibration`)."""
        found = self.decisions.calibration.get(self.model_key)
        return found[0] if found is not None else 1.0

    def scaled(self, estimated: int) -> int:
        """An estimate in the server's tokens."""
        return math.ceil(estimated * self.ratio)

    def calibrate(self, answer: AssistantMessage, view: Sequence[AgentMessage]) -> None:
        """Fold the server's count of the request that produced ``answer`` (its usage)
        against heron's estimate of ``view``, the view it carried, into the model's ratio;
        recorded in the session when it moved (a restart then counts the same)."""
        from heron.ai.providers.http import is_local_url  # loaded by the request already

        usage, model = answer.usage, self.model
        if not (model.base_url and is_local_url(model.base_url)):
            return  # hosted providers' counts anchor each request already; local tokenizers vary the most
        if answer.stop_reason in (StopReason.ERROR, StopReason.ABORTED) or (answer.provider, answer.model) != (
            model.provider,
            model.id,
        ):
            return
        prompt = usage.input + usage.cache_read + usage.cache_write
        self.fold_sample(calibration.sample(prompt, self.raw_estimate(view)))

    @property
    def calibrated(self) -> bool:
        return self.model_key in self.decisions.calibration

    def fold_sample(self, value: float | None) -> None:
        """One measurement of the server's tokens per estimated token (an answer's usage,
        or the server's ``/tokenize`` before the first request) folded into the model's
        ratio, recorded in the session when it moved."""
        if value is None:
            return
        recorded = self.decisions.calibration.get(self.model_key)
        current = calibration.fold(recorded, value)
        if calibration.worth_recording(recorded, current):
            entry = self.store.append_custom(DECISION_CUSTOM_TYPE, calibration_data(self.model_key, *current))
            self.decisions.apply(entry.data, iso_to_ms(entry.timestamp))
