"""Project memory's history: a commit per change naming the session, review commands, and
the bad inputs (a user's repository, a detached HEAD, a corrupted history, a history that
cannot be written, a 10 MB MEMORY.md) - each a clear message, nothing lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from heron.ai.providers.faux import FauxProvider, FauxReply, error, text, tool_call
from heron.ai.types import Context, ToolResultMessage, UserMessage
from heron.coding.memory import FLUSH_PROMPT, INDEX_FILE, memory_dir
from heron.coding.memory_history import HISTORY_DIR, MemoryHistory
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.context.compaction.summary.summary_text import is_summary_request
from heron.session.entries import CompactionEntry, CustomEntry
from heron.session.store import SessionStore

FLUSH_START = FLUSH_PROMPT.split("\n", 1)[0]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def heron_memory(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HERON_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "heron.cli.main", "memory", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def local_memory(project: Path, home: Path) -> Path:
    """A memory directory inside the project (the user's settings say so): an ordinary turn
    writes there without asking (the default one lies in heron's home, where a write asks)."""
    memory = project / "memory"
    memory.mkdir()
    (home / "settings.json").write_text(json.dumps({"memory": {"directory": str(memory)}}))
    return memory


def memory_records(session: CodingSession) -> list[dict[str, Any]]:
    return [{"recover": r.recover, **r.detail} for r in session.ledger.records if r.kind == "memory"]


class FlushingModel:
    """Main turns from a list; each flush writes its own note and the index."""

    def __init__(self, turns: list[FauxReply], memory: Path) -> None:
        self.turns, self.memory, self.flushes = turns, memory, 0

    def __call__(self, context: Context) -> FauxReply:
        if is_summary_request(context):
            return text("<summary>## Goal\nKeep going.</summary>")
        last = context.messages[-1]
        if isinstance(last, UserMessage) and last.text().startswith(FLUSH_START):
            self.flushes += 1
            note = f"- [note {self.flushes}](note-{self.flushes}.md)\n"
            return tool_call("write", {"path": str(self.memory / f"note-{self.flushes}.md"), "content": note})
        if isinstance(last, ToolResultMessage) and any(
            isinstance(m, UserMessage) and m.text().startswith(FLUSH_START) for m in context.messages
        ):
            return text("Saved.")
        return self.turns.pop(0)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HERON_HOME", str(path))
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


async def test_each_flush_of_a_16k_session_is_a_commit_naming_the_session(
    project: Path, home: Path, faux: FauxProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERON_MEMORY_FLUSH", "1")
    memory = memory_dir(home, project)
    long = "Thinking it through carefully, step by step, with all the details. " * 120  # ~8k chars
    model = FlushingModel([text(f"Answer {n}. {long}") for n in range(14)], memory)
    faux.set_fallback(model)
    store = SessionStore.create(project, home=home)
    session = CodingSession(
        cwd=project,
        model=faux.model(context_window=16_384, max_tokens=2_048),
        store=store,
        home=home,
        settings=settings_from_dict({"continuity": {"recentSteps": 0}}),
    )
    for n in range(14):
        await session.prompt(f"go on, part {n}")
    compactions = [e for e in store.entries() if isinstance(e, CompactionEntry)]
    assert len(compactions) >= 3 and model.flushes == len(compactions)

    done = heron_memory(project, home, "log", "--json")
    assert done.returncode == 0, done.stderr
    log = json.loads(done.stdout)
    assert [c["reason"] for c in log] == ["flush"] * model.flushes
    assert {c["session"] for c in log} == {store.session_id}
    assert [c["files"] for c in reversed(log)] == [[f"note-{n}.md"] for n in range(1, model.flushes + 1)]
    assert all(c["date"].endswith("Z") and c["entry"] for c in log)
    assert len(memory_records(session)) == model.flushes  # each commit is in the ledger too

    second = log[-2]["commit"]  # the second flush's note
    done = heron_memory(project, home, "revert", second[:10])
    assert done.returncode == 0, done.stderr
    assert not (memory / "note-2.md").exists() and (memory / "note-1.md").exists()
    after = json.loads(heron_memory(project, home, "log", "--json").stdout)
    assert after[0]["reason"] == "revert" and after[0]["reverts"] == second and after[0]["files"] == ["note-2.md"]
    shown = heron_memory(project, home, "show", after[0]["commit"][:10])
    assert shown.returncode == 0 and "-- [note 2](note-2.md)" in shown.stdout
    # the revert is itself revertible: the note comes back
    assert heron_memory(project, home, "revert", after[0]["commit"]).returncode == 0
    assert (memory / "note-2.md").read_text() == "- [note 2](note-2.md)\n"


async def test_a_tool_call_write_is_committed_after_the_outside_changes(
    project: Path, home: Path, faux: FauxProvider
) -> None:
    memory = local_memory(project, home)
    (memory / INDEX_FILE).write_text("# Memory\n- written by hand\n")  # before heron kept history
    faux.queue(tool_call("write", {"path": str(memory / "build.md"), "content": "make build\n"}), text("Noted."))
    store = SessionStore.create(project, home=home)
    session = CodingSession(cwd=project, model=faux.model(), store=store, home=home)
    await session.prompt("remember how to build")

    changes = MemoryHistory(memory, home).log()
    assert [(c.reason, c.files) for c in changes] == [("tool call", ("build.md",)), ("outside heron", ("MEMORY.md",))]
    assert changes[0].session == store.session_id and store.get(changes[0].entry) is not None
    # the session's report shows both changes on its timeline (ledger markers of kind memory)
    from heron.coding.report.data import collect

    markers = [m for m in collect(store).markers if m.kind == "memory"]
    assert len(markers) == 2 and any("build.md" in json.dumps(m.detail) for m in markers)
    # the next session's prompt names both notes with their date
    fresh = CodingSession(cwd=project, model=faux.model(), store=SessionStore.create(project, home=home), home=home)
    assert "- build.md: " in fresh.system_prompt and "- MEMORY.md: " in fresh.system_prompt
    # diff: the notes now against a change, new files named
    (memory / "later.md").write_text("later\n")
    done = heron_memory(project, home, "diff", changes[1].commit[:10])
    assert done.returncode == 0 and "+make build" in done.stdout and "later.md" in done.stdout


async def test_a_user_repository_as_memory_directory_is_never_touched(
    project: Path, home: Path, faux: FauxProvider
) -> None:
    """The memory directory is a repository of the user's on a detached HEAD: heron's
    history sits beside it; the user's HEAD, refs, index and status are as they were."""
    memory = project / "notes"
    memory.mkdir()
    git(memory, "init", "-q")
    (memory / INDEX_FILE).write_text("# Memory\n")
    git(memory, "add", "-A")
    git(memory, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "mine")
    git(memory, "checkout", "-q", "--detach")
    before = (git(memory, "rev-parse", "HEAD"), git(memory, "show-ref"), git(memory, "status", "--porcelain"))
    index = (memory / ".git" / "index").read_bytes()
    faux.queue(tool_call("write", {"path": str(memory / "x.md"), "content": "x\n"}), text("Noted."))
    settings = settings_from_dict({"memory": {"directory": str(memory)}})
    session = CodingSession(
        cwd=project, model=faux.model(), store=SessionStore.create(project, home=home), home=home, settings=settings
    )
    await session.prompt("note it")
    assert (git(memory, "rev-parse", "HEAD"), git(memory, "show-ref")) == before[:2]
    assert git(memory, "status", "--porcelain") == "?? x.md\n"  # the new note, untracked: the user's to add
    assert (memory / ".git" / "index").read_bytes() == index
    records = memory_records(session)
    assert any("git repository of yours" in r["recover"] for r in records)
    assert [c.files for c in MemoryHistory(memory, home).log()] == [("x.md",), ("MEMORY.md",)]


def test_a_detached_or_corrupted_history_is_repaired_without_loss(tmp_path: Path, home: Path) -> None:
    memory = tmp_path / "mem"
    memory.mkdir()
    history = MemoryHistory(memory, home)
    (memory / "a.md").write_text("a\n")
    first = history.commit("tool call", session="s1")
    (memory / "b.md").write_text("b\n")
    assert first is not None and history.commit("tool call", session="s1") is not None
    env = {**os.environ, "GIT_DIR": str(history.git_dir)}
    subprocess.run(["git", "update-ref", "--no-deref", "HEAD", first.commit], env=env, cwd=memory, check=True)

    again = MemoryHistory(memory, home)  # a new process
    (memory / "c.md").write_text("c\n")
    assert again.commit("tool call", session="s2") is not None
    assert "detached HEAD" in again.take_notices()[0]
    assert len(again.log()) == 3

    (again.git_dir / "HEAD").write_text("garbage\n")  # corrupted
    third = MemoryHistory(memory, home)
    (memory / "d.md").write_text("d\n")
    change = third.commit("tool call", session="s3")
    notice = third.take_notices()[0]
    assert "could not be read" in notice and "Your notes are untouched" in notice
    assert change is not None and set(change.files) == {"a.md", "b.md", "c.md", "d.md"}
    aside = [p for p in (home / HISTORY_DIR).iterdir() if ".broken-" in p.name]
    assert len(aside) == 1 and (aside[0] / "objects").is_dir()  # the old history kept, not deleted
    assert sorted(p.name for p in memory.iterdir()) == ["a.md", "b.md", "c.md", "d.md"]


async def test_a_history_that_cannot_be_written_leaves_the_session_unaffected(
    project: Path, home: Path, faux: FauxProvider
) -> None:
    memory = local_memory(project, home)
    (home / HISTORY_DIR).write_text("in the way\n")  # no directory can be made there
    faux.queue(tool_call("write", {"path": str(memory / "n.md"), "content": "n\n"}), text("Noted."))
    session = CodingSession(cwd=project, model=faux.model(), store=SessionStore.create(project, home=home), home=home)
    added = await session.prompt("note it")
    assert added[-1].text() == "Noted."  # type: ignore[union-attr]
    assert (memory / "n.md").read_text() == "n\n"
    failed = [r for r in memory_records(session) if r.get("failed")]
    assert failed and str(home / HISTORY_DIR) in failed[0]["recover"]
    done = heron_memory(project, home, "log")
    assert done.returncode == 0 and "no memory changes" in done.stdout


async def test_a_flush_into_a_memory_directory_that_cannot_be_written_is_told_why(
    project: Path, home: Path, faux: FauxProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A memory directory heron may not change (immutable, a read-only mount: its mode cannot
    be set): the flush's write is refused with the reason (not as a failed hook), the notes
    stay as they were, the session goes on."""
    monkeypatch.setenv("HERON_MEMORY_FLUSH", "1")
    memory = project / "memory"
    memory.mkdir()
    (memory / INDEX_FILE).write_text("# Memory\n")

    def refused(path: Path, **_: Any) -> None:
        raise PermissionError(1, "Operation not permitted", str(path))

    monkeypatch.setattr("heron.coding.memory.private_dir", refused)
    results: list[str] = []

    def model(context: Context) -> FauxReply:
        if is_summary_request(context):
            return text("<summary>## Goal\nKeep going.</summary>")
        last = context.messages[-1]
        if isinstance(last, UserMessage) and last.text().startswith(FLUSH_START):
            return tool_call("write", {"path": str(memory / "n.md"), "content": "n\n"})
        if isinstance(last, ToolResultMessage):
            results.append(last.text())
            return text("Could not save.")
        return text("Answer. " + "Thinking it through, step by step. " * 230)

    faux.set_fallback(model)
    settings = settings_from_dict({"memory": {"directory": str(memory)}, "continuity": {"recentSteps": 0}})
    store = SessionStore.create(project, home=home)
    session = CodingSession(
        cwd=project,
        model=faux.model(context_window=16_384, max_tokens=2_048),
        store=store,
        home=home,
        settings=settings,
    )
    for n in range(8):
        await session.prompt(f"go on, part {n}")
    assert any(isinstance(e, CompactionEntry) for e in store.entries())
    assert results and all(r.startswith(f"The memory directory {memory} cannot be written (") for r in results)
    assert [p.name for p in memory.iterdir()] == [INDEX_FILE] and (memory / INDEX_FILE).read_text() == "# Memory\n"


async def test_a_10_mb_index_is_cut_for_the_prompt_and_kept_out_of_history(
    project: Path, home: Path, faux: FauxProvider
) -> None:
    memory = local_memory(project, home)
    line = "- a note that goes on and on about the build, the tests and the release\n"
    big = "# Memory\n" + line * (10 * 1024 * 1024 // len(line))
    (memory / INDEX_FILE).write_text(big)
    faux.queue(tool_call("write", {"path": str(memory / "small.md"), "content": "s\n"}), text("Noted."))
    session = CodingSession(cwd=project, model=faux.model(), store=SessionStore.create(project, home=home), home=home)
    assert len(session.system_prompt) < 40_000 and session.memory.text.count("\n") == 199
    await session.prompt("note it")
    assert (memory / INDEX_FILE).read_text() == big  # nothing lost
    records = memory_records(session)
    assert any("over 2 MB" in r["recover"] and INDEX_FILE in r["recover"] for r in records)
    assert [c.files for c in MemoryHistory(memory, home).log()] == [("small.md",)]


async def test_a_secret_never_enters_memory_or_its_history(
    project: Path, home: Path, faux: FauxProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    from heron.coding.secrets import REDACTOR

    key = "sk-memory-secret-0123456789abcdef"
    REDACTOR.add([key])  # a key heron uses (values are only ever added)
    memory = local_memory(project, home)
    (memory / "keys.md").write_text(f"the key is {key}\n")  # written outside heron
    faux.queue(tool_call("write", {"path": str(memory / "n.md"), "content": "n\n"}), text("Noted."))
    session = CodingSession(cwd=project, model=faux.model(), store=SessionStore.create(project, home=home), home=home)
    await session.prompt("note it")
    assert key not in (memory / "keys.md").read_text()
    history = MemoryHistory(memory, home)
    assert all(key not in history.show(c.commit) for c in history.log())


def custom(store: SessionStore, kind: str) -> list[Any]:
    return [e.data for e in store.entries() if isinstance(e, CustomEntry) and e.custom_type == kind]


async def test_a_note_from_a_turn_that_ended_in_an_error_is_tentative_until_confirmed(
    project: Path, home: Path, faux: FauxProvider
) -> None:
    memory = local_memory(project, home)
    faux.queue(
        tool_call("write", {"path": str(memory / "guess.md"), "content": "the flaky test is a race\n"}),
        error("the request is invalid", status=400),
    )
    session = CodingSession(cwd=project, model=faux.model(), store=SessionStore.create(project, home=home), home=home)
    await session.prompt("why is the test flaky?")
    fresh = CodingSession(cwd=project, model=faux.model(), store=SessionStore.create(project, home=home), home=home)
    assert "- guess.md: " in fresh.system_prompt
    assert fresh.system_prompt.split("- guess.md: ")[1].split("\n")[0].endswith(", tentative")
    # a later successful turn that writes it again confirms it
    faux.queue(tool_call("write", {"path": str(memory / "guess.md"), "content": "the flaky test is a race (seen)\n"}))
    faux.queue(text("Confirmed."))
    await fresh.prompt("confirm it")
    later = CodingSession(cwd=project, model=faux.model(), store=SessionStore.create(project, home=home), home=home)
    assert "tentative" not in later.system_prompt.split("- guess.md: ")[1].split("\n")[0]


def test_a_revert_that_conflicts_with_later_changes_changes_nothing(tmp_path: Path, home: Path) -> None:
    from heron.coding.memory_history import MemoryHistoryError

    memory = tmp_path / "mem"
    memory.mkdir()
    history = MemoryHistory(memory, home)
    (memory / "a.md").write_text("line 1\n")
    history.commit("tool call", session="s1")
    (memory / "a.md").write_text("line 2\n")
    second = history.commit("tool call", session="s1")
    assert second is not None
    (memory / "a.md").write_text("line 3\n")  # a later change to the same line, outside heron
    with pytest.raises(MemoryHistoryError, match="later changes touch the same lines") as raised:
        history.revert(second.commit[:10])
    assert "nothing changed" in str(raised.value) and "hint:" not in str(raised.value)
    assert (memory / "a.md").read_text() == "line 3\n"
    assert [c.reason for c in history.log()] == ["outside heron", "tool call", "tool call"]
    status = subprocess.run(
        ["git", "--git-dir", str(history.git_dir), "--work-tree", str(memory), "status", "--porcelain"],
        capture_output=True,
        text=True,
    )
    assert status.stdout == ""  # no revert left half done
