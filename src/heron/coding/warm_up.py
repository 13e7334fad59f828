"""Loading, while a session waits for its first prompt, what its first turn would otherwise
load on the critical path (docs/architecture.md, "The critical path of a turn").

A process that waits for its first command (``--mode rpc``) has idle time between its start
and the first prompt; ``heron -p`` has none, so it never calls this. (The interactive screen
does not either: the thread would hold the interpreter while prompt_toolkit takes the
terminal, and a line typed before that is read with the terminal's own echo and line ending.) What
is loaded here, in a daemon thread: the model's provider adapter and httpx, what httpx
imports on its first connection, the executor ``asyncio.to_thread`` runs on, the tools' JSON
schemas (every request carries them, and the first prompt counts them) and parameter models
(pydantic, which the first tool call validates its arguments with), and, in a session
that takes checkpoint snapshots, the shadow-repository code the first snapshot imports.
Everything is best effort: a failure here is left for the turn to meet and report.
"""

from __future__ import annotations

import concurrent.futures
import importlib
import logging
import threading
from typing import TYPE_CHECKING, Protocol

from heron.ai.providers.http import load_transport
from heron.ai.registry import get_provider

if TYPE_CHECKING:
    from heron.agent.agent import Agent
    from heron.coding.control import Control
    from heron.session.store import SessionStore


class WarmedSession(Protocol):
    """What the warm-up reads of a session: the agent's tools, and whether its first turn
    takes a checkpoint snapshot (control's checkpoints, a store with a file)."""

    @property
    def agent(self) -> Agent: ...

    @property
    def control(self) -> Control: ...

    @property
    def store(self) -> SessionStore: ...


log = logging.getLogger(__name__)

# The shadow repository's code and the git backend the first snapshot runs (imported by the
# snapshot's thread otherwise, competing with the first request for the interpreter).
_SNAPSHOT_MODULES = ("heron.coding.checkpoints.repo", "heron.coding.checkpoints.git_backend")


def start_warm_up(api: str, session: WarmedSession | None = None) -> concurrent.futures.Future[None]:
    """Load what a first turn with ``api`` needs in a thread; the future is done when that is
    over (a run that starts earlier may wait for it rather than import on the event loop)."""
    done: concurrent.futures.Future[None] = concurrent.futures.Future()

    def load() -> None:
        try:
            warm_up(api, session)
        except Exception:  # the turn will meet it and say what is wrong
            log.debug("warm-up failed", exc_info=True)
        finally:
            done.set_result(None)

    threading.Thread(target=load, name="heron-warm-up", daemon=True).start()
    return done


def warm_up(api: str, session: WarmedSession | None = None) -> None:
    """The loading itself (in the caller's thread)."""
    get_provider(api)
    load_transport()
    importlib.import_module("concurrent.futures.thread")  # asyncio.to_thread's executor
    if session is None:
        return
    for tool in list(session.agent.state.tools):
        tool.definition()  # the JSON schema, cached per parameter model
        tool.parameters  # noqa: B018 - the model, imported on first use (a built-in tool's loads pydantic)
    if session.control.checkpoints.enabled and session.store.path is not None:
        for name in _SNAPSHOT_MODULES:
            importlib.import_module(name)
