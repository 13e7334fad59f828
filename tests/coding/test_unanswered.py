"""An unanswered prompt in the runtime (heron.coding.unanswered), with the faux provider:
the note before a new prompt and the re-send from the parent send what a process that
reopens the session sends, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from heron.ai.providers.faux import FauxProvider, serialise_request, text
from heron.ai.types import TextContent, UserMessage
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.coding.unanswered import NOTE_TEXT, UNANSWERED_TYPE, note_unanswered, resend_unanswered
from heron.context.records.ledger import LEDGER_CUSTOM_TYPE
from heron.session.entries import CustomEntry, MessageEntry
from heron.session.store import SessionStore


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    proj = tmp_path / "proj"
    proj.mkdir()
    return proj


def open_session(project: Path, faux: FauxProvider, path: Path) -> CodingSession:
    store = SessionStore.open(path)
    return CodingSession(cwd=project, model=faux.model(), store=store, settings=settings_from_dict({}))


def killed_session(project: Path, faux: FauxProvider) -> Path:
    """A session whose process died waiting for its first answer: the prompt, no answer."""
    store = SessionStore.create(project)
    s = CodingSession(cwd=project, model=faux.model(), store=store, settings=settings_from_dict({}))
    s.agent.state.messages.append(UserMessage(content=[TextContent(text="first question")]))
    s.store.append_message(s.agent.state.messages[-1])
    assert store.path is not None and store.path.exists()
    path = store.path
    store.close()
    return path


def user_texts(faux: FauxProvider) -> list[str]:
    return [m.text() for m in faux.requests[-1].messages if isinstance(m, UserMessage)]


async def test_a_new_prompt_is_sent_after_a_note_and_a_resumed_process_sends_the_same(
    project: Path, faux: FauxProvider
) -> None:
    path = killed_session(project, faux)
    s = open_session(project, faux, path)
    faux.queue(text("answer two"), text("answer three"))
    await s.prompt("second question")
    assert user_texts(faux) == ["first question", NOTE_TEXT, "second question"]
    assert note_unanswered(s) is None  # answered now: no second note
    await s.prompt("third question")
    one_process = serialise_request(faux.requests[-1])
    assert [r.kind for r in s.ledger.records if r.kind == "unanswered"] == ["unanswered"]
    s.store.close()

    # the same last turn from a process that reopens the file: byte-identical request
    reopened = SessionStore.open(path)
    leaf = reopened.path_ids()[-3]  # before the third prompt and its answer
    reopened.branch(leaf)
    again = CodingSession(cwd=project, model=faux.model(), store=reopened, settings=settings_from_dict({}))
    faux.queue(text("answer three"))
    await again.prompt("third question")
    assert serialise_request(faux.requests[-1]) == one_process
    entries = reopened.path_to()
    notes = [e for e in entries if isinstance(e, MessageEntry) and e.message.role == "custom"]
    assert len(notes) == 1 and getattr(notes[0].message, "custom_type", None) == UNANSWERED_TYPE
    records = [e for e in entries if isinstance(e, CustomEntry) and e.custom_type == LEDGER_CUSTOM_TYPE]
    assert [r.data["kind"] for r in records if r.data.get("kind") == "unanswered"] == ["unanswered"]
    reopened.close()


async def test_the_re_send_continues_from_the_parent(project: Path, faux: FauxProvider) -> None:
    path = killed_session(project, faux)
    s = open_session(project, faux, path)
    unanswered_id = s.store.leaf_id
    faux.queue(text("the answer"))
    await resend_unanswered(s)
    assert user_texts(faux) == ["first question"]  # once
    prompts = [e for e in s.store.entries() if isinstance(e, MessageEntry) and e.message.role == "user"]
    assert [p.id for p in prompts] == [unanswered_id, prompts[1].id]
    path_ids = s.store.path_ids()
    # continued from the unanswered entry's parent (here: before the first entry), so the
    # unanswered copy is off the path; the answer follows the re-sent copy
    assert unanswered_id not in path_ids and path_ids[-2] == prompts[1].id
    assert [m.role for m in s.store.build_context().messages] == ["user", "assistant"]
    assert await resend_unanswered(s) is None  # nothing left to send again
    s.store.close()
