"""A re-read of an unchanged file: the short stub across a restart too, and only while
the earlier content is in the view being sent (issue 10, item b)."""

from __future__ import annotations

from pathlib import Path

from heron.ai.providers.faux import FauxProvider, text, tool_call
from heron.ai.types import ToolResultMessage
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.session.store import SessionStore

UNCHANGED = "[File unchanged since you last read it"


def session(project: Path, home: Path, faux: FauxProvider, store: SessionStore) -> CodingSession:
    return CodingSession(
        cwd=project,
        model=faux.model(context_window=128_000),
        store=store,
        home=home,
        settings=settings_from_dict({}),
        tools=["read", "bash"],
    )


def results(s: CodingSession) -> list[ToolResultMessage]:
    return [m for m in s.messages if isinstance(m, ToolResultMessage)]


async def test_reread_after_a_restart_gets_the_stub_while_the_content_is_in_view(
    tmp_path: Path, faux: FauxProvider
) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    (project / "notes.txt").write_text("alpha\nbeta\ngamma\n" * 50)
    faux.queue(tool_call("read", {"path": "notes.txt"}), text("read it"))
    store = SessionStore.create(project, home=home)
    first = session(project, home, faux, store)
    await first.prompt("read notes.txt")
    assert "alpha" in results(first)[-1].text()
    first._recorder.close()
    store.close()

    # a new process: the earlier read is in the view it derives from the file
    faux.queue(tool_call("read", {"path": "notes.txt"}), text("same as before"))
    assert store.path is not None
    resumed = session(project, home, faux, SessionStore.open(store.path))
    await resumed.prompt("read it again")
    assert results(resumed)[-1].text().startswith(UNCHANGED)

    # the file changes: the content again
    (project / "notes.txt").write_text("changed\n")
    faux.queue(tool_call("read", {"path": "notes.txt"}), text("it changed"))
    await resumed.prompt("and once more")
    assert results(resumed)[-1].text().startswith("changed")


async def test_reread_after_the_content_was_pruned_gets_the_content(tmp_path: Path, faux: FauxProvider) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    (project / "big.txt").write_text("".join(f"line {i} of a file worth pruning\n" for i in range(400)))
    store = SessionStore.create(project, home=home)
    s = session(project, home, faux, store)
    faux.queue(tool_call("read", {"path": "big.txt"}), text("read"))
    await s.prompt("read big.txt")
    read_id = results(s)[-1].tool_call_id
    s.policy.pruner.prune(s.messages, 0, keep_turns=0)  # what a pruning step records
    assert read_id in s.policy.decisions.stubs
    s._recorder.close()
    store.close()
    assert store.path is not None
    resumed = session(project, home, faux, SessionStore.open(store.path))
    faux.queue(tool_call("read", {"path": "big.txt"}), text("read again"))
    await resumed.prompt("read big.txt again")
    again = results(resumed)[-1].text()
    assert not again.startswith(UNCHANGED) and "line 0 of a file worth pruning" in again
