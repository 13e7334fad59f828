"""Persisting an agent's run: every message at ``message_end``, in order (docs/sessions.md).

The agent emits events synchronously, so appending in the listener writes each message
the moment it is final, before the loop moves on: a crash at any point loses at most the
message being streamed. Before each message the agent's model and thinking level are
compared with those recorded on the session's path (the latest ``model_change`` or
assistant message, the latest ``thinking_level_change``); a difference is recorded as a
``model_change`` / ``thinking_level_change`` entry first, so reopening the session restores
the settings the messages were produced with.

A new session store writes its file with the first message it is given (the store
decides: :func:`heron.session.store.starts_file`). The agent ends the prompt's message
before it sends the request, so the header and the user's prompt are on disk before the
first request of every new session leaves - in every mode, sub-agents and batch tasks
included - and a process killed while it waits for the first answer leaves a session
whose last entry is the unanswered prompt (docs/sessions.md, "An unanswered prompt").
pi writes nothing until the first assistant message, and loses the prompt then.

When a message cannot be saved (a full disk, a folder or file heron may not write) the
recorder aborts the run with that reason, so no further tool runs and no further request
is sent with a history the session file does not have; see :meth:`SessionRecorder._on_event`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from heron.agent.events import AgentEvent, MessageEndEvent
from heron.session.entries import ModelRef
from heron.session.errors import SessionWriteError

if TYPE_CHECKING:
    from collections.abc import Callable

    from heron.agent.agent import Agent
    from heron.session.store import SessionStore

log = logging.getLogger("heron.session")


class SessionRecorder:
    """``SessionRecorder(agent, store)`` subscribes at once; :meth:`close` stops recording."""

    def __init__(self, agent: Agent, store: SessionStore, *, record_settings: bool = True) -> None:
        self.agent = agent
        self.store = store
        self.record_settings = record_settings
        self.errors: list[BaseException] = []
        self._unsubscribe: Callable[[], None] | None = agent.subscribe(self._on_event)

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def __enter__(self) -> SessionRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def sync_settings(self) -> None:
        """Record the agent's model and thinking level if the path says otherwise."""
        recorded_model, recorded_thinking = self.store.current_settings()
        model = self.agent.state.model
        current = ModelRef(model.provider, model.id)
        if recorded_model != current:
            self.store.append_model_change(current.provider, current.model_id)
        level = self.agent.state.thinking_level
        if recorded_thinking != level:
            self.store.append_thinking_level_change(level)

    @property
    def error(self) -> BaseException | None:
        """The failure that stopped recording (None while every message is saved)."""
        return self.errors[0] if self.errors else None

    def _on_event(self, event: AgentEvent) -> None:
        if not isinstance(event, MessageEndEvent) or self.errors:
            return
        try:
            if self.record_settings:
                self.sync_settings()
            self.store.append_message(event.message)
        except Exception as exc:  # noqa: BLE001 - every failure to save stops the run the same way
            # A message that cannot be saved must not be followed by work whose record is
            # lost too: abort the run (the tool calls of this message do not start, the
            # next request is not sent) with the reason, and record nothing more. The
            # reason reaches the user as the run's error; the modes exit non-zero.
            self.errors.append(exc)
            reason = str(exc) if isinstance(exc, SessionWriteError) else f"cannot save the session: {exc}"
            log.debug("stopping the run: %s", reason)
            self.agent.abort(reason)
