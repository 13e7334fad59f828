"""The memory reflection pass on a scripted model: it merges duplicates and removes a note
the session contradicted as one revertible commit; it never holds up a turn; one that fails
or hangs is dropped (its writes put back) with a ledger record."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from heron.ai.providers.faux import FauxProvider, FauxReply, error, text, tool_call
from heron.ai.types import Context, ToolResultMessage, UserMessage
from heron.coding import memory_reflect
from heron.coding.memory_history import MemoryHistory
from heron.coding.runtime import CodingSession
from heron.context.compaction.summary.summary_text import is_summary_request
from heron.session.store import SessionStore

INDEX = "# Memory\n- [build](build-1.md)\n- [build again](build-2.md)\n- [tests](tests.md)\n"
MERGED_INDEX = "# Memory\n- [build](build-1.md)\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HERON_HOME", str(path))
    return path


def make_memory(project: Path, home: Path, reflect: str = "end", **more: Any) -> Path:
    memory = project / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text(INDEX)
    (memory / "build-1.md").write_text("Build with `make build`.\n")
    (memory / "build-2.md").write_text("To build, run make build.\n")
    (memory / "tests.md").write_text("The tests run with nose.\n")
    settings = {"memory": {"directory": str(memory), "reflect": reflect}, **more}
    (home / "settings.json").write_text(json.dumps(settings))
    return memory


class Reflector:
    """Main turns say the tests moved to pytest; the reflection merges and removes."""

    def __init__(self, memory: Path) -> None:
        self.memory = memory
        self.steps = [
            tool_call("write", {"path": str(memory / "build-1.md"), "content": "Build with `make build`.\n"}),
            tool_call("write", {"path": str(memory / "build-2.md"), "content": ""}),
            tool_call("write", {"path": str(memory / "tests.md"), "content": ""}),
            tool_call("write", {"path": str(memory / "MEMORY.md"), "content": MERGED_INDEX}),
            text("Merged the build notes; the nose note was contradicted.\nCONFIRMED: build-1.md"),
        ]
        self.reflections = 0

    def __call__(self, context: Context) -> FauxReply:
        if self._reflecting(context):
            if isinstance(context.messages[-1], UserMessage):
                self.reflections += 1
            return self.steps.pop(0)
        if isinstance(context.messages[-1], ToolResultMessage):
            return text("Done.")
        return text("Noted: the tests run with pytest now, not nose.")

    @staticmethod
    def _reflecting(context: Context) -> bool:
        return any(isinstance(m, UserMessage) and "[heron: memory reflection]" in m.text() for m in context.messages)


def session_for(project: Path, home: Path, faux: FauxProvider) -> CodingSession:
    return CodingSession(cwd=project, model=faux.model(), store=SessionStore.create(project, home=home), home=home)


async def test_reflection_merges_and_removes_in_one_revertible_commit(
    tmp_path: Path, home: Path, faux: FauxProvider
) -> None:
    project = tmp_path / "proj"
    memory = make_memory(project, home)
    model = Reflector(memory)
    faux.set_fallback(model)
    session = session_for(project, home, faux)
    await session.prompt("we moved the tests from nose to pytest")
    reply, failed = await memory_reflect.reflect(session, "command")
    assert not failed and model.reflections == 1, reply
    assert sorted(p.name for p in memory.iterdir()) == ["MEMORY.md", "build-1.md"]
    assert (memory / "MEMORY.md").read_text() == MERGED_INDEX
    history = MemoryHistory(memory, home)
    changes = history.log()
    assert [c.reason for c in changes] == ["reflection", "outside heron"]  # one commit for the whole pass
    assert set(changes[0].files) == {"MEMORY.md", "build-2.md", "tests.md"}
    record = [r.detail for r in session.ledger.records if r.kind == "memory" and r.detail.get("reflection")]
    assert record and record[0]["confirmed"] == ["build-1.md"] and not record[0].get("dropped")
    # the next session sees build-1.md as confirmed now
    fresh = session_for(project, home, faux)
    assert "- build-1.md: " in fresh.system_prompt
    history.revert(changes[0].commit)
    assert (memory / "tests.md").read_text() == "The tests run with nose.\n"
    assert (memory / "MEMORY.md").read_text() == INDEX


async def test_the_end_pass_runs_after_the_answer_when_memory_changed(
    tmp_path: Path, home: Path, faux: FauxProvider
) -> None:
    project = tmp_path / "proj"
    memory = make_memory(project, home)
    model = Reflector(memory)
    faux.set_fallback(model)
    faux.queue(tool_call("write", {"path": str(memory / "ci.md"), "content": "CI runs pytest\n"}))
    session = session_for(project, home, faux)
    await session.prompt("note that CI runs pytest")
    assert model.reflections == 0  # the turn ended without waiting for a reflection
    await session.context_owner.finish_background()  # the process ends
    assert model.reflections == 1
    assert MemoryHistory(memory, home).log()[0].reason == "reflection"


async def test_a_reflection_never_holds_up_a_turn_and_one_that_hangs_is_dropped(
    tmp_path: Path, home: Path, faux: FauxProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "proj"
    memory = make_memory(project, home, reflect="compaction")
    release = asyncio.Event()

    async def hanging(session: Any, view: Any, prompt: str, tokens: int) -> Any:
        (memory / "half.md").write_text("half a thought\n")
        (memory / "tests.md").write_text("")
        await release.wait()  # never set: a model that does not answer
        raise AssertionError("unreachable")

    monkeypatch.setattr(memory_reflect, "_run", hanging)
    monkeypatch.setattr(memory_reflect, "REFLECT_TIMEOUT_S", 1.0)
    faux.set_fallback(lambda context: text("An answer."))
    session = session_for(project, home, faux)
    task = session.control.memory_watch.start_reflection("compaction")
    assert task is not None
    await session.prompt("a turn while the reflection runs")  # answered, the reflection still waiting
    assert not task.done()
    reply, failed = await task
    assert failed and "no answer within" in reply
    assert sorted(p.name for p in memory.iterdir()) == ["MEMORY.md", "build-1.md", "build-2.md", "tests.md"]
    assert (memory / "tests.md").read_text() == "The tests run with nose.\n"  # its writes put back
    dropped = [r for r in session.ledger.records if r.kind == "memory" and r.detail.get("dropped")]
    assert dropped and "no answer within" in dropped[0].recover
    assert all(c.reason != "reflection" for c in MemoryHistory(memory, home).log())


async def test_a_reflection_that_fails_is_dropped_with_its_writes_put_back(
    tmp_path: Path, home: Path, faux: FauxProvider
) -> None:
    project = tmp_path / "proj"
    memory = make_memory(project, home)
    faux.queue(
        tool_call("write", {"path": str(memory / "tests.md"), "content": ""}),
        error("the server is broken", status=400),
    )
    session = session_for(project, home, faux)
    reply, failed = await memory_reflect.reflect(session, "command")
    assert failed and "dropped" in reply
    assert (memory / "tests.md").read_text() == "The tests run with nose.\n"
    assert any(r.detail.get("dropped") for r in session.ledger.records if r.kind == "memory")


async def test_the_compaction_setting_starts_a_pass_after_each_compaction(
    tmp_path: Path, home: Path, faux: FauxProvider
) -> None:
    project = tmp_path / "proj"
    memory = make_memory(project, home, reflect="compaction", compaction={"keepRecentTokens": 200})
    model = Reflector(memory)

    def reply(context: Context) -> FauxReply:
        if is_summary_request(context):
            return text("## Goal\nKeep the memory true.")
        return model(context)

    faux.set_fallback(reply)
    session = session_for(project, home, faux)
    for n in range(3):
        await session.prompt(f"turn {n}: the tests moved to pytest " + "x" * 4_000)
    end = await session.context_owner.compact(None, "manual")
    assert end.entry_id is not None and model.reflections == 0, end  # started beside, not inside, the compaction
    await session.context_owner.finish_background()
    assert model.reflections == 1 and not (memory / "tests.md").exists()
