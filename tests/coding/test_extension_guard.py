"""An extension cannot freeze or end heron (issue 37, heron.coding.extensions.guard).

In-process sessions with the faux provider: a ``before_compact`` handler that never
returns (a blocking sync call, an ``await`` that never ends) is abandoned at
``extensions.handlerTimeoutMs`` and the compaction goes on; Esc ends the wait at once;
``SystemExit`` and ``KeyboardInterrupt`` from any handler disable the extension and the
session goes on. Waits are checked against the deadline with room to spare, never tight.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from heron.ai.abort import AbortSignal
from heron.ai.providers.faux import FauxProvider, text, tool_call
from heron.ai.types import Context, ToolResultMessage
from heron.coding.extensions import guard
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.context.compaction.summary.summary_text import SUMMARISER_SYSTEM_PROMPT
from heron.session.entries import CompactionEntry
from heron.session.store import SessionStore
from tests.coding.test_extensions import write_ext

ANSWER = "Every detail of the answer, one line after another. " * 150  # ~8k chars
SUMMARY = "## Goal\nAnswer the turns.\n\n## Progress\n- the early turns are answered"
SLEEPS = """
import time

def register(api):
    @api.before_compact
    def stuck(data):
        time.sleep(3600)
"""
AWAITS = """
import asyncio

def register(api):
    @api.before_compact
    async def stuck(data):
        await asyncio.Event().wait()
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HERON_HOME", str(home))
    proj = tmp_path / "proj"
    proj.mkdir()
    return proj


def reply(context: Context) -> Any:
    return text(SUMMARY) if context.system_prompt == SUMMARISER_SYSTEM_PROMPT else text(f"done. {ANSWER}")


def session(project: Path, faux: FauxProvider, timeout_ms: int) -> CodingSession:
    faux.set_fallback(reply)
    settings = {"compaction": {"keepRecentTokens": 2_000, "request": "separate"}, "pruning": {"enabled": False}}
    s = CodingSession(
        cwd=project,
        model=faux.model(context_window=32_768, max_tokens=2_048),
        store=SessionStore.in_memory(project),
        settings=settings_from_dict({**settings, "extensions": {"handlerTimeoutMs": timeout_ms}}),
        home=project.parent / "home",
    )
    s.extensions.load(trusted=False)
    return s


def warnings(s: CodingSession) -> list[str]:
    return list(s.extensions.warnings)


async def with_history(s: CodingSession) -> None:
    for n in range(4):
        await s.prompt(f"turn {n}: go on")


@pytest.mark.parametrize("source", [SLEEPS, AWAITS], ids=["sync-sleep", "async-forever"])
async def test_a_before_compact_handler_that_never_returns_is_abandoned(
    project: Path, faux: FauxProvider, source: str
) -> None:
    write_ext(project.parent / "home" / "extensions", "stuck", source)
    s = session(project, faux, timeout_ms=1_000)
    await with_history(s)
    started = time.monotonic()
    end = await asyncio.wait_for(s.compact(), timeout=60)
    took = time.monotonic() - started
    assert end is not None and SUMMARY in (end.summary or ""), "heron's own compaction ran"
    assert took >= 0.9  # the handler had its second
    assert any(isinstance(e, CompactionEntry) for e in s.store.entries())
    (warning,) = warnings(s)
    assert "stuck" in warning and "did not return within 1 s" in warning and "handlerTimeoutMs" in warning
    # disabled: the next compaction does not wait for it again
    await with_history(s)
    started = time.monotonic()
    await asyncio.wait_for(s.compact(), timeout=60)
    assert time.monotonic() - started < 0.9 * 30


async def test_esc_ends_the_wait_for_a_blocking_handler(project: Path, faux: FauxProvider) -> None:
    write_ext(project.parent / "home" / "extensions", "stuck", SLEEPS)
    s = session(project, faux, timeout_ms=120_000)
    await with_history(s)
    # an automatic compaction, with the turn's signal: Esc aborts it
    signal = AbortSignal()
    compaction = asyncio.ensure_future(s.context_owner.compact(reason="threshold", signal=signal))
    await asyncio.sleep(0.3)
    started = time.monotonic()
    signal.abort("Esc")  # the event loop is free to take it: the handler blocks its own thread
    end = await asyncio.wait_for(compaction, timeout=30)
    assert time.monotonic() - started < 10  # not the 120 s deadline
    assert end.entry_id is None and end.skipped == "cancelled by an abort"
    # a manual /compact is cancelled as a task (the interactive mode's Esc, rpc abort)
    manual = asyncio.ensure_future(s.compact())
    await asyncio.sleep(0.3)
    manual.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(manual, timeout=30)
    assert not warnings(s), "an abort is the user's, not the extension's fault"


async def test_system_exit_and_keyboard_interrupt_in_handlers_do_not_end_heron(
    project: Path, faux: FauxProvider
) -> None:
    write_ext(
        project.parent / "home" / "extensions",
        "quitter",
        """
        import sys

        def register(api):
            @api.before_tool_call
            def leave(call):
                sys.exit(3)
        """,
    )
    write_ext(
        project.parent / "home" / "extensions",
        "interrupter",
        """
        def register(api):
            @api.on("tool_execution_end")
            def stop(event):
                raise KeyboardInterrupt

            @api.after_tool_call
            async def later(call, result):
                raise SystemExit("bye")
        """,
    )
    (project / "a.txt").write_text("hello\n")
    s = session(project, faux, timeout_ms=5_000)
    faux.queue(tool_call("read", {"path": "a.txt"}), text("read it"), text("still here"))
    await s.prompt("read a.txt")
    results = [m for m in s.messages if isinstance(m, ToolResultMessage)]
    assert results and "hello" in str(results[0].content)  # the call went on as if they were not there
    said = "\n".join(warnings(s))
    assert "quitter" in said and "SystemExit: 3" in said
    assert "interrupter" in said and ("KeyboardInterrupt" in said or "SystemExit: bye" in said)
    await s.prompt("and again")
    assert s.messages[-1].text() == "still here"  # type: ignore[union-attr]


def test_a_blocking_event_handler_holds_the_session_at_most_its_deadline() -> None:
    import threading

    lock = threading.Lock()
    started = time.monotonic()
    out = guard.call_now(lambda event: time.sleep(3600), ("event",), timeout=0.5, lock=lock)
    assert time.monotonic() - started < 10
    assert isinstance(out.failure, str) and "did not return within 0.5 s" in out.failure
    ok = guard.call_now(lambda event: event * 2, ("ab",), timeout=5, lock=threading.Lock())
    assert ok.value == "abab" and ok.failure is None
